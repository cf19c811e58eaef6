"""The trace queue: each trace's life between its first span and its scores, in SQL.

``pending`` (spans arriving) -> ``ready`` (complete by the readiness rules) -> ``claimed`` (a
worker holds a lease) -> ``scored``. A span or log record arriving for a ``ready``, ``scored``
or ``failed`` trace puts it back to ``pending`` (so it is rescored once complete again); one
arriving while the trace is ``claimed`` bumps its generation, and completing that claim then
sends the trace back to ``pending`` instead of ``scored``. A lease that expires (the worker died)
makes the trace claimable again. Releasing with an error too many times parks it as ``failed``.
With a :class:`SamplingRule` (the pipeline's), a trace that no binding samples goes from
``pending`` straight to ``scored`` as it is promoted, counted in the sampling tallies in the same
transaction: it is never claimed, loaded or completed.
Retention moves a scored or failed trace whose spans it removed to ``pruned``, for good.

All of it is plain SQL on the ``traces`` table, valid on SQLite and PostgreSQL alike, so the
state survives restarts and several instances on one PostgreSQL share the work. The only
dialect difference is how a claim locks rows: PostgreSQL selects candidates with
``FOR UPDATE SKIP LOCKED`` (concurrent claimers skip each other's rows instead of waiting);
SQLite runs the claim as one ``UPDATE … RETURNING`` statement, and SQLite serializes writers, so
a row can only move from claimable to claimed once.

Workers take traces in batches: one claim statement leases many, and
:meth:`TraceQueue.complete` finishes many in the caller's write transaction (the one that stores
their scores), so a batch costs a handful of statements, not a few per trace.

It runs past 400 lines as the owner of the ``traces`` table: every statement that moves a trace
between states is here, so the state machine is read in one place.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, Row, bindparam, func, literal, select, text, union_all

from tracescore.spans import EVALUATION_EVENT
from tracescore.store.column_types import HexId
from tracescore.store.journal import Journal
from tracescore.store.leased_queue import LeasedQueueSql, TraceState, state_is
from tracescore.store.scores import add_tallies
from tracescore.store.table_of import table_of
from tracescore.store.tables import TraceRow
from tracescore.store.text import TextGuard


@dataclass(frozen=True, slots=True)
class ReadinessRules:
    """When a pending trace counts as complete (all times in seconds)."""

    idle_timeout: float = 5.0
    """The root span has arrived and no span came for this long."""
    max_wait: float = 300.0
    """This long after the trace became pending, whatever else holds."""
    max_attempts: int = 5
    """Releases with an error after which the trace is parked as ``failed``."""
    max_clock_skew: float = 86_400.0
    """A span time further than this in the future of its arrival is taken as its arrival
    for the trace's times (ordering, readiness, retention); the span keeps its own."""


@dataclass(frozen=True, slots=True)
class TraceClaim:
    """A worker's lease on one ready trace; hand it back to ``complete`` or ``release``."""

    trace_id: str
    generation: int
    """The trace's write generation when claimed; later writes make ``complete`` rescore."""
    span_count: int
    owner: str
    token: str
    """Unique per claim, so a worker whose lease expired and was re-claimed cannot complete it."""
    lease_expires: float
    scored_before: bool = False
    """The trace was scored once already (late spans brought it back): counts that must not
    grow twice for one trace, such as unsampled-trace tallies, are left alone."""


# Counted rather than summed, so exporter retries of already-stored spans do not inflate it.
# Evaluation log records judge a trace (human feedback over OTLP): stored and seen like any
# record, they are not counted in ``log_count``, so a verdict on a scored trace does not send it
# back to be scored (every thumbs-up would otherwise cost a rescore).
# Trace ids come as their stored bytes (``touch_traces``' rows), so the statement binds them
# as they are.
_STORED_SPANS = "(SELECT count(*) FROM spans WHERE spans.trace_id = :trace_id)"
_STORED_LOGS = (
    "(SELECT count(*) FROM logs WHERE logs.trace_id = :trace_id"
    f" AND logs.event_name <> '{EVALUATION_EVENT}')"
)

# Whether the write stored anything new for the trace: an exporter's retry of records already
# stored (after a lost acknowledgement, say) must not send a scored trace back to be rescored.
_NEW = "(excluded.span_count <> traces.span_count OR excluded.log_count <> traces.log_count)"

