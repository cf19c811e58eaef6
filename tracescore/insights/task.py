"""Insights in a running service: one replica runs a pass every ``insights.interval``.

The same lease scheme as retention (:mod:`tracescore.retention.task`): the lease, under its
own name, doubles as the schedule. After a pass its holder extends it to the pass's start plus
the interval, so no replica starts another pass before then; a holder that dies mid-pass is
replaced once the lease (``insights.leader_lease``, longer than a pass) runs out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from tracescore.background import BackgroundFactory
from tracescore.backoff import Backoff, repeat
from tracescore.extract.base import Convention
from tracescore.insights.config import InsightsConfig
from tracescore.judge.protocol import Judge
from tracescore.store import SpanStore
from tracescore.store.leases import acquire_lease, lease_expiry

if TYPE_CHECKING:
    from tracescore.insights.passes import PassResult

log = logging.getLogger(__name__)

LEASE_NAME = "insights"
MAX_POLL = 60.0
"""Longest wait between two looks at whether a pass is due."""


class InsightsLeader:
    """Runs a pass when one is due and this replica takes the lease (:meth:`run_once`)."""

    def __init__(
        self,
        store: SpanStore,
        config: InsightsConfig,
        conventions: Sequence[Convention],
        owner: str,
        judge: Judge | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.config = config
        self.conventions = conventions
        self.owner = owner
        self.judge = judge
        self.clock = clock

    def _lease(self, duration: float) -> bool:
        with self.store.write_transaction() as connection:
            return acquire_lease(connection, self.owner, self.clock(), duration, LEASE_NAME)

    def run_once(self) -> PassResult | None:
        """A pass if one is due and the lease is ours; None when there was nothing to do."""
        # Imported at the first pass, not with the service: scikit-learn takes a second and
        # tens of MB to import, which every service process would pay at start.
        from tracescore.insights.passes import run_pass

        with self.store.engine.connect() as connection:
            expires = lease_expiry(connection, LEASE_NAME)
        if expires is not None and expires >= self.clock():
            return None
        if not self._lease(self.config.leader_lease):
            return None
        started = self.clock()
        result = run_pass(
            self.store,
            self.config,
            self.conventions,
            now=datetime.fromtimestamp(started, UTC),
            judge=self.judge,
        )
        self._lease(started + self.config.interval - self.clock())  # the next pass's time
        log.info(
            "insights pass: %d groups among %d failed runs in %.1f s",
            len(result.groups),
            result.read,
            self.clock() - started,
        )
        return result


def insights_task(
    store: SpanStore,
    config: InsightsConfig,
    conventions: Sequence[Convention],
    owner: str,
    judge: Judge | None = None,
) -> BackgroundFactory:
    """A :meth:`Service.add_background` factory: look every ``min(interval, 60 s)`` whether a
    pass is due and, as lease holder, run it (in a thread)."""

    async def run() -> None:
        if not config.enabled:
            return
        leader = InsightsLeader(store, config, conventions, owner, judge)
        await repeat(
            leader.run_once, min(config.interval, MAX_POLL), Backoff("insights: the database")
        )

    return run
