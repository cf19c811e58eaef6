"""No unpacker outlives its collector by more than ``shutdown_timeout``, whatever the database's
state and however the collector ends; a new collector stops one an earlier collector left.

Before the fix, an unpacker whose entries could not be stored (a poison entry, a database down
while the service stopped) kept retrying for ever with parent PID 1, beside the next service.

The store is made unable to write by holding its write lock (SQLite) or a lock on its spans
table (PostgreSQL), or by stopping the server (a throwaway PostgreSQL cluster): the unpacker's
writes then block or fail, as in an outage.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text as sql_text

from tests.support.agent_otlp import AgentTrace, agent_trace, export_request
from tests.support.journal import trace_request, unpacker_owner
from tests.support.server_process import ServerProcess, start_server, wait_for
from tests.support.throwaway_pg import ThrowawayPostgres
from tracescore.helper_processes import EXIT_GRACE_SECONDS, stop_leftovers
from tracescore.ingest.unpack import Unpacker, UnpackSettings
from tracescore.store import SpanStore, open_store

_MARK = b"tracescore.ingest.unpack"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, timeout: float) -> float:
    """Seconds until ``pid`` is gone; fails the test after ``timeout``."""
    start = time.monotonic()
    wait_for(lambda: not _alive(pid), timeout, f"process {pid} gone", every=0.05)
    return time.monotonic() - start


def _unpackers_of(parent: int) -> list[int]:
    found = []
    for directory in Path("/proc").iterdir():
        if directory.name.isdigit():
            try:
                ppid = int((directory / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == parent and _MARK in (directory / "cmdline").read_bytes():
                    found.append(int(directory.name))
            except (OSError, IndexError):
                continue
    return found


@contextmanager
def _writes_blocked(store: SpanStore) -> Iterator[None]:
    """Every other writer of spans waits, as on a stuck database: SQLite's write lock held; on
    PostgreSQL the spans table locked against writes (reads and the journal go on)."""
    with store.write_transaction() as connection:
        if store.dialect == "postgresql":
            connection.execute(sql_text("LOCK TABLE spans IN SHARE MODE"))
        yield


_COLLECTOR = """
import sys, time
from tracescore.ingest.unpack import Unpacker, UnpackSettings
unpacker = Unpacker(UnpackSettings(sys.argv[1], "gone", shutdown_timeout=float(sys.argv[2]), idle_poll=0.1))
unpacker.start()
unpacker.notify()
print(unpacker.pid, flush=True)
time.sleep(600)
"""
"""A collector in miniature: starts an unpacker for owner ``gone`` and wakes it, as a collector
does for each entry it journals (the test journals them), then waits to be killed. Never woken,
an unpacker still importing when its collector dies has nothing to finish and exits at once."""


@contextmanager
def _collector(url: str, shutdown_timeout: float) -> Iterator[tuple[subprocess.Popen[str], int]]:
    process = subprocess.Popen(
        [sys.executable, "-c", _COLLECTOR, url, str(shutdown_timeout)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield process, int(process.stdout.readline())
    finally:
        process.kill()
        process.wait()


def test_a_stopped_unpacker_that_cannot_store_exits_at_its_deadline_and_the_next_one_stores(
    sqlite_url: str,
) -> None:
    store = open_store(sqlite_url)
    unpacker = Unpacker(
        UnpackSettings(sqlite_url, "collector", shutdown_timeout=1.5, idle_poll=0.1)
    )
    try:
        with _writes_blocked(store):
            unpacker.start()
            for n in range(1, 4):
                store.journal.append("traces", trace_request(f"{n:032x}"), "collector")
            unpacker.notify()
            time.sleep(0.3)  # it has taken the entries and waits on the lock
            started = time.monotonic()
            unpacker.stop()
            elapsed = time.monotonic() - started
            assert unpacker.pid is not None and not _alive(unpacker.pid)
        assert elapsed >= 1.0  # it kept trying until its deadline
        assert unpacker.returncode == 0  # and then exited by itself: not terminated or killed
        assert len(store.journal.entries()) == 3  # durable, still waiting
        successor = Unpacker(UnpackSettings(sqlite_url, "collector", idle_poll=0.1))
        successor.start()
        try:
            assert store.journal.settle(timeout=30)
            assert all(store.load_trace(f"{n:032x}") is not None for n in range(1, 4))
        finally:
            successor.stop()
    finally:
        store.close()


@contextmanager
def _orphaned_unpacker(url: str, shutdown_timeout: float) -> Iterator[int]:
    """An unpacker stuck on a write (the store's write lock is held) whose collector has just
    been killed with SIGKILL (no shutdown code runs in it); yields the unpacker's pid."""
    store = open_store(url)
    try:
        with _writes_blocked(store), _collector(url, shutdown_timeout) as (collector, pid):
            store.journal.append("traces", trace_request("1" * 32), "gone")
            time.sleep(0.5)
            collector.kill()
            collector.wait()
            yield pid
    finally:
        store.close()


def test_an_unpacker_whose_collector_is_killed_stops_within_its_deadline(sqlite_url: str) -> None:
    with _orphaned_unpacker(sqlite_url, shutdown_timeout=1.5) as pid:
        # Not before its deadline; after it, within a bound that only catches an unpacker that
        # never stops (3 s of slack was overrun on a loaded machine).
        assert _wait_gone(pid, timeout=1.5 + 10.0) >= 0.9


def test_a_new_collector_stops_an_unpacker_an_earlier_one_left_running(sqlite_url: str) -> None:
    with _orphaned_unpacker(sqlite_url, shutdown_timeout=600) as pid:
        time.sleep(0.5)
        assert _alive(pid)  # a leftover: its collector is gone, its deadline far off
        assert stop_leftovers(sqlite_url, timeout=5) == [pid]
        assert not _alive(pid)
        assert stop_leftovers(sqlite_url, timeout=5) == []


def test_an_unpacker_of_a_live_collector_is_no_leftover(sqlite_url: str) -> None:
    open_store(sqlite_url).close()
    with _collector(sqlite_url, shutdown_timeout=10) as (_collector_process, pid):
        assert stop_leftovers(sqlite_url, timeout=1) == []
        assert _alive(pid)


def _export(server: ServerProcess, traces: list[AgentTrace]) -> None:
    """Export each trace in a request of its own; each must be acknowledged."""
    for trace in traces:
        response = httpx.post(
            f"{server.base_url}/v1/traces",
            content=export_request(trace.spans),
            headers={"Content-Type": "application/x-protobuf"},
            timeout=10,
        )
        assert response.status_code == 200


def _assert_stored(server: ServerProcess, traces: list[AgentTrace]) -> None:
    """Every span of each trace is stored and read back through the API."""
    for trace in traces:
        response = httpx.get(f"{server.base_url}/api/traces/{trace.trace_id}", timeout=15)
        assert response.status_code == 200, server.output()[-2000:]
        assert len(response.json()["spans"]) == len(trace.spans)


@pytest.mark.pg_cluster
def test_a_service_stopped_while_postgresql_is_down_leaves_no_process_and_loses_nothing(
    tmp_path: Path,
) -> None:
    with ThrowawayPostgres() as cluster:
        config = {"server": {"shutdown_timeout": 2.0}}
        traces = [agent_trace(random.Random(n)) for n in range(5)]
        server = start_server(tmp_path / "a", db_url=cluster.url, config=config)
        try:
            [unpacker] = _unpackers_of(server.process.pid)
            _export(server, traces)
            cluster.stop("immediate")
            server.process.send_signal(signal.SIGTERM)
            server.process.wait(2.0 + 10.0)  # raises if the service is still waiting then
            _wait_gone(unpacker, timeout=1.0)
        finally:
            server.kill()
        cluster.start()
        with start_server(tmp_path / "b", db_url=cluster.url, config=config) as restarted:
            _assert_stored(restarted, traces)
        # The outage is one line of the unpacker's, not one per retry.
        assert server.output().count("unpacker: the database is unavailable") <= 1, server.output()[
            -3000:
        ]


def test_the_helpers_of_a_killed_service_stop_within_its_shutdown_timeout(tmp_path: Path) -> None:
    """kill -9 of the service alone (an init system that signals the main process only): its
    unpacker and scoring process see their pipe close and are gone within the deadline, and
    a service started on the same store runs beside no leftover."""
    config = {"server": {"shutdown_timeout": 2.0}, "workers": {"processes": 1}}
    server = start_server(tmp_path / "a", config=config)
    helpers = server.pids()[1:]
    try:
        assert len(helpers) == 2, server.output()  # an unpacker and a scoring process
        server.process.kill()
        server.process.wait()
        for pid in helpers:
            _wait_gone(pid, timeout=2.0 + 3.0)
    finally:
        server.kill()
    with start_server(tmp_path / "a", config=config) as restarted:
        assert len(restarted.pids()) == 3
        assert "left running by an earlier service" not in restarted.output()


def test_a_service_stopped_by_ctrl_c_with_a_poison_entry_and_stuck_writes_leaves_no_process(
    db_url: str, tmp_path: Path
) -> None:
    """Ctrl-C (SIGINT to every process of the group) while the journal holds a poison entry and
    the database takes no span writes: the service, its unpacker and its scoring process are
    gone within the deadline, and the next start stores every acknowledged span and sets the
    poison entry aside. Before, such an unpacker retried its group for ever with parent PID 1."""
    config = {"server": {"shutdown_timeout": 2.0}, "workers": {"processes": 1}}
    traces = [agent_trace(random.Random(n)) for n in range(3)]
    server = start_server(tmp_path / "a", db_url=db_url, config=config)
    store = open_store(db_url, create=False)
    try:
        owner, helpers = unpacker_owner(store), server.pids()[1:]
        assert len(helpers) == 2, server.output()  # an unpacker and a scoring process
        with _writes_blocked(store):
            poison = store.journal.append("traces", b"\xff\xff not protobuf", owner)
            _export(server, traces)
            for pid in server.pids():
                os.kill(pid, signal.SIGINT)
            # The service waits for its helpers up to the deadline, then ends; if a call of its
            # own is stuck on the database (SQLite here: the promoter waits for the write lock),
            # at the deadline and the helpers' grace, with status 1.
            assert server.process.wait(2.0 + EXIT_GRACE_SECONDS + 3.0) in (0, 1), server.output()[
                -3000:
            ]
            for pid in helpers:
                _wait_gone(pid, timeout=1.0)
        assert store.journal.entries(), (
            "nothing was left for the next start: the test proves nothing"
        )
        with start_server(tmp_path / "b", db_url=db_url, config=config) as restarted:
            _assert_stored(restarted, traces)
            quarantined = httpx.get(
                f"{restarted.base_url}/api/ingest/quarantine", timeout=10
            ).json()["entries"]
            assert [entry["seq"] for entry in quarantined] == [poison.seq]
        assert "left running by an earlier service" not in restarted.output()
        assert "Traceback" not in server.output(), server.output()[
            -3000:
        ]  # no child cut short by Ctrl-C
    finally:
        server.kill()
        store.close()
