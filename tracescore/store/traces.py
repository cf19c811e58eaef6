"""Queries of the ``traces``, ``spans`` and ``logs`` tables beyond the span store's ingest and
load paths (:mod:`tracescore.store.spanstore`): the OTLP feedback scan's reads and retention's
deletes.

Spans are pruned a trace at a time, never a few spans of a trace: once the last span of a
trace ended before the cut, and only once the trace is scored (or failed), its spans are
deleted and its queue row becomes a ``pruned`` tombstone, so a record arriving for it later can
neither requeue it nor have a fragment of it scored over its kept scores.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    Integer,
    Select,
    and_,
    bindparam,
    delete,
    exists,
    func,
    or_,
    select,
    union_all,
    update,
)
from sqlalchemy.sql.elements import BindParameter, ColumnElement

from tracescore.spans import EVALUATION_EVENT
from tracescore.store import codec
from tracescore.store.aging import still_in
from tracescore.store.leased_queue import SETTLED, TraceState, state_is
from tracescore.store.table_of import table_of
from tracescore.store.tables import LogRow, SpanRow, TraceRow

TRACES = table_of(TraceRow)
SPANS = table_of(SpanRow)
LOGS = table_of(LogRow)

IN_FLIGHT = (TraceState.PENDING, TraceState.READY, TraceState.CLAIMED)
"""Trace states whose records are kept whatever their age: the trace is yet to be scored."""


# --- feedback/scan: the OTLP feedback scan ---------------------------------------------------

Key = tuple[float, str]
"""A trace's place in the scan's order: (last_seen, trace_id)."""

LAST_TRACE_ID = "f" * 32
"""The greatest trace id, so ``(moment, LAST_TRACE_ID)`` is at or after every trace last seen
then (ids are compared as the bytes they are stored as)."""

_MENTIONS_EVENT = f"%{EVALUATION_EVENT}%"
"""A prefilter in SQL: only records whose stored JSON names the event are decoded."""


def _between(after: tuple[Any, ...], through: tuple[Any, ...]) -> ColumnElement[bool]:
    """SQL: the traces after ``after`` up to and including ``through``, in the scan's order;
    an index range on ``last_seen`` narrowed by the trace ids at its two ends."""
    return and_(
        TRACES.c.last_seen.between(after[0], through[0]),
        or_(TRACES.c.last_seen > after[0], TRACES.c.trace_id > after[1]),
        or_(TRACES.c.last_seen < through[0], TRACES.c.trace_id <= through[1]),
    )


def in_last_seen_order(
    query: Select[Any], dialect: str, limit: int | BindParameter[int], *, newest_first: bool = False
) -> Select[Any]:
    """The first ``limit`` rows of ``query`` (a select of ``traces`` columns, ``last_seen`` and
    ``trace_id`` among them) in last-seen order, trace id next.

    On SQLite that is one read of ``ix_traces_last_seen``. PostgreSQL's holds the settled
    traces only (scored, failed, pruned), since every version of a row as its trace went
    through the queue left an entry in it (85 bytes a trace after the capacity benchmark, 22
    now). Each of the other states has an index of its own keyed by ``last_seen``, so the read
    there is one per state, each from its index in order up to the limit, merged: at most
    ``limit`` rows a state. The statement takes longer to build than to run (its subqueries'
    columns, ~5 ms): callers build it once, with bound parameters (``limit`` rendered in the
    SQL at execution, ``bindparam(…, literal_execute=True)``, so each plan knows it)."""
    last_seen = TRACES.c.last_seen.desc() if newest_first else TRACES.c.last_seen
    if dialect != "postgresql":
        return query.order_by(last_seen, TRACES.c.trace_id).limit(limit)
    settled = or_(*(state_is(TRACES.c.state, state) for state in SETTLED))
    by_index = [settled, *(state_is(TRACES.c.state, state) for state in IN_FLIGHT)]
    parts = [
        query.where(condition).order_by(last_seen, TRACES.c.trace_id).limit(limit).subquery()
        for condition in by_index
    ]
    merged = union_all(*(select(part) for part in parts)).subquery()
    merged_last_seen = merged.c.last_seen.desc() if newest_first else merged.c.last_seen
    return select(merged).order_by(merged_last_seen, merged.c.trace_id).limit(limit)


@functools.cache
def _keys_query(dialect: str) -> Select[Any]:
    """:func:`trace_keys`' statement on ``dialect``."""
    after: tuple[BindParameter[Any], ...] = (bindparam("after_seen"), bindparam("after_id"))
    through: tuple[BindParameter[Any], ...] = (bindparam("through_seen"), bindparam("through_id"))
    query = select(TRACES.c.last_seen, TRACES.c.trace_id).where(_between(after, through))
    return in_last_seen_order(
        query, dialect, bindparam("limit", type_=Integer, literal_execute=True)
    )


def trace_keys(connection: Connection, after: Key, through: Key, limit: int) -> list[Key]:
    """The first ``limit`` traces after ``after`` through ``through``, in the scan's order."""
    rows = connection.execute(
        _keys_query(connection.dialect.name),
        {
            "after_seen": after[0],
            "after_id": after[1],
            "through_seen": through[0],
            "through_id": through[1],
            "limit": limit,
        },
    )
    return [(row.last_seen, row.trace_id) for row in rows]


@dataclass(frozen=True, slots=True)
class SpanEvents:
    """A stored span's events, decoded."""

    trace_id: str
    span_id: str
    events: list[Any]


@dataclass(frozen=True, slots=True)
class StoredLog:
    """A stored log record's fields that may carry a human verdict, decoded."""

    trace_id: str | None
    span_id: str | None
    event_name: str
    attributes: dict[str, Any]
    body: Any
    time_ns: int


