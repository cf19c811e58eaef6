"""Insights in a running service: one replica runs a pass every ``insights.interval``, or when
asked (``POST /api/v1/insights/passes``), in a process of its own.

The same lease scheme as retention (:mod:`tracescore.retention.task`): the lease, under its
own name, doubles as the schedule. After a pass its holder extends it to the pass's start plus
the interval, so no replica starts another pass before then; a holder that dies mid-pass is
replaced once the lease (``insights.leader_lease``, longer than a pass) runs out. A second
lease, :data:`RUNNING_LEASE`, is held only while a pass runs: an on-demand request expires the
schedule lease (the pass is due at once, on whichever replica looks first) unless a pass holds
it.

A pass reads thousands of runs' spans and rebuilds them: seconds of pure Python that, in the
service's process, would hold the GIL its event loop needs to acknowledge OTLP exports. It runs
in a helper process instead (:mod:`tracescore.insights.pass_process`, a
:class:`~tracescore.helper_processes.OneShot`: a plain ``python -c`` subprocess, so no
multiprocessing resource tracker stays behind it), at lower priority and without the cyclic
collector. The service's thread only waits for it; a service that stops ends it, and one
that is killed takes it along (its pipe from the service closes). A store only this process
can open (an in-memory SQLite) is grouped in a thread instead.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

from tracescore.background import BackgroundFactory
from tracescore.backoff import Backoff, repeat
from tracescore.extract.declared import claim_order
from tracescore.extract.declared_config import ConventionConfig
from tracescore.helper_processes import OneShot, report, settings
from tracescore.insights.config import InsightsConfig
from tracescore.insights.runs import anything_to_group
from tracescore.judge.config import JudgeConfig
from tracescore.judge.judges import get_judge, use_verdict_store
from tracescore.store import SpanStore, open_store
from tracescore.store.leases import acquire_lease, expire_lease, lease_expiry, release_lease

log = logging.getLogger(__name__)

LEASE_NAME = "insights"
RUNNING_LEASE = "insights pass"
"""Held while a pass runs (a request for a pass then waits for the next one)."""
MAX_POLL = 60.0
"""Longest wait between two looks at whether a pass is due."""
PASS_PROCESS = "tracescore.insights.pass_process"
"""The module a pass's helper process runs."""


@dataclass(frozen=True, slots=True)
class PassSummary:
    """What a pass reports back to the service: counts, not the groups (stored already)."""

    groups: int
    failed: int
    read: int


def _pass(
    store: SpanStore,
    config: InsightsConfig,
    conventions: Sequence[ConventionConfig],
    judge: JudgeConfig | None,
    started: float,
) -> PassSummary:
    # Imported at the first pass, not with the service: the pass's code (NumPy, SciPy) takes
    # most of a second and tens of MB to import, which every service process would pay.
    from tracescore.insights.passes import run_pass

    result = run_pass(
        store,
        config,
        claim_order(conventions),
        now=datetime.fromtimestamp(started, UTC),
        judge=get_judge(judge) if judge is not None else None,
    )
    return PassSummary(len(result.groups), result.failed, result.read)


def run_child() -> None:
    """The pass of a pass's process (:mod:`tracescore.insights.pass_process`), from its
    settings; its counts reported back to the service."""
    given = settings()
    store = open_store(given["store_url"], create=False)
    judge = JudgeConfig.model_validate(given["judge"]) if given["judge"] else None
    if judge is not None:  # its verdicts cached in the store, as the service's scorers' are
        use_verdict_store(store.engine)
    try:
        summary = _pass(
            store,
            InsightsConfig.model_validate(given["config"]),
            [ConventionConfig.model_validate(c) for c in given["conventions"]],
            judge,
            given["started"],
        )
    finally:
        store.close()
    report(sys.stdout, asdict(summary))


