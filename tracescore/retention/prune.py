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
with any straggler spans stored under it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from sqlalchemy import (
    Connection,
    Delete,
    Table,
    and_,
    bindparam,
    delete,
    exists,
    false,
    func,
    select,
    tuple_,
    update,
)
from sqlalchemy.sql.elements import ColumnElement

from tracescore.retention.config import RetentionConfig
from tracescore.spans import EVALUATION_EVENT
from tracescore.store.alerts import AlertEventRow, AlertStateRow
from tracescore.store.conversations import ConversationRow, ConversationTurnRow
from tracescore.store.feedback import FeedbackRow
from tracescore.store.journal import Journal
from tracescore.store.judge_cache import JudgeVerdict
from tracescore.store.scores import SamplingDecisionRow, SamplingTallyRow, ScoreRow
from tracescore.store.table_of import table_of
from tracescore.store.tables import LogRow, SpanRow, TraceRow
from tracescore.store.trace_queue import TraceState

WriteTransaction = Callable[[], AbstractContextManager[Connection]]


SPANS = table_of(SpanRow)
LOGS = table_of(LogRow)
TRACES = table_of(TraceRow)
CONVERSATIONS = table_of(ConversationRow)
TURNS = table_of(ConversationTurnRow)


SETTLED = (TraceState.SCORED, TraceState.FAILED)
"""Trace states whose spans may go: nothing will read them to score the trace again."""
IN_FLIGHT = (TraceState.PENDING, TraceState.READY, TraceState.CLAIMED)
"""Trace states whose records are kept whatever their age: the trace is yet to be scored."""



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


def _still_in(conn: Connection, trace_ids: list[str], state: TraceState, table: Table = TRACES) -> list[str]:
    """Those of ``trace_ids`` (or conversation ids, with ``table``) still in ``state``, locked
    until the transaction ends. Only PostgreSQL needs it (SQLite serializes writers): there a
    trace a write touched since it was found (a late span) is left alone, and one whose row
    another transaction holds waits for the next batch. Found first and locked after, so only
    the rows a batch takes are locked."""
    if conn.dialect.name != "postgresql" or not trace_ids:
        return trace_ids
    key = table.c[table.primary_key.columns.keys()[0]]
    query = select(key).where(key.in_(trace_ids), table.c.state == state)
    return list(conn.execute(query.with_for_update(skip_locked=True)).scalars())


@dataclass(frozen=True, slots=True)
class AgedRows:
    """Rows of one table that expire by one time column: the oldest ``limit`` before the cut go."""

    kind: str
    table: Table
    keys: tuple[str, ...]
    age: str
    duration: float
    as_column: Callable[[float], object]
    """Epoch seconds as the age column stores time (nanoseconds, a datetime, seconds)."""
    also: Callable[[Table, Any], ColumnElement[bool]] | None = None
    """A further condition on the row, given the table and the cut's bound parameter."""

    def statement(self, limit: int) -> Delete:
        table = self.table
        cut = bindparam("cut", type_=table.c[self.age].type)
        condition = table.c[self.age] < cut
        if self.also is not None:
            condition = and_(condition, self.also(table, cut))
        keys = [table.c[key] for key in self.keys]
        chosen = select(*keys).where(condition).order_by(table.c[self.age]).limit(limit)
        target = keys[0] if len(keys) == 1 else tuple_(*keys)
        return delete(table).where(target.in_(chosen))

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        cut = self.as_column(now - self.duration)
        removed = conn.execute(self.statement(limit), {"cut": cut}).rowcount
        return Batch({self.kind: removed}, removed >= limit)


@dataclass(frozen=True, slots=True)
class ExpiredTraces:
    """Spans of traces in ``state`` (scored, or failed) whose last span ended before the cut; each
    trace's queue row becomes a ``pruned`` tombstone in the same transaction. Found in index
    order, oldest first, one state at a time: a scan over both states could not stop at the
    batch's end (PostgreSQL read every expired trace's index entry for each batch)."""

    duration: float
    state: TraceState

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        found = conn.execute(
            select(TRACES.c.trace_id, TRACES.c.span_count)
            .where(TRACES.c.state == self.state, TRACES.c.end_time_ns < _ns(now - self.duration))
            .order_by(TRACES.c.end_time_ns)
            .limit(limit)
        ).all()
        candidates, spans = [], 0
        for trace_id, span_count in found:  # about ``limit`` spans, however many traces that is
            candidates.append(trace_id)
            spans += span_count
            if spans >= limit:
                break
        chosen = _still_in(conn, candidates, self.state)
        if not chosen:  # none left, or all busy: the next pass takes them
            return Batch({}, False)
        removed = conn.execute(delete(SPANS).where(SPANS.c.trace_id.in_(chosen))).rowcount
        conn.execute(
            update(TRACES)
            .where(TRACES.c.trace_id.in_(chosen))
            .values(state=TraceState.PRUNED, span_count=0)
        )
        return Batch({"spans": removed}, len(found) >= limit or len(candidates) < len(found))