_TOUCH = text(
    f"""
INSERT INTO traces (trace_id, service_name, root_name, has_root, span_count, log_count,
    generation, start_time_ns, end_time_ns, first_seen, last_seen, pending_since, state, attempts)
VALUES (:trace_id, :service_name, :root_name, :has_root, {_STORED_SPANS}, {_STORED_LOGS},
    1, :start_time_ns, :end_time_ns, :now, :now, :now, '{TraceState.PENDING}', 0)
ON CONFLICT (trace_id) DO UPDATE SET
    last_seen = CASE WHEN excluded.last_seen > traces.last_seen
        THEN excluded.last_seen ELSE traces.last_seen END,
    span_count = excluded.span_count,
    log_count = excluded.log_count,
    generation = traces.generation + CASE WHEN {_NEW} THEN 1 ELSE 0 END,
    has_root = (traces.has_root OR excluded.has_root),
    service_name = CASE WHEN excluded.has_root OR traces.service_name = ''
        THEN excluded.service_name ELSE traces.service_name END,
    root_name = CASE WHEN excluded.has_root THEN excluded.root_name ELSE traces.root_name END,
    start_time_ns = COALESCE(CASE WHEN excluded.start_time_ns < traces.start_time_ns
        THEN excluded.start_time_ns ELSE traces.start_time_ns END,
        traces.start_time_ns, excluded.start_time_ns),
    end_time_ns = COALESCE(CASE WHEN excluded.end_time_ns > traces.end_time_ns
        THEN excluded.end_time_ns ELSE traces.end_time_ns END,
        traces.end_time_ns, excluded.end_time_ns),
    pending_since = CASE WHEN {_NEW} AND traces.state IN ('{TraceState.SCORED}', '{TraceState.FAILED}')
        THEN excluded.pending_since ELSE traces.pending_since END,
    attempts = CASE WHEN {_NEW} AND traces.state = '{TraceState.FAILED}' THEN 0 ELSE traces.attempts END,
    state = CASE WHEN {_NEW} AND traces.state NOT IN ('{TraceState.CLAIMED}', '{TraceState.PRUNED}')
        THEN '{TraceState.PENDING}' ELSE traces.state END
"""
)


