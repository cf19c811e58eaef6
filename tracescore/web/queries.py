"""The dashboard's reads that the monitoring API has no endpoint for.

Trends, totals and coverage come from :mod:`tracescore.monitor.queries` (the same SQL the REST
API answers with); what is here is specific to pages: the lowest scores, the newest ones, judge
spend per day, the filter choices, the scores of one trace and the "has anything changed"
version the live script polls. Every query is bounded by an indexed range or a LIMIT.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from tracescore.monitor.queries import SCORES, ScoreFilter, bucket_start, db_time
from tracescore.store.alerts import AlertEventRow, AlertStateRow

ALERT_STATES = AlertStateRow.__table__
ALERT_EVENTS = AlertEventRow.__table__
_LISTED = [column for column in SCORES.c if column.name != "steps"]
FILTER_COLUMNS = ("scorer_id", "agent", "model")
"""Columns the score lists can be narrowed by, in the order the filter form shows them."""
LATE_WRITES = timedelta(minutes=10)
"""How far back a score row may be stamped when it is written (its scoring time)."""


def as_utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _rows(connection: Connection, statement: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
    found = [dict(row._mapping) for row in connection.execute(statement, params)]
    for row in found:
        row["created_at"] = as_utc(row["created_at"])
    return found


def lowest_scores(connection: Connection, where: ScoreFilter, limit: int) -> list[dict[str, Any]]:
    """The ``ok`` scores of the range, lowest first (newest first among equals)."""
    c = SCORES.c
    statement = (
        select(*_LISTED)
        .where(*where.conditions(), c.status == "ok", c.score.is_not(None))
        .order_by(c.score.asc(), c.created_at.desc(), c.id.desc())
        .limit(limit)
    )
    return _rows(connection, statement, where.params())


def latest_scores(connection: Connection, where: ScoreFilter, limit: int) -> list[dict[str, Any]]:
    """The newest scores of any status: what the live feed shows arriving."""
    c = SCORES.c
    statement = (
        select(*_LISTED)
        .where(*where.conditions())
        .order_by(c.created_at.desc(), c.id.desc())
        .limit(limit)
    )
    return _rows(connection, statement, where.params())


def trace_scores(connection: Connection, trace_id: str) -> list[dict[str, Any]]:
    """Every score of one trace, steps included, in binding order."""
    c = SCORES.c
    statement = (
        select(SCORES)
        .where(c.trace_id == trace_id)
        .order_by(c.span_id, c.binding, c.scorer_version)
    )
    return _rows(connection, statement, {})


def filter_choices(connection: Connection, since: datetime) -> dict[str, list[str]]:
    """Distinct values of each filter column among the range's scores."""
    c = SCORES.c
    return {
        name: sorted(
            value
            for (value,) in connection.execute(
                select(c[name])
                .where(c.created_at >= db_time(since), c[name].is_not(None))
                .distinct()
            )
        )
        for name in FILTER_COLUMNS
    }


def judge_cost_per_day(
    connection: Connection, since: datetime, until: datetime
) -> list[dict[str, Any]]:
    """Judge spend and judged scores per UTC day, oldest first (days without judging left out)."""
    c = SCORES.c
    day = bucket_start(connection.dialect.name, 86_400).label("day")
    statement = (
        select(day, func.sum(c.cost_usd), func.count())
        .where(
            c.created_at >= db_time(since),
            c.created_at < db_time(until),
            c.judge_model.is_not(None),
        )
        .group_by(day)
        .order_by(day)
    )
    return [
        {"day": datetime.fromtimestamp(int(start), UTC), "cost_usd": float(cost or 0.0),
         "count": int(count)}
        for start, cost, count in connection.execute(statement)
    ]  # fmt: skip


def firing_alerts(connection: Connection) -> list[dict[str, Any]]:
    statement = (
        select(ALERT_STATES)
        .where(ALERT_STATES.c.state == "firing")
        .order_by(ALERT_STATES.c.since.desc(), ALERT_STATES.c.rule)
    )
    return [dict(row._mapping) for row in connection.execute(statement)]


def trace_version(connection: Connection, trace_id: str) -> str:
    """Changes when a score of one trace is written or rewritten: what its page polls."""
    c = SCORES.c
    statement = select(func.max(c.updated_at), func.count()).where(c.trace_id == trace_id)
    newest, count = connection.execute(statement).one()
    return f"{as_utc(newest).isoformat() if newest is not None else '-'}|{count}"


def live_version(connection: Connection, now: datetime | None = None) -> str:
    """Changes whenever a score is added or an alert fires or resolves.

    The newest ``created_at`` alone could miss a row a slower worker writes late with an older
    stamp, so the count of recent rows is part of it too; both read indexed ranges.
    """
    now = now or datetime.now(UTC)
    c = SCORES.c
    last_event = select(func.max(ALERT_EVENTS.c.id)).scalar_subquery()
    statement = select(func.max(c.created_at), func.count(), last_event).where(
        c.created_at >= db_time(now - LATE_WRITES)
    )
    newest, count, event = connection.execute(statement).one()  # one round trip
    stamp = as_utc(newest).isoformat() if newest is not None else "-"
    return f"{stamp}|{count}|{event or 0}"
