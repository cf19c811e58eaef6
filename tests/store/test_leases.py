"""Leases pass on when they run out, and at once when their holder is a process of this machine
that has ended (a service killed and restarted), never while it runs or when it cannot be told."""

from __future__ import annotations

import socket
import time

from tests.support.owners import ended_owner
from tracescore.owners import has_ended, owner_id
from tracescore.store import open_store
from tracescore.store.leases import acquire_lease


def test_an_owner_id_tells_whether_its_process_has_ended() -> None:
    ours = owner_id()
    assert ours != owner_id()  # holders within one process are told apart
    assert not has_ended(ours)
    gone = ended_owner()
    assert gone.split(":")[0] == socket.gethostname()
    assert has_ended(gone)
    host, pid, started, namespace, suffix = gone.split(":")
    # What cannot be checked is never taken for ended: another host, another PID namespace,
    # an id of an older release (host:pid:random), text that is no id.
    assert not has_ended(":".join(["elsewhere", pid, started, namespace, suffix]))
    assert not has_ended(":".join([host, pid, started, "1", suffix]))
    assert not has_ended(f"{host}:{pid}:{suffix}")
    assert not has_ended("an instance id a user configured")
    # A pid reused by another process is not the holder: its start time differs.
    _, own_pid, _, _, _ = ours.split(":")
    assert has_ended(":".join([host, own_pid, "1", namespace, suffix]))


def test_a_lease_of_an_ended_process_is_taken_at_once_and_a_live_ones_is_not(
    db_url: str,
) -> None:
    store = open_store(db_url)
    now = time.time()
    try:
        live, gone, taker = owner_id(), ended_owner(), owner_id()
        with store.write_transaction() as connection:
            assert acquire_lease(connection, live, now, 60, "held")
            assert acquire_lease(connection, gone, now, 60, "orphaned")
            assert acquire_lease(connection, "elsewhere:1:2:3:4", now, 60, "remote")
        with store.write_transaction() as connection:
            assert not acquire_lease(connection, taker, now + 1, 60, "held")
            assert acquire_lease(connection, taker, now + 1, 60, "orphaned")
            assert not acquire_lease(connection, taker, now + 1, 60, "remote")
            assert acquire_lease(connection, taker, now + 61, 60, "remote")  # ran out
            assert acquire_lease(connection, taker, now + 2, 60, "orphaned")  # renewed
    finally:
        store.close()
