"""Trace assembly state in SQL: touched by every write, promoted, claimed under leases.

All of it is plain SQL on the ``traces`` table, valid on SQLite and PostgreSQL alike, so the
state survives restarts and several instances on one PostgreSQL share the work. The only
dialect difference is how a claim locks rows: PostgreSQL selects candidates with
``FOR UPDATE SKIP LOCKED`` (concurrent claimers skip each other's rows instead of waiting);
SQLite runs the claim as one ``UPDATE … RETURNING`` statement, and SQLite serializes writers, so
a row can only move from claimable to claimed once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from tracescore.assemble.states import ReadinessRules, TraceClaim, TraceState
from tracescore.monitor import metrics

# Counted rather than summed, so exporter retries of already-stored spans do not inflate it.
_STORED = "(SELECT count(*) FROM {table} WHERE {table}.trace_id = CAST(:trace_id AS VARCHAR(32)))"

# Whether the write stored anything new for the trace: an exporter's retry of records already
# stored (after a lost acknowledgement, say) must not send a scored trace back to be rescored.
_NEW = "(excluded.span_count <> traces.span_count OR excluded.log_count <> traces.log_count)"

_TOUCH = text(
    f"""
INSERT INTO traces (trace_id, service_name, root_name, has_root, span_count, log_count,
    generation, start_time_ns, end_time_ns, first_seen, last_seen, pending_since, state, attempts)
VALUES (:trace_id, :service_name, :root_name, :has_root, {_STORED.format(table="spans")},
    {_STORED.format(table="logs")},
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
    state = CASE WHEN {_NEW} AND traces.state <> '{TraceState.CLAIMED}'
        THEN '{TraceState.PENDING}' ELSE traces.state END
"""
)


def touch_traces(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Record arrivals for each trace of a write, in the write's own transaction.

    Each row holds ``trace_id, service_name, root_name, has_root, start_time_ns, end_time_ns,
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


def promote_ready(conn: Connection, rules: ReadinessRules, now: float) -> int:
    """Move pending traces that satisfy the readiness rules to ``ready``; returns how many."""
    idle = conn.execute(_PROMOTE_IDLE, {"cut": now - rules.idle_timeout}).rowcount
    promoted = idle + conn.execute(_PROMOTE_OVERDUE, {"cut": now - rules.max_wait}).rowcount
    metrics.traces_ready.inc(promoted)
    return promoted


_CLAIM = f"""
WITH candidates AS MATERIALIZED (
    SELECT trace_id FROM traces
    WHERE state = '{TraceState.READY}'
       OR (state = '{TraceState.CLAIMED}' AND lease_expires < :now)
    ORDER BY last_seen
    LIMIT :limit {{lock}}
)
UPDATE traces SET state = '{TraceState.CLAIMED}', lease_owner = :owner, lease_token = :token,
    lease_expires = :expires, claimed_generation = traces.generation,
    attempts = traces.attempts + 1
FROM candidates
WHERE traces.trace_id = candidates.trace_id
RETURNING traces.trace_id, traces.generation, traces.span_count
"""
_CLAIM_SQLITE = text(_CLAIM.format(lock=""))
_CLAIM_POSTGRES = text(_CLAIM.format(lock="FOR UPDATE SKIP LOCKED"))


def claim(
    conn: Connection, owner: str, limit: int, lease_seconds: float, now: float
) -> list[TraceClaim]:
    """Lease up to ``limit`` claimable traces (ready, or claimed with an expired lease)."""
    token = uuid.uuid4().hex
    expires = now + lease_seconds
    statement = _CLAIM_POSTGRES if conn.dialect.name == "postgresql" else _CLAIM_SQLITE
    rows = conn.execute(
        statement,
        {"owner": owner, "token": token, "expires": expires, "now": now, "limit": limit},
    ).all()
    return [
        TraceClaim(row.trace_id, row.generation, row.span_count, owner, token, expires)
        for row in sorted(rows, key=lambda r: r.trace_id)
    ]


_COMPLETE = text(
    f"""
UPDATE traces SET
    state = CASE WHEN generation = :generation
        THEN '{TraceState.SCORED}' ELSE '{TraceState.PENDING}' END,
    pending_since = CASE WHEN generation = :generation THEN pending_since ELSE :now END,
    scored_generation = :generation, attempts = 0, last_error = NULL,
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE trace_id = :trace_id AND lease_token = :token AND state = '{TraceState.CLAIMED}'
"""
)


def complete(conn: Connection, claim: TraceClaim, now: float) -> bool:
    """Mark a claimed trace scored, or pending again if spans arrived since the claim.

    Returns False (and changes nothing) when the claim no longer holds: its lease expired and
    another worker claimed the trace.
    """
    result = conn.execute(
        _COMPLETE,
        {"generation": claim.generation, "now": now, "trace_id": claim.trace_id,
         "token": claim.token},
    )
    return result.rowcount == 1


_RELEASE = text(
    f"""
UPDATE traces SET
    state = CASE WHEN CAST(:error AS TEXT) IS NOT NULL AND attempts >= :max_attempts
        THEN '{TraceState.FAILED}' ELSE '{TraceState.READY}' END,
    last_error = CAST(:error AS TEXT), lease_owner = NULL, lease_token = NULL, lease_expires = NULL,
    attempts = CASE WHEN CAST(:error AS TEXT) IS NULL THEN attempts - 1 ELSE attempts END
WHERE trace_id = :trace_id AND lease_token = :token AND state = '{TraceState.CLAIMED}'
"""
)


def release(conn: Connection, claim: TraceClaim, error: str | None, rules: ReadinessRules) -> bool:
    """Give a claimed trace back as ready; with an error it counts as a failed attempt."""
    result = conn.execute(
        _RELEASE,
        {"error": error, "max_attempts": rules.max_attempts, "trace_id": claim.trace_id,
         "token": claim.token},
    )
    return result.rowcount == 1
