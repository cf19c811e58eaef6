"""The insights pass in the service: one replica at a time, once per interval, under the lease
(real SQLite file, two leaders standing for two replicas)."""

from __future__ import annotations

from pathlib import Path

from tests.support.failure_modes import planted_stream, store_runs
from tracescore.insights.config import InsightsConfig
from tracescore.insights.task import LEASE_NAME, RUNNING_LEASE, InsightsLeader
from tracescore.store import connect, open_store
from tracescore.store.insights import current_groups
from tracescore.store.leases import lease_expiry


def test_one_replica_runs_a_pass_per_interval(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'insights.db'}")
    now = [1_800_000_000.0]
    store_runs(store, planted_stream(per_mode=30, noise=10, start=now[0] - 1800, span=900))
    config = InsightsConfig(interval=900, window=3600)
    first = InsightsLeader(store, config, [], "replica-1", clock=lambda: now[0])
    second = InsightsLeader(store, config, [], "replica-2", clock=lambda: now[0])
    # The leaders pass their clock's time to the pass as its end: the runs failed before it.
    result = first.run_once()
    assert result is not None and result.read == 100
    assert second.run_once() is None  # the lease is the schedule: not due yet
    assert first.run_once() is None
    with connect(store.engine) as connection:
        assert len(current_groups(connection)) == result.groups >= 3
    now[0] += 901
    assert second.run_once() is not None  # due again: whichever replica looks first
    store.close()


def test_a_window_with_nothing_failed_starts_no_pass(tmp_path: Path) -> None:
    """Nothing failed and no group current: no pass's process is started (a pass would find
    nothing), yet the schedule moves on as after a pass."""
    store = open_store(f"sqlite:///{tmp_path / 'insights.db'}")
    now = 1_800_000_000.0
    config = InsightsConfig(interval=900, window=3600)
    leader = InsightsLeader(store, config, [], "replica-1", clock=lambda: now)
    assert leader.run_once() is None
    with connect(store.engine) as connection:
        assert lease_expiry(connection, LEASE_NAME) == now + 900
        assert lease_expiry(connection, RUNNING_LEASE) is None  # no pass ran
    store.close()