@dataclass(frozen=True, slots=True)
class Tombstones:
    """Queue rows of pruned traces, with any spans that arrived for them since: once the trace's
    last span is twice the retention old and nothing arrived for it for a retention (so data
    imported long after the fact keeps its tombstone a while too)."""

    duration: float

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        found = list(conn.execute(
            select(TRACES.c.trace_id)
            .where(
                TRACES.c.state == TraceState.PRUNED,
                TRACES.c.end_time_ns < _ns(now - 2 * self.duration),
                TRACES.c.last_seen < now - self.duration,
            )
            .order_by(TRACES.c.end_time_ns)
            .limit(limit)
        ).scalars())  # fmt: skip
        chosen = _still_in(conn, found, TraceState.PRUNED)
        if not chosen:  # none left, or all busy: the next pass takes them
            return Batch({}, False)
        spans = conn.execute(delete(SPANS).where(SPANS.c.trace_id.in_(chosen))).rowcount
        traces = conn.execute(delete(TRACES).where(TRACES.c.trace_id.in_(chosen))).rowcount
        return Batch({"spans": spans, "traces": traces}, len(found) >= limit)


_LOG_COUNT = (
    update(TRACES)
    .where(TRACES.c.trace_id == bindparam("expired_trace"))
    .values(
        log_count=select(func.count())
        .where(LOGS.c.trace_id == TRACES.c.trace_id, LOGS.c.event_name != EVALUATION_EVENT)
        .scalar_subquery()
    )
)
"""A trace's log count recounted, as ingest counts it (a count lowered by the records removed
would inherit any miscount, and could then differ from ingest's next count)."""


@dataclass(frozen=True, slots=True)
class ExpiredLogs:
    """Log records older than the cut, except those of a trace still to be scored. The traces
    that lose records get their ``log_count`` recounted, so an exporter's retry of one of their
    spans is still recognised as nothing new and does not requeue them."""

    duration: float

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        in_flight = exists().where(
            TRACES.c.trace_id == LOGS.c.trace_id, TRACES.c.state.in_(IN_FLIGHT)
        )
        chosen = (
            select(LOGS.c.id)
            .where(LOGS.c.time_ns < _ns(now - self.duration), ~in_flight)
            .order_by(LOGS.c.time_ns)
            .limit(limit)
        )
        removed = delete(LOGS).where(LOGS.c.id.in_(chosen)).returning(LOGS.c.trace_id)
        traces = conn.execute(removed).scalars().all()
        touched = sorted({trace_id for trace_id in traces if trace_id is not None})
        if touched:  # in trace id order, as ingest locks trace rows (no deadlock on PostgreSQL)
            conn.execute(_LOG_COUNT, [{"expired_trace": trace_id} for trace_id in touched])
        return Batch({"logs": len(traces)}, len(traces) >= limit)


@dataclass(frozen=True, slots=True)
class ExpiredConversations:
    """Conversations in ``state`` whose last turn was recorded before the cut, each with its
    turns, found in index order one state at a time (as :class:`ExpiredTraces`). The time is
    the collector's, not the exporter's: a turn dated in the future cannot keep them. A turn
    arriving later starts the conversation afresh."""

    duration: float
    state: TraceState

    def __call__(self, conn: Connection, now: float, limit: int) -> Batch:
        found = list(conn.execute(
            select(CONVERSATIONS.c.conversation_id)
            .where(CONVERSATIONS.c.state == self.state, CONVERSATIONS.c.last_seen < now - self.duration)
            .order_by(CONVERSATIONS.c.last_seen)
            .limit(limit)
        ).scalars())  # fmt: skip
        chosen = _still_in(conn, found, self.state, CONVERSATIONS)
        if not chosen:  # none left, or all busy: the next pass takes them
            return Batch({}, False)
        conn.execute(delete(TURNS).where(TURNS.c.conversation_id.in_(chosen)))
        removed = conn.execute(delete(CONVERSATIONS).where(CONVERSATIONS.c.conversation_id.in_(chosen))).rowcount
        return Batch({"conversations": removed}, len(found) >= limit)


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
    if (seconds := durations.get("logs")) is not None:
        yield ExpiredLogs(seconds)
    if (seconds := durations.get("scores")) is not None:
        yield AgedRows("scores", table_of(ScoreRow), ("id",), "created_at", seconds, _utc)
    if (seconds := durations.get("sampling_decisions")) is not None:
        kind = "sampling_decisions"
        yield AgedRows(kind, table_of(SamplingDecisionRow), ("id",), "created_at", seconds, _utc)
        tallies = table_of(SamplingTallyRow)
        yield AgedRows(kind, tallies, ("binding", "minute"), "minute", seconds, _utc)
    if (seconds := durations.get("judge_cache")) is not None:
        yield AgedRows("judge_cache", table_of(JudgeVerdict), ("key",), "created_at", seconds, _utc)
    if (seconds := durations.get("alerts")) is not None:
        yield AgedRows(
            "alerts", table_of(AlertEventRow), ("id",), "at", seconds, float,
            also=lambda table, _cut: table.c.pending == false(),  # undelivered: still to send
        )
        yield AgedRows(
            "alerts", table_of(AlertStateRow), ("key",), "since", seconds, float,
            also=lambda table, cut: and_(table.c.state == "ok", table.c.evaluated_at < cut),
        )
    if (seconds := durations.get("conversations")) is not None:
        unclaimed = (*SETTLED, TraceState.PENDING, TraceState.READY)
        yield from (ExpiredConversations(seconds, state) for state in unclaimed)
    if (seconds := durations.get("feedback")) is not None:
        yield AgedRows("feedback", table_of(FeedbackRow), ("id",), "created_at", seconds, _utc)
    if (seconds := durations.get("quarantine")) is not None and journal is not None:
        yield ExpiredQuarantine(journal, seconds)


class Pruner:
    """Runs retention passes against one store's database."""

    def __init__(
        self, write_transaction: WriteTransaction, config: RetentionConfig, journal: Journal | None = None
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