def evaluation_spans(connection: Connection, after: Key, through: Key) -> list[SpanEvents]:
    """The spans of the traces after ``after`` through ``through`` whose events may hold a
    verdict: joined on the traces' range rather than a list of ids, whose hundreds of
    parameters cost more to send and plan than the lookups themselves."""
    query = (
        select(SPANS.c.trace_id, SPANS.c.span_id, SPANS.c.events)
        .join(TRACES, TRACES.c.trace_id == SPANS.c.trace_id)
        .where(_between(after, through), SPANS.c.events.like(_MENTIONS_EVENT))
    )
    return [
        SpanEvents(span.trace_id, span.span_id, codec.decode(span.events) or [])
        for span in connection.execute(query)
    ]


def evaluation_logs(connection: Connection, after: Key, through: Key) -> list[StoredLog]:
    """The log records of the same traces that may hold a verdict (as :func:`evaluation_spans`)."""
    query = (
        select(
            LOGS.c.trace_id,
            LOGS.c.span_id,
            LOGS.c.event_name,
            LOGS.c.attributes,
            LOGS.c.body,
            LOGS.c.time_ns,
        )
        .join(TRACES, TRACES.c.trace_id == LOGS.c.trace_id)
        .where(
            _between(after, through),
            or_(LOGS.c.event_name == EVALUATION_EVENT, LOGS.c.attributes.like(_MENTIONS_EVENT)),
        )
    )
    return [
        StoredLog(
            record.trace_id,
            record.span_id,
            record.event_name,
            codec.decode(record.attributes) or {},
            codec.decode(record.body),
            record.time_ns,
        )
        for record in connection.execute(query)
    ]


# --- retention/prune ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pruned:
    """What one batch of a trace-wise prune removed, and whether expired rows may remain (None
    instead: no trace was left to take, or all were busy; the next pass takes them)."""

    spans: int
    traces: int
    more: bool


def prune_settled_traces(
    conn: Connection, state: TraceState, before_ns: int, limit: int
) -> Pruned | None:
    """Spans of traces in ``state`` (scored, or failed) whose last span ended before
    ``before_ns``, about ``limit`` spans; each trace's queue row becomes a ``pruned`` tombstone
    in the same transaction. Found in index order, oldest first, one state at a time: a scan
    over both states could not stop at the batch's end (PostgreSQL read every expired trace's
    index entry for each batch)."""
    found = conn.execute(
        select(TRACES.c.trace_id, TRACES.c.span_count)
        .where(state_is(TRACES.c.state, state), TRACES.c.end_time_ns < before_ns)
        .order_by(TRACES.c.end_time_ns)
        .limit(limit)
    ).all()
    candidates, spans = [], 0
    for trace_id, span_count in found:  # about ``limit`` spans, however many traces that is
        candidates.append(trace_id)
        spans += span_count
        if spans >= limit:
            break
    chosen = still_in(conn, TRACES, candidates, state)
    if not chosen:  # none left, or all busy: the next pass takes them
        return None
    removed = conn.execute(delete(SPANS).where(SPANS.c.trace_id.in_(chosen))).rowcount
    conn.execute(
        update(TRACES)
        .where(TRACES.c.trace_id.in_(chosen))
        .values(state=TraceState.PRUNED, span_count=0)
    )
    return Pruned(removed, 0, len(found) >= limit or len(candidates) < len(found))


def prune_tombstones(
    conn: Connection, ended_before_ns: int, seen_before: float, limit: int
) -> Pruned | None:
    """Queue rows of pruned traces whose last span ended before ``ended_before_ns`` and for
    which nothing arrived since ``seen_before``, with any spans that arrived for them since."""
    found = list(
        conn.execute(
            select(TRACES.c.trace_id)
            .where(
                state_is(TRACES.c.state, TraceState.PRUNED),
                TRACES.c.end_time_ns < ended_before_ns,
                TRACES.c.last_seen < seen_before,
            )
            .order_by(TRACES.c.end_time_ns)
            .limit(limit)
        ).scalars()
    )
    chosen = still_in(conn, TRACES, found, TraceState.PRUNED)
    if not chosen:  # none left, or all busy: the next pass takes them
        return None
    spans = conn.execute(delete(SPANS).where(SPANS.c.trace_id.in_(chosen))).rowcount
    traces = conn.execute(delete(TRACES).where(TRACES.c.trace_id.in_(chosen))).rowcount
    return Pruned(spans, traces, len(found) >= limit)


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


def prune_logs(conn: Connection, before_ns: int, limit: int) -> int:
    """Up to ``limit`` log records older than ``before_ns``, except those of a trace still to be
    scored; how many went. The traces that lose records get their ``log_count`` recounted, so
    an exporter's retry of one of their spans is still recognised as nothing new and does not
    requeue them."""
    in_flight = exists().where(TRACES.c.trace_id == LOGS.c.trace_id, TRACES.c.state.in_(IN_FLIGHT))
    chosen = (
        select(LOGS.c.id)
        .where(LOGS.c.time_ns < before_ns, ~in_flight)
        .order_by(LOGS.c.time_ns)
        .limit(limit)
    )
    removed = delete(LOGS).where(LOGS.c.id.in_(chosen)).returning(LOGS.c.trace_id)
    traces = conn.execute(removed).scalars().all()
    touched = sorted({trace_id for trace_id in traces if trace_id is not None})
    if touched:  # in trace id order, as ingest locks trace rows (no deadlock on PostgreSQL)
        conn.execute(_LOG_COUNT, [{"expired_trace": trace_id} for trace_id in touched])
    return len(traces)
