"""The dashboard's reads that the monitoring API has no endpoint for.

Trends, totals and coverage come from :mod:`tracescore.monitor.queries` (the same SQL the REST
API answers with); what is here is specific to pages: the lowest scores, the newest ones, judge
spend per day, the filter choices, the scores of one trace and the "has anything changed"
version the live script polls. Every query is bounded by an indexed range or a LIMIT.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, func, select
from sqlalchemy.engine import Connection

from tracescore.monitor.queries import SCORES, ScoreFilter, bucket_start, db_time
from tracescore.store.alerts import AlertEventRow, AlertStateRow
from tracescore.store.dialect import as_utc
from tracescore.store.table_of import table_of

ALERT_STATES = table_of(AlertStateRow)
ALERT_EVENTS = table_of(AlertEventRow)
_LISTED = [column for column in SCORES.c if column.name != "steps"]
FILTER_COLUMNS = ("scorer_id", "agent", "model")
"""Columns the score lists can be narrowed by, in the order the filter form shows them."""
LATE_WRITES = timedelta(minutes=10)
"""How far back a score row may be stamped when it is written (its scoring time)."""


def _rows(connection: Connection, statement: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
    found = [dict(row._mapping) for row in connection.execute(statement, params)]
    for row in found:
        row["created_at"] = as_utc(row["created_at"])
    return found


def lowest_scores(
    connection: Connection, where: ScoreFilter, limit: int, *, failed_too: bool = False
) -> list[dict[str, Any]]:
    """The ``ok`` scores of the range, lowest first (newest first among equals).

    With ``failed_too`` (a bucket's runs) the rows without a score (errors, not scorable,
    skipped) follow the scored ones instead of being left out: they are part of what a bucket
    held.
    """
    c = SCORES.c
    scored = [c.status == "ok", c.score.is_not(None)]
    statement = (
        select(*_LISTED)
        .where(*where.conditions(), *([] if failed_too else scored))
        .order_by(case((and_(*scored), 0), else_=1), c.score.asc(), c.created_at.desc(),
                  c.id.desc())
        .limit(limit)
    )
    return _rows(connection, statement, where.params())


def count_scores(connection: Connection, where: ScoreFilter) -> int:
    """How many score rows of any status match: what a bucket's runs page is a part of."""
    statement = select(func.count()).select_from(SCORES).where(*where.conditions())
    return int(connection.execute(statement, where.params()).scalar_one())


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
    """Every run score of one trace, steps included, in binding order (a conversation's scores,
    kept on its last turn's trace, are on the conversation's page)."""
    c = SCORES.c
    statement = (
        select(SCORES)
        .where(c.trace_id == trace_id, c.conversation_id.is_(None))
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
    ]


def firing_alerts(connection: Connection) -> list[dict[str, Any]]:
    statement = (
        select(ALERT_STATES)
        .where(ALERT_STATES.c.state == "firing")
        .order_by(ALERT_STATES.c.since.desc(), ALERT_STATES.c.rule)
    )
    return [dict(row._mapping) for row in connection.execute(statement)]


def newest_score_at(connection: Connection, where: ScoreFilter) -> datetime | None:
    """When the newest score row (of any status) matching ``where`` was stored."""
    statement = select(func.max(SCORES.c.created_at)).where(*where.conditions())
    newest = connection.execute(statement, where.params()).scalar_one()
    return as_utc(newest) if newest is not None else None


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


def oldest_score(connection: Connection, since: datetime) -> tuple[datetime | None, bool]:
    """The oldest score time at or after ``since``, and whether any score is older.

    Two index lookups on ``created_at`` (MIN over a range and one row before it): what the
    default time range is chosen from on every overview without ``?window=``.
    """
    c = SCORES.c
    oldest = connection.execute(
        select(func.min(c.created_at)).where(c.created_at >= db_time(since))
    ).scalar_one()
    older = connection.execute(select(c.id).where(c.created_at < db_time(since)).limit(1)).first()
    return (as_utc(oldest) if oldest is not None else None), older is not None


