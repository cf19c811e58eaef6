"""One retention pass: the expired rows of each kind, deleted a small batch per transaction.

Each batch is one short write transaction (on SQLite it queues behind ingest and scoring writes
like any other, see :meth:`~tracescore.store.SpanStore.write_transaction`), so a prune of
millions of rows delays any single write by one batch at most instead of stalling ingest for
the whole delete. The expired rows are found through an index on their time, oldest first, so a
batch costs the same whatever the table's size.

Spans are pruned a trace at a time, never a few spans of a trace: once the last span of a
trace ended before the cut, and only once the trace is scored (or failed), its spans are
deleted and its queue row becomes a ``pruned`` tombstone, so a record arriving for it later can
neither requeue it nor have a fragment of it scored over its kept scores. A tombstone is
removed one more span retention later (and a retention after anything last arrived for it),
with any straggler spans stored under it. The links between per-call traces go a span retention
after they were written (:class:`ExpiredLinks`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from tracescore.retention.config import RetentionConfig
from tracescore.store import (
    Connection,
    alerts,
    call_links,
    conversations,
    feedback,
    feedback_triggers,
    insights,
    judge_cache,
    scores,
    traces,
)
from tracescore.store.aging import AgedRows
from tracescore.store.handles import WriteTransaction
from tracescore.store.journal import Journal
from tracescore.store.leased_queue import TraceState

SETTLED = (TraceState.SCORED, TraceState.FAILED)
"""Trace states whose spans may go: nothing will read them to score the trace again."""


@dataclass
class PassReport:
    """What a pass removed, by kind (``traces``: tombstones of pruned traces)."""

    removed: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    complete: bool = True
    """False when the pass stopped early (the lease was lost, or the service is stopping)."""

    def add(self, counts: dict[str, int]) -> None:
        for kind, count in counts.items():
            self.removed[kind] = self.removed.get(kind, 0) + count


@dataclass(frozen=True, slots=True)
class Batch:
    removed: dict[str, int]
    more: bool
    """Whether expired rows may remain (the batch was full)."""


class Step(Protocol):
    """Deletes one batch of one table's expired rows in the caller's transaction."""

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch: ...


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@dataclass(frozen=True, slots=True)
class Aged:
    """Rows of one table that expire by one time column (its owner module's query)."""

    kind: str
    rows: AgedRows
    duration: float
    as_column: Callable[[float], object]
    """Epoch seconds as the age column stores time (nanoseconds, a datetime, seconds)."""

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        removed = self.rows.prune(conn, self.as_column(now - self.duration), limit)
        return Batch({self.kind: removed}, removed >= limit)


@dataclass(frozen=True, slots=True)
class ExpiredTraces:
    """Spans of settled traces in ``state`` whose last span ended before the cut
    (:func:`~tracescore.store.traces.prune_settled_traces`)."""

    duration: float
    state: TraceState

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        pruned = traces.prune_settled_traces(conn, self.state, _ns(now - self.duration), limit)
        if pruned is None:
            return Batch({}, False)
        return Batch({"spans": pruned.spans}, pruned.more)


@dataclass(frozen=True, slots=True)
class Tombstones:
    """Queue rows of pruned traces, with any spans that arrived for them since: once the trace's
    last span is twice the retention old and nothing arrived for it for a retention (so data
    imported long after the fact keeps its tombstone a while too)."""

    duration: float

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        pruned = traces.prune_tombstones(
            conn, _ns(now - 2 * self.duration), now - self.duration, limit
        )
        if pruned is None:
            return Batch({}, False)
        return Batch({"spans": pruned.spans, "traces": pruned.traces}, pruned.more)


@dataclass(frozen=True, slots=True)
class ExpiredLinks:
    """Links between per-call traces (:mod:`~tracescore.store.call_links`) written a span
    retention ago: the spans they lead to are gone or going. Counted only when there were any
    (most deployments write none)."""

    duration: float

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        removed = call_links.LINKS_BY_AGE.prune(conn, now - self.duration, limit)
        return Batch({"call_links": removed} if removed else {}, removed >= limit)


@dataclass(frozen=True, slots=True)
class ExpiredLogs:
    """Log records older than the cut, except those of a trace still to be scored
    (:func:`~tracescore.store.traces.prune_logs`)."""

    duration: float

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        removed = traces.prune_logs(conn, _ns(now - self.duration), limit)
        return Batch({"logs": removed}, removed >= limit)


@dataclass(frozen=True, slots=True)
class ExpiredConversations:
    """Conversations in ``state`` whose last turn was recorded before the cut, with their turns
    (:func:`~tracescore.store.conversations.prune_conversations`)."""

    duration: float
    state: TraceState

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        removed, more = conversations.prune_conversations(
            conn, self.state, now - self.duration, limit
        )
        return Batch({"conversations": removed} if removed else {}, more)


@dataclass(frozen=True, slots=True)
class ExpiredQuarantine:
    """Quarantined ingest journal entries received before the cut."""

    journal: Journal
    duration: float

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        removed = self.journal.forget_quarantined(conn, now - self.duration, limit)
        return Batch({"quarantine": removed}, removed >= limit)


def steps(config: RetentionConfig, journal: Journal | None = None) -> Iterator[Step]:
    """The batch steps of every kind given a retention, in pass order (quarantined journal
    entries only with the ``journal`` that keeps them)."""
    durations = config.durations()
    if (seconds := durations.get("spans")) is not None:
        yield from (ExpiredTraces(seconds, state) for state in SETTLED)
        yield Tombstones(seconds)
        yield ExpiredLinks(seconds)
    if (seconds := durations.get("logs")) is not None:
        yield ExpiredLogs(seconds)
    if (seconds := durations.get("scores")) is not None:
        yield Aged("scores", scores.SCORES_BY_AGE, seconds, _utc)
        yield Aged("scores", feedback_triggers.TRIGGERS_BY_AGE, seconds, _utc)
    if (seconds := durations.get("sampling_decisions")) is not None:
        yield Aged("sampling_decisions", scores.DECISIONS_BY_AGE, seconds, _utc)
        yield Aged("sampling_decisions", scores.TALLIES_BY_AGE, seconds, _utc)
    if (seconds := durations.get("judge_cache")) is not None:
        yield Aged("judge_cache", judge_cache.VERDICTS_BY_AGE, seconds, _utc)
    if (seconds := durations.get("alerts")) is not None:
        yield Aged("alerts", alerts.EVENTS_BY_AGE, seconds, float)
        yield Aged("alerts", alerts.STATES_BY_AGE, seconds, float)
    if (seconds := durations.get("conversations")) is not None:
        unclaimed = (*SETTLED, TraceState.PENDING, TraceState.READY)
        yield from (ExpiredConversations(seconds, state) for state in unclaimed)
    if (seconds := durations.get("feedback")) is not None:
        yield Aged("feedback", feedback.FEEDBACK_BY_AGE, seconds, _utc)
    if (seconds := durations.get("quarantine")) is not None and journal is not None:
        yield ExpiredQuarantine(journal, seconds)
    if (seconds := durations.get("insights")) is not None:
        yield Aged("insights", insights.GONE_GROUPS_BY_AGE, seconds, float)
        yield Aged("insights", insights.RUN_TEXTS_BY_AGE, seconds, float)


class Pruner:
    """Runs retention passes against one store's database."""

    def __init__(
        self,
        write_transaction: WriteTransaction,
        config: RetentionConfig,
        journal: Journal | None = None,
    ) -> None:
        self._write_transaction = write_transaction
        self.config = config
        self.journal = journal
        """Where quarantined ingest entries are kept (none: they are not pruned)."""

    def run(
        self, now: float | None = None, keep_going: Callable[[], bool] = lambda: True
    ) -> PassReport:
        """One pass over every kind with a retention, ages measured from ``now``; stops early
        (``complete`` False) once ``keep_going`` says so, checked before every batch."""
        started = time.perf_counter()
        now = time.time() if now is None else now
        report = PassReport(dict.fromkeys(self.config.durations(), 0))
        for step in steps(self.config, self.journal):
            more = True
            while more:
                if not keep_going():
                    report.complete = False
                    report.seconds = time.perf_counter() - started
                    return report
                began = time.perf_counter()
                with self._write_transaction() as conn:
                    batch = step(conn, now, self.config.batch_size)
                report.add(batch.removed)
                more = batch.more
                if more:
                    # As long as the batch took, waiting for the lock included: ingest and
                    # scoring get the database at least half the time, more when they are busy.
                    time.sleep(time.perf_counter() - began)
        report.seconds = time.perf_counter() - started
        return report