def touch_traces(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Record arrivals for each trace of a write, in the write's own transaction.

    Each row holds ``trace_id`` (its bytes), ``service_name, root_name, has_root, start_time_ns, end_time_ns,
    now``, ``now`` being when the records were received; call it after inserting the write's
    spans and logs (it counts them). ``last_seen`` only moves forward: the ingest journal's
    entries may be stored out of the order they were received in. Rows must come sorted by
    trace id: concurrent writers then lock trace rows in one order and cannot deadlock on
    PostgreSQL.
    """
    if rows:
        conn.execute(_TOUCH, list(rows))


# Two statements rather than one with OR, so each is an index range scan on
# (state, last_seen) / (state, pending_since): cost follows the traces promoted, not the
# traces pending.
_PROMOTE_IDLE = text(
    f"""
UPDATE traces SET state = '{TraceState.READY}'
WHERE state = '{TraceState.PENDING}' AND last_seen <= :cut AND has_root
"""
)
_PROMOTE_OVERDUE = text(
    f"""
UPDATE traces SET state = '{TraceState.READY}'
WHERE state = '{TraceState.PENDING}' AND pending_since <= :cut
"""
)
# With a sampling rule, the promoted traces are read back to be sampled (scored_generation says
# whether a trace was scored before), and those no binding samples are finished at once.
_RETURNING = " RETURNING trace_id, scored_generation"
_PROMOTE_IDLE_RETURNING = text(str(_PROMOTE_IDLE) + _RETURNING).columns(trace_id=HexId())
_PROMOTE_OVERDUE_RETURNING = text(str(_PROMOTE_OVERDUE) + _RETURNING).columns(trace_id=HexId())
_SKIP = text(
    f"""
UPDATE traces SET state = '{TraceState.SCORED}', scored_generation = generation, attempts = 0,
    last_error = NULL
WHERE trace_id IN :trace_ids AND state = '{TraceState.READY}'
"""
).bindparams(bindparam("trace_ids", expanding=True, type_=HexId()))
_SKIP_CHUNK = 500
"""Trace ids per skipping statement (SQLite's bound parameters are limited)."""


@dataclass(frozen=True, slots=True)
class SamplingRule:
    """Which traces some binding samples, as promotion asks it (the pipeline's rule, decided
    from the trace id alone, :mod:`tracescore.pipeline.sampling`)."""

    sampled: Callable[[str], bool]
    """Whether any binding samples the trace with this id."""
    bindings: tuple[str, ...]
    """The bindings whose tallies count a trace none of them samples."""


@dataclass(slots=True)
class _Skipped:
    """How many traces a promotion finished unsampled."""

    traces: int = 0


_SQL = LeasedQueueSql.of(
    "traces",
    "trace_leases",
    "trace_id",
    "traces.trace_id, traces.generation, traces.span_count, traces.scored_generation",
    HexId(),
)


class TraceQueue:
    """Promotion, claims under leases, completion and release of traces (see the module)."""

    def __init__(
        self,
        write_transaction: Callable[[], AbstractContextManager[Connection]],
        journal: Journal,
        rules: ReadinessRules,
    ) -> None:
        self._write_transaction = write_transaction
        self._journal = journal
        self.rules = rules
        self.on_promoted: Callable[[int], object] | None = None
        """Told how many traces each promotion made ready (the service counts them in a metric)."""
        self.on_failed: Callable[[str, int], object] | None = None
        """Told why (``errors``, ``lease_expired``) and how many traces were parked as failed
        (the scoring worker counts them in a metric)."""
        self.sampling: SamplingRule | None = None
        """The pipeline's sampling rule: with one, promotion finishes unsampled traces itself."""
        self.on_skipped: Callable[[int], object] | None = None
        """Told, after its commit, how many traces a promotion finished unsampled (counted in
        metrics as done, and as unsampled by every binding)."""

    def promote(self, now: float | None = None) -> int:
        """Mark pending traces ready per the readiness rules; returns how many were promoted.

        :meth:`claim` promotes first, so workers need nothing else; the service also runs it
        periodically so trace states shown by the read API stay current.
        """
        skipped = _Skipped()
        with self._write_transaction() as conn:
            promoted = self._promote(conn, now, skipped)
        self._tell_skipped(skipped)
        return promoted

    def _promote(self, conn: Connection, now: float | None, skipped: _Skipped) -> int:
        now = time.time() if now is None else now
        cut = self._readiness_now(conn, now)
        idle_cut, overdue_cut = (
            {"cut": cut - self.rules.idle_timeout},
            {"cut": cut - self.rules.max_wait},
        )
        if self.sampling is None:
            promoted = (
                conn.execute(_PROMOTE_IDLE, idle_cut).rowcount
                + conn.execute(_PROMOTE_OVERDUE, overdue_cut).rowcount
            )
        else:
            rows = [
                *conn.execute(_PROMOTE_IDLE_RETURNING, idle_cut),
                *conn.execute(_PROMOTE_OVERDUE_RETURNING, overdue_cut),
            ]
            promoted = len(rows)
            self._skip_unsampled(conn, self.sampling, rows, now, skipped)
        if promoted and self.on_promoted is not None:
            self.on_promoted(promoted)
        return promoted

    @staticmethod
    def _skip_unsampled(
        conn: Connection, rule: SamplingRule, rows: Sequence[Row[Any]], now: float, into: _Skipped
    ) -> None:
        """Finish the just-promoted traces no binding samples as ``scored``, and count them in
        the sampling tallies (the first time each is decided), in the promotion's transaction,
        with one statement per few hundred traces: a worker no longer claims, sorts, completes
        and counts each of them (nine traces in ten at sampling 0.1)."""
        unsampled = [row for row in rows if not rule.sampled(row.trace_id)]
        if not unsampled:
            return
        ids = [row.trace_id for row in unsampled]
        for start in range(0, len(ids), _SKIP_CHUNK):
            conn.execute(_SKIP, {"trace_ids": ids[start : start + _SKIP_CHUNK]})
        first_time = sum(row.scored_generation is None for row in unsampled)
        if first_time:
            moment = datetime.fromtimestamp(now, UTC)
            add_tallies(conn, dict.fromkeys(rule.bindings, first_time), moment)
        into.traces += len(unsampled)

    def _tell_skipped(self, skipped: _Skipped) -> None:
        if skipped.traces and self.on_skipped is not None:
            self.on_skipped(skipped.traces)

    def _readiness_now(self, conn: Connection, now: float | None) -> float:
        """The time readiness is judged at: now, or when the oldest request still waiting in
        the ingest journal arrived, since its spans may belong to any trace."""
        now = time.time() if now is None else now
        waiting_since = self._journal.oldest(conn)
        return now if waiting_since is None else min(now, waiting_since)

    def claim(
        self, owner: str, limit: int, lease_seconds: float, now: float | None = None
    ) -> list[TraceClaim]:
        """Promote, then lease up to ``limit`` ready traces (or ones whose lease expired), in
        one transaction; claims come sorted by trace id."""
        now = time.time() if now is None else now
        skipped = _Skipped()
        with self._write_transaction() as conn:
            self._promote(conn, now, skipped)
            rows, token, expires, failed = _SQL.lease(
                conn, owner, limit, lease_seconds, now, self.rules.max_attempts
            )
        self._tell_skipped(skipped)
        if failed:
            self._failed("lease_expired", failed)
        return [
            TraceClaim(
                row.trace_id,
                row.generation,
                row.span_count,
                owner,
                token,
                expires,
                row.scored_generation is not None,
            )
            for row in sorted(rows, key=lambda r: r.trace_id)
        ]

    def complete(
        self,
        claims: Sequence[TraceClaim],
        now: float | None = None,
        *,
        conn: Connection | None = None,
    ) -> int:
        """Mark claimed traces scored, or pending again where spans arrived since the claim; in
        ``conn``'s transaction when given (the one storing the scores), else in its own. A
        claim whose lease was lost to another worker changes nothing: returns how many were."""
        if not claims:
            return 0
        now = time.time() if now is None else now
        parameters = [
            {
                "generation": claim.generation,
                "now": now,
                "trace_id": claim.trace_id,
                "token": claim.token,
            }
            for claim in claims
        ]
        with self._write_transaction() if conn is None else nullcontext(conn) as connection:
            return len(claims) - _SQL.finish(connection, parameters)

    def expire_ended_claims(self) -> int:
        """Free the traces claimed by processes that have ended (:meth:`LeasedQueueSql.expire_ended`)."""
        return _SQL.expire_ended(self._write_transaction)

    def renew(
        self, claims: Sequence[TraceClaim], lease_seconds: float, now: float | None = None
    ) -> int:
        """Extend the leases of claims still being worked on to ``lease_seconds`` from now, so
        that scoring a long batch does not let them expire and another worker claim them
        again; returns how many are still held."""
        held = [(claim.trace_id, claim.token) for claim in claims]
        return _SQL.extend(self._write_transaction, held, lease_seconds, now)

    def release(self, claim: TraceClaim, error: str | None = None) -> None:
        """Give a claimed trace back (e.g. on shutdown) so another worker takes it; with an
        ``error`` it counts as a failed attempt, and after ``rules.max_attempts`` of them the
        trace is parked as ``failed`` until new spans arrive. The error is made storable
        (:mod:`tracescore.store.text`): an exception's message may quote a span's text, NUL
        included, which PostgreSQL would refuse, and the trace then never be released."""
        if error is not None:
            error = TextGuard().text(error)
        with self._write_transaction() as conn:
            state = _SQL.give_back(
                conn,
                {
                    "error": error,
                    "max_attempts": self.rules.max_attempts,
                    "trace_id": claim.trace_id,
                    "token": claim.token,
                },
            )
        if state == TraceState.FAILED:
            self._failed("errors", 1)

    def _failed(self, reason: str, count: int) -> None:
        if self.on_failed is not None:
            self.on_failed(reason, count)


def count_in_states(engine: Engine, states: Sequence[str]) -> dict[str, int]:
    """How many traces are in each of ``states`` (those with none left out), for the backlog
    gauges: a count per state, each read from the index holding that state's traces only
    (:func:`~tracescore.store.leased_queue.state_is`), so it costs the few traces not yet
    scored, not all of them."""
    table = table_of(TraceRow)
    counts = [
        select(literal(str(state)), func.count()).where(state_is(table.c.state, state))
        for state in states
    ]
    if not counts:
        return {}
    with engine.connect() as connection:
        return {
            str(state): int(count)
            for state, count in connection.execute(union_all(*counts))
            if count
        }
