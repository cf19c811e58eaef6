"""Retention in a running service: one replica prunes every ``retention.interval``.

The replicas sharing a database agree through the lease alerts use
(:mod:`tracescore.store.leases`), under its own name. The lease doubles as the schedule: after
a pass, its holder extends it to the pass's start plus the interval, so no replica (itself
included) starts another pass before then, and whichever replica polls first once it runs out
takes the next one. During a pass the
holder renews it; a holder that dies mid-pass is replaced once it expires.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from tracescore import metrics
from tracescore.background import BackgroundFactory
from tracescore.backoff import Backoff, repeat
from tracescore.retention.config import RetentionConfig
from tracescore.retention.prune import PassReport, Pruner
from tracescore.store import SpanStore
from tracescore.store.leases import acquire_lease, lease_expiry, release_lease
from tracescore.store.vacuum import reclaim_space

log = logging.getLogger(__name__)

LEASE_NAME = "retention"

MAX_POLL = 60.0
"""Longest wait between two looks at whether a pass is due (a replica taking over a dead
holder's schedule waits this much at most after the lease ran out)."""


class RetentionLeader:
    """Runs a pass when one is due and this replica takes the lease (:meth:`run_once`)."""

    def __init__(
        self,
        store: SpanStore,
        config: RetentionConfig,
        owner: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.config = config
        self.owner = owner
        self.clock = clock
        self.pruner = Pruner(store.write_transaction, config, store.journal.kept)
        self.stopping = threading.Event()
        """Set to end a pass at its next batch (the service is stopping)."""

    def due(self) -> bool:
        """Whether the schedule (the lease's expiry) has run out."""
        with self.store.engine.connect() as connection:
            expires = lease_expiry(connection, LEASE_NAME)
        return expires is None or expires < self.clock()

    def _lease(self, duration: float) -> bool:
        with self.store.write_transaction() as connection:
            return acquire_lease(connection, self.owner, self.clock(), duration, LEASE_NAME)

    def run_once(self) -> PassReport | None:
        """A pass if one is due and the lease is ours; None when there was nothing to do."""
        if not self.due() or not self._lease(self.config.leader_lease):
            return None
        started = self.clock()
        renewed = started

        def keep_going() -> bool:
            nonlocal renewed
            if self.stopping.is_set():
                return False
            if self.clock() - renewed > self.config.leader_lease / 3:
                if not self._lease(self.config.leader_lease):
                    log.warning("retention: lease lost to another replica mid-pass; it continues")
                    return False
                renewed = self.clock()
            return True

        report = self.pruner.run(started, keep_going)
        reclaimed = reclaim_space(self.store.engine, self.store.write_transaction, keep_going)
        for kind, count in report.removed.items():
            metrics.retention_removed.labels(kind).inc(count)
        if not report.complete:
            with self.store.write_transaction() as connection:
                release_lease(connection, self.owner, LEASE_NAME)
            return report
        metrics.retention_last_pass.set(self.clock())
        metrics.retention_last_pass_seconds.set(report.seconds)
        self._lease(started + self.config.interval - self.clock())  # the next pass's time
        log.info(
            "retention pass: removed %s in %.1f s%s",
            ", ".join(f"{count} {kind}" for kind, count in report.removed.items()),
            report.seconds,
            f", {reclaimed / 1e6:.1f} MB returned to the file system" if reclaimed else "",
        )
        return report


def retention_task(store: SpanStore, config: RetentionConfig, owner: str) -> BackgroundFactory:
    """A :meth:`Service.add_background` factory: look every ``min(interval, 60 s)`` whether a
    pass is due and, as lease holder, run it (in a thread). Does nothing without a retention
    for any kind; while the database is down it backs off, logging the outage once."""

    async def run() -> None:
        if not config.durations():
            return
        leader = RetentionLeader(store, config, owner)
        try:
            await repeat(
                leader.run_once, min(config.interval, MAX_POLL), Backoff("retention: the database")
            )
        finally:
            leader.stopping.set()  # a pass under way stops at its next batch

    return run