class InsightsLeader:
    """Runs a pass when one is due and this replica takes the lease (:meth:`run_once`)."""

    def __init__(
        self,
        store: SpanStore,
        config: InsightsConfig,
        conventions: Sequence[ConventionConfig],
        owner: str,
        judge: JudgeConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.config = config
        self.conventions = list(conventions)
        self.owner = owner
        self.judge = judge
        self.clock = clock
        self._url = store.engine.url.render_as_string(hide_password=False)
        self._in_memory = store.dialect == "sqlite" and store.engine.url.database in (
            None,
            "",
            ":memory:",
        )
        self._process: OneShot | None = None
        self._closed = False
        self._lock = threading.Lock()

    def _lease(self, duration: float, name: str = LEASE_NAME) -> bool:
        with self.store.write_transaction() as connection:
            return acquire_lease(connection, self.owner, self.clock(), duration, name)

    def run_once(self) -> PassSummary | None:
        """A pass if one is due and the leases are ours; None when there was nothing to do."""
        with self.store.engine.connect() as connection:
            expires = lease_expiry(connection, LEASE_NAME)
        if expires is not None and expires >= self.clock():
            return None
        if not self._lease(self.config.leader_lease):
            return None
        started = self.clock()
        until = datetime.fromtimestamp(started, UTC)
        since = until - timedelta(seconds=self.config.window)
        if not anything_to_group(self.store, since, until, self.config.failed):
            self._lease(self.config.interval)  # nothing failed: the same as an empty pass
            return None
        if not self._lease(self.config.leader_lease, RUNNING_LEASE):
            return None  # a pass asked for while another replica's ran: it is due after
        try:
            result = self._run(started)
        finally:
            with self.store.write_transaction() as connection:
                release_lease(connection, self.owner, RUNNING_LEASE)
        self._lease(started + self.config.interval - self.clock())  # the next pass's time
        log.info(
            "insights pass: %d groups among %d failed runs in %.1f s",
            result.groups,
            result.read,
            self.clock() - started,
        )
        return result

    def _run(self, started: float) -> PassSummary:
        """The pass, in its own process (see the module), or here for an in-memory store."""
        if self._in_memory:
            return _pass(self.store, self.config, self.conventions, self.judge, started)
        process = OneShot(
            PASS_PROCESS,
            {
                "store_url": self._url,
                "config": self.config.model_dump(mode="json"),
                "conventions": [c.model_dump(mode="json") for c in self.conventions],
                "judge": self.judge.model_dump(mode="json") if self.judge else None,
                "started": started,
            },
        )
        with self._lock:
            if self._closed:
                raise RuntimeError("insights: the service is stopping")
            self._process = process
        try:
            return PassSummary(**process.run())
        finally:
            with self._lock:
                self._process = None

    def close(self) -> None:
        """End a running pass at once (the service is stopping: the next pass starts over)."""
        with self._lock:
            self._closed = True
            if self._process is not None:
                self._process.end()


class PassRequests:
    """On-demand passes: :meth:`due_now` makes a pass due, then :attr:`wake` wakes this
    service's leader (other replicas find it due within :data:`MAX_POLL`)."""

    def __init__(self, store: SpanStore) -> None:
        self.store = store
        self.wake = asyncio.Event()

    def due_now(self, now: float) -> bool:
        """Make a pass due; False (nothing changed) while one runs."""
        with self.store.write_transaction() as connection:
            running = lease_expiry(connection, RUNNING_LEASE)
            if running is not None and running >= now:
                return False
            expire_lease(connection, LEASE_NAME)
            return True


def insights_task(
    store: SpanStore,
    config: InsightsConfig,
    conventions: Sequence[ConventionConfig],
    owner: str,
    judge: JudgeConfig | None = None,
    requests: PassRequests | None = None,
) -> BackgroundFactory:
    """A :meth:`Service.add_background` factory: look every ``min(interval, 60 s)`` (or when
    a pass is requested) whether a pass is due and, as lease holder, run it."""

    async def run() -> None:
        if not config.enabled:
            return
        leader = InsightsLeader(store, config, conventions, owner, judge)
        try:
            await repeat(
                leader.run_once,
                min(config.interval, MAX_POLL),
                Backoff("insights: the database"),
                requests.wake if requests is not None else None,
            )
        finally:
            leader.close()

    return run