def binding_scorers(
    connection: Connection, since: datetime, until: datetime
) -> set[tuple[str, str]]:
    """``(binding, scorer_id)`` pairs scored in the range: which charts a scorer's alert is on."""
    c = SCORES.c
    statement = (
        select(c.binding, c.scorer_id)
        .where(c.created_at >= db_time(since), c.created_at < db_time(until))
        .distinct()
    )
    return {(binding, scorer) for binding, scorer in connection.execute(statement)}


def alert_states(connection: Connection, limit: int = 1000) -> list[dict[str, Any]]:
    """Every rule's state per segment (firing first), for the alerts page."""
    statement = (
        select(ALERT_STATES)
        .order_by(
            ALERT_STATES.c.rule, (ALERT_STATES.c.state != "firing"), ALERT_STATES.c.since.desc()
        )
        .limit(limit)
    )
    return [dict(row._mapping) for row in connection.execute(statement)]


def alert_events(
    connection: Connection, *, since: float | None = None, status: str | None = None,
    rule: str | None = None, limit: int = 200,
) -> list[dict[str, Any]]:
    """Firing and resolved notifications, newest first: the alert history and chart bands."""
    e = ALERT_EVENTS.c
    conditions = []
    if since is not None:
        conditions.append(e.at >= since)
    if status is not None:
        conditions.append(e.status == status)
    if rule is not None:
        conditions.append(e.rule == rule)
    statement = (
        select(ALERT_EVENTS).where(*conditions).order_by(e.at.desc(), e.id.desc()).limit(limit)
    )
    return [dict(row._mapping) for row in connection.execute(statement)]


def last_alert_events(connection: Connection) -> dict[str, dict[str, Any]]:
    """The newest notification of each rule and segment (state key): its last delivery outcome."""
    e = ALERT_EVENTS.c
    newest = select(func.max(e.id)).group_by(e.key).scalar_subquery()
    statement = select(ALERT_EVENTS).where(e.id.in_(newest))
    return {row.key: dict(row._mapping) for row in connection.execute(statement)}


def scorer_versions(connection: Connection, since: datetime) -> list[dict[str, Any]]:
    """Each binding's scorer versions with their ``ok`` score counts and newest score time."""
    c = SCORES.c
    statement = (
        select(c.binding, c.scorer_version, func.count(), func.max(c.created_at))
        .where(c.created_at >= db_time(since), c.status == "ok")
        .group_by(c.binding, c.scorer_version)
        .order_by(c.binding, func.max(c.created_at))
    )
    return [
        {"binding": binding, "version": version, "count": int(count), "newest": as_utc(newest)}
        for binding, version, count, newest in connection.execute(statement)
    ]


def disagreements(
    connection: Connection, binding: str, version_a: str, version_b: str, limit: int
) -> list[dict[str, Any]]:
    """Runs both versions scored ``ok``, the largest difference first (a self-join on the run)."""
    a, b = SCORES.alias("a"), SCORES.alias("b")
    gap = func.abs(b.c.score - a.c.score)
    statement = (
        select(a.c.trace_id, a.c.span_id, a.c.agent, a.c.model, a.c.score.label("score_a"),
               b.c.score.label("score_b"), a.c.id.label("id_a"), b.c.id.label("id_b"),
               a.c.reason.label("reason_a"), b.c.reason.label("reason_b"))
        .join(b, and_(a.c.trace_id == b.c.trace_id, a.c.span_id == b.c.span_id,
                      a.c.binding == b.c.binding))
        .where(a.c.binding == binding, a.c.scorer_version == version_a,
               b.c.scorer_version == version_b, a.c.status == "ok", b.c.status == "ok",
               a.c.score.is_not(None), b.c.score.is_not(None))
        .order_by(gap.desc(), a.c.trace_id, a.c.span_id)
        .limit(limit)
    )
    return [dict(row._mapping) for row in connection.execute(statement)]
