"""Reads of the ``scores`` table: the filter every read narrows by, the API's paged listing and
the dashboard's lists.

The table, its writes and its row types live in :mod:`tracescore.store.scores`; the aggregates
(trends, error rates, coverage) in :mod:`tracescore.store.score_aggregates`. Every query here is
bounded by an indexed range or a LIMIT and returns typed rows.

Over 500 lines and kept whole: every list here narrows by :class:`ScoreFilter` and pages by
``(created_at, id)``, and a filtered page's per-series merge must apply the filter exactly as
the single query it replaces does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict, cast

from sqlalchemy import (
    ColumnElement,
    FromClause,
    Select,
    and_,
    bindparam,
    case,
    exists,
    false,
    func,
    or_,
    select,
)
from sqlalchemy.engine import Connection

from tracescore.cursors import NOT_A_CURSOR, cursor_hex, decode_cursor, encode_cursor
from tracescore.store.alerts import ALERT_EVENTS
from tracescore.store.score_series import SERIES
from tracescore.store.scores import (
    LISTED_COLUMNS,
    NAMED,
    SCORE_ROWS,
    SCORES,
    ListedScore,
    StoredScore,
    plain_rows,
)

FILTER_COLUMNS = ("scorer_id", "agent", "model")
"""Columns the dashboard's score lists can be narrowed by, in the order its filter form shows
them."""
LATE_WRITES = timedelta(minutes=10)
"""How far back a score row may be stamped when it is written (its scoring time)."""


@dataclass(frozen=True, slots=True)
class ScoreFilter:
    """Equality filters and a ``[since, until)`` range over ``scores``; None means any."""

    scorer: str | None = None
    scorer_version: str | None = None
    binding: str | None = None
    agent: str | None = None
    service: str | None = None
    model: str | None = None
    status: str | None = None
    trace_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def conditions(
        self, rows: FromClause = SCORES, *, names: bool = True
    ) -> list[ColumnElement[bool]]:
        """The filter over :data:`SCORES`, or over ``rows`` (another table of its columns);
        without ``names``, only what a score row holds itself (its trace and time)."""
        c = rows.c
        columns = {**_SERIES_FILTERS, "trace_id": "trace_id"} if names else {"trace_id": "trace_id"}
        found: list[ColumnElement[bool]] = [
            c[column] == getattr(self, name)
            for name, column in columns.items()
            if getattr(self, name) is not None
        ]
        if self.since is not None:
            found.append(c.created_at >= bindparam("since", type_=c.created_at.type))
        if self.until is not None:
            found.append(c.created_at < bindparam("until", type_=c.created_at.type))
        return found

    def series_conditions(self) -> list[ColumnElement[bool]]:
        """The filter's names, over ``score_series``: which series it keeps."""
        return [
            SERIES.c[column] == getattr(self, name)
            for name, column in _SERIES_FILTERS.items()
            if getattr(self, name) is not None
        ]

    def row_conditions(self) -> list[ColumnElement[bool]]:
        """The filter over the score rows themselves (``scores``, no names joined): a count or
        a newest time then reads only the rows' indexes, where the join looked up every row's
        series."""
        found = self.conditions(SCORE_ROWS, names=False)
        if names := self.series_conditions():
            found.append(SCORE_ROWS.c.series_id.in_(select(SERIES.c.id).where(*names)))
        return found

    def params(self) -> dict[str, datetime]:
        """Values of the range parameters :meth:`conditions` leaves bound."""
        found = {}
        if self.since is not None:
            found["since"] = self.since
        if self.until is not None:
            found["until"] = self.until
        return found

    def shape(self) -> ScoreFilter:
        """This filter without its range values: the key of a cached statement."""
        return replace(
            self,
            since=None if self.since is None else _ANY_TIME,
            until=None if self.until is None else _ANY_TIME,
        )


_ANY_TIME = datetime(1970, 1, 1, tzinfo=UTC)
_SERIES_FILTERS = {
    "scorer": "scorer_id",
    "scorer_version": "scorer_version",
    "binding": "binding",
    "agent": "agent",
    "service": "service",
    "model": "model",
    "status": "status",
}
# --- the REST API's listing (tracescore.monitor.api) -----------------------------------------


def time_cursor(created_at: datetime, row_id: str) -> str:
    """The cursor of a page whose last row has ``(created_at, id)``, for lists newest first."""
    return encode_cursor(created_at.isoformat(), row_id)


def time_position(cursor: str) -> tuple[datetime, str]:
    """The ``(created_at, id)`` of a :func:`time_cursor`; ValueError for another cursor."""
    moment, row_id = decode_cursor(cursor, 2)
    try:
        return datetime.fromisoformat(moment).astimezone(UTC), cursor_hex(row_id)
    except (ValueError, OverflowError):  # 0001-01-01T00:00:00+01:00 is in year 0 in UTC
        raise ValueError(NOT_A_CURSOR) from None


def list_scores(
    connection: Connection,
    where: ScoreFilter,
    limit: int,
    cursor: str | None = None,
    *,
    with_steps: bool = False,
) -> tuple[list[ListedScore], str | None]:
    """Newest first, keyset-paginated on ``(created_at, id)`` so pages stay stable under inserts.

    ``with_steps`` adds each row's ``steps`` (the rows are then :class:`StoredScore`)."""
    columns = list(SCORES.c) if with_steps else LISTED_COLUMNS
    statement = _newest(connection, where, [column.name for column in columns], limit + 1, cursor)
    rows = cast(list[ListedScore], plain_rows(connection.execute(statement, where.params())))
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        next_cursor = time_cursor(rows[-1]["created_at"], rows[-1]["id"])
    return rows, next_cursor


def _newest(
    connection: Connection, where: ScoreFilter, names: list[str], limit: int, cursor: str | None
) -> Select[Any]:
    """The newest ``limit`` rows matching ``where`` (after ``cursor``), newest first.

    A filter on names keeps some series, whose ids are read first from the small table. One
    series is a range of its ``(series_id, created_at)`` index, read newest first. Several are
    read by walking ``(created_at, series_id)`` newest first, each entry's id checked in the
    index before its row is read, until the page is full: from the series index the planner
    sorted every row of the series in the range for a page of 100. ``+ 0`` keeps the series
    index out of its reach for that query."""
    if not where.series_conditions():
        return _newest_of(SCORES, where.conditions(), names, limit, cursor)
    ids = list(connection.scalars(select(SERIES.c.id).where(*where.series_conditions())))
    if not ids:
        return select(*(SCORES.c[name] for name in names)).where(false())
    r = SCORE_ROWS.c
    rows = select(*(NAMED.selected_columns[name] for name in names)).join_from(
        SCORE_ROWS, SERIES, r.series_id == SERIES.c.id
    )
    series = r.series_id == ids[0] if len(ids) == 1 else (r.series_id + 0).in_(ids)
    conditions = [series, *where.conditions(SCORE_ROWS, names=False)]
    return _newest_of(rows, conditions, names, limit, cursor, times=SCORE_ROWS)


def _newest_of(
    rows: Select[Any] | FromClause,
    conditions: list[ColumnElement[bool]],
    names: list[str],
    limit: int,
    cursor: str | None,
    times: FromClause = SCORES,
) -> Select[Any]:
    """``rows`` (a selectable, or a query to narrow) newest first on ``times``' columns."""
    c = times.c
    if cursor is not None:
        moment, row_id = time_position(cursor)
        conditions = [
            *conditions,
            or_(c.created_at < moment, and_(c.created_at == moment, c.id < row_id)),
        ]
    query = rows if isinstance(rows, Select) else select(*(rows.c[name] for name in names))
    return query.where(*conditions).order_by(c.created_at.desc(), c.id.desc()).limit(limit)


# --- the dashboard's lists (tracescore.web) --------------------------------------------------


def _listed(
    connection: Connection, statement: Select[Any], params: dict[str, Any]
) -> list[ListedScore]:
    return cast(list[ListedScore], plain_rows(connection.execute(statement, params)))


def lowest_scores(
    connection: Connection,
    where: ScoreFilter,
    limit: int,
    *,
    failed_too: bool = False,
) -> list[ListedScore]:
    """The ``ok`` scores of the range, those that failed (their label says so: below their
    binding's pass threshold, or a consistency check failed) first, then lowest first (newest
    first among equals): a 0.000 of a scorer whose scores mean no pass or fail does not push
    the runs that went wrong off the list.

    With ``failed_too`` (a bucket's runs) the rows without a score (errors, not scorable,
    skipped) follow the scored ones instead of being left out: they are part of what a bucket
    held.
    """
    c = SCORES.c
    scored = [c.status == "ok", c.score.is_not(None)]
    statement = (
        select(*LISTED_COLUMNS)
        .where(*where.conditions(), *([] if failed_too else scored))
        .order_by(
            case((and_(*scored), 0), else_=1),
            case((failing_label(), 0), else_=1),
            c.score.asc(),
            c.created_at.desc(),
            c.id.desc(),
        )
        .limit(limit)
    )
    return _listed(connection, statement, where.params())


def count_scores(connection: Connection, where: ScoreFilter) -> int:
    """How many score rows of any status match: what a bucket's runs page is a part of."""
    statement = select(func.count()).select_from(SCORE_ROWS).where(*where.row_conditions())
    return int(connection.execute(statement, where.params()).scalar_one())


def latest_scores(connection: Connection, where: ScoreFilter, limit: int) -> list[ListedScore]:
    """The newest scores of any status: what the live feed shows arriving. A cascade's runs
    it did not trigger (``skipped_cascade``) are left out: most of a cascade's runs are, and
    they would crowd out the scores."""
    c = SCORES.c
    statement = (
        select(*LISTED_COLUMNS)
        .where(*where.conditions(), c.status != "skipped_cascade")
        .order_by(c.created_at.desc(), c.id.desc())
        .limit(limit)
    )
    return _listed(connection, statement, where.params())


def trace_scores(connection: Connection, trace_id: str) -> list[StoredScore]:
    """Every run score of one trace, steps included, in binding order (a conversation's scores,
    kept on its last turn's trace, are on the conversation's page)."""
    c = SCORES.c
    statement = (
        select(SCORES)
        .where(c.trace_id == trace_id, c.conversation_id.is_(None))
        .order_by(c.span_id, c.binding, c.scorer_version)
    )
    return cast(list[StoredScore], _listed(connection, statement, {}))


def filter_choices(connection: Connection, since: datetime) -> dict[str, list[str]]:
    """Distinct values of each filter column among the range's scores: the names of the series
    with a score in the range, one probe of ``(series_id, created_at)`` per series rather than
    a pass over the range's rows."""
    n = SERIES.c
    return {
        name: sorted(
            value
            for (value,) in connection.execute(
                select(n[name]).where(n[name].is_not(None), _scored_since(since)).distinct()
            )
        )
        for name in FILTER_COLUMNS
    }


def _scored_since(since: datetime, until: datetime | None = None) -> ColumnElement[bool]:
    """A series has a score in ``[since, until)`` (correlated on the series' id)."""
    r = SCORE_ROWS.c
    found = exists().where(r.series_id == SERIES.c.id, r.created_at >= since)
    return found if until is None else found.where(r.created_at < until)


def newest_score_at(connection: Connection, where: ScoreFilter) -> datetime | None:
    """When the newest score row (of any status) matching ``where`` was stored."""
    statement = select(func.max(SCORE_ROWS.c.created_at)).where(*where.row_conditions())
    newest = connection.execute(statement, where.params()).scalar_one()
    return cast(datetime | None, newest)


def trace_version(connection: Connection, trace_id: str) -> str:
    """Changes when a score of one trace is written or rewritten: what its page polls."""
    c = SCORE_ROWS.c
    statement = select(func.max(c.updated_at), func.count()).where(c.trace_id == trace_id)
    newest, count = connection.execute(statement).one()
    return f"{newest.isoformat() if newest is not None else '-'}|{count}"


def live_version(connection: Connection, now: datetime | None = None) -> str:
    """Changes whenever a score is added or an alert fires or resolves.

    The newest ``created_at`` alone could miss a row a slower worker writes late with an older
    stamp, so the count of recent rows is part of it too; both read indexed ranges. The newest
    alert event's id (:mod:`tracescore.store.alerts`' table) rides along in the same round trip.
    """
    now = now or datetime.now(UTC)
    c = SCORE_ROWS.c  # the rows alone: their time index answers without a name looked up
    last_event = select(func.max(ALERT_EVENTS.c.id)).scalar_subquery()
    statement = select(func.max(c.created_at), func.count(), last_event).where(
        c.created_at >= now - LATE_WRITES
    )
    newest, count, event = connection.execute(statement).one()  # one round trip
    stamp = newest.isoformat() if newest is not None else "-"
    return f"{stamp}|{count}|{event or 0}"


def oldest_score(connection: Connection, since: datetime) -> tuple[datetime | None, bool]:
    """The oldest score time at or after ``since``, and whether any score is older.

    Two index lookups on ``created_at`` (MIN over a range and one row before it): what the
    default time range is chosen from on every overview without ``?window=``.
    """
    c = SCORE_ROWS.c
    oldest = connection.execute(
        select(func.min(c.created_at)).where(c.created_at >= since)
    ).scalar_one()
    older = connection.execute(select(c.id).where(c.created_at < since).limit(1)).first()
    return (oldest if oldest is not None else None), older is not None


def binding_scorers(
    connection: Connection, since: datetime, until: datetime
) -> set[tuple[str, str]]:
    """``(binding, scorer_id)`` pairs scored in the range: which charts a scorer's alert is on
    (the series with a score in it, as :func:`filter_choices`)."""
    n = SERIES.c
    statement = select(n.binding, n.scorer_id).where(_scored_since(since, until)).distinct()
    return {(binding, scorer) for binding, scorer in connection.execute(statement)}


class ScorerVersion(TypedDict):
    """One scorer version of a binding, with its ``ok`` scores' count and newest time."""

    binding: str
    version: str
    count: int
    newest: datetime


def scorer_versions(connection: Connection, since: datetime) -> list[ScorerVersion]:
    """Each binding's scorer versions with their ``ok`` score counts and newest score time,
    oldest newest score first."""
    c = SCORES.c
    statement = (
        select(c.binding, c.scorer_version, func.count(), func.max(c.created_at))
        .where(c.created_at >= since, c.status == "ok")
        .group_by(c.binding, c.scorer_version)
        .order_by(c.binding, func.max(c.created_at))
    )
    return [
        {"binding": binding, "version": version, "count": int(count), "newest": newest}
        for binding, version, count, newest in connection.execute(statement)
    ]


class Disagreement(TypedDict):
    """A run two scorer versions both scored ``ok``: each version's score, row id and reason."""

    trace_id: str
    span_id: str
    agent: str | None
    model: str | None
    score_a: float
    score_b: float
    id_a: str
    id_b: str
    reason_a: str | None
    reason_b: str | None


def disagreements(
    connection: Connection,
    binding: str,
    version_a: str,
    version_b: str,
    limit: int,
    offset: int = 0,
) -> list[Disagreement]:
    """Runs both versions scored ``ok``, the largest difference first (a self-join on the run),
    from the ``offset``-th."""
    a, b = SCORES.alias("a"), SCORES.alias("b")
    gap = func.abs(b.c.score - a.c.score)
    statement = (
        select(
            a.c.trace_id,
            a.c.span_id,
            a.c.agent,
            a.c.model,
            a.c.score.label("score_a"),
            b.c.score.label("score_b"),
            a.c.id.label("id_a"),
            b.c.id.label("id_b"),
            a.c.reason.label("reason_a"),
            b.c.reason.label("reason_b"),
        )
        .join(
            b,
            and_(
                a.c.trace_id == b.c.trace_id, a.c.span_id == b.c.span_id, a.c.binding == b.c.binding
            ),
        )
        .where(
            a.c.binding == binding,
            a.c.scorer_version == version_a,
            b.c.scorer_version == version_b,
            a.c.status == "ok",
            b.c.status == "ok",
            a.c.score.is_not(None),
            b.c.score.is_not(None),
        )
        .order_by(gap.desc(), a.c.trace_id, a.c.span_id)
        .limit(limit)
        .offset(offset)
    )
    return [cast(Disagreement, row._asdict()) for row in connection.execute(statement)]


class FailedScore(TypedDict):
    """A score that marks its run as failed, as the failure-mode grouping reads it."""

    trace_id: str
    span_id: str
    binding: str
    scorer_id: str
    status: str
    score: float | None
    reason: str | None
    error: str | None
    agent: str | None
    model: str | None
    created_at: datetime
    label: str | None
    steps: dict[str, Any] | None
    """The ``consistency`` scorer's steps (its failed checks); None for every other scorer,
    whose steps (judge prompts) a pass does not read."""


CONSISTENCY_SCORER = "consistency"
PASSING_LABELS = ("pass", "ok")
"""Labels of a score that passed: a binding's ``pass``, a scorer's own ``ok``."""
_FAILED_COLUMNS = (
    *(SCORES.c[name] for name in FailedScore.__annotations__ if name != "steps"),
    case((SCORES.c.scorer_id == CONSISTENCY_SCORER, SCORES.c.steps), else_=None).label("steps"),
)


def failing_label() -> ColumnElement[bool]:
    """A score that failed: a binding's threshold labels it ``fail``; a scorer that names its
    own verdicts (``consistency``: the checks that failed) stores that name instead, ``ok``
    when it passed."""
    label = SCORES.c.label
    return or_(label == "fail", and_(label.is_not(None), label.not_in(PASSING_LABELS)))


def failed_scores(
    connection: Connection, since: datetime, until: datetime, *, errors: bool
) -> Iterator[FailedScore]:
    """The window's scores below their binding's threshold (label ``fail``) or labelled by
    their scorer with what failed (any label but :data:`PASSING_LABELS`) and, with
    ``errors``, the scorings that failed, streamed in (created_at, id) order so a caller
    sampling them holds its sample only, never the whole window."""
    failing = failing_label()
    query = (
        select(*_FAILED_COLUMNS)
        .where(
            SCORES.c.created_at >= since,
            SCORES.c.created_at < until,
            or_(failing, SCORES.c.status == "error") if errors else failing,
        )
        .order_by(SCORES.c.created_at, SCORES.c.id)
        .execution_options(yield_per=2000)
    )
    rows = connection.execute(query)
    # A row's own mapping makes its keys anew (20 µs a row), and as the view's labels.
    names = tuple(str(name) for name in rows.keys())  # noqa: SIM118 (a Result, not a dict)
    for row in rows:
        score = dict(zip(names, row, strict=True))
        yield cast(FailedScore, score)


class ScoredRun(TypedDict):
    """A run a binding's version scored ``ok``, with what its judge calls used."""

    trace_id: str
    span_id: str
    input_tokens: int
    output_tokens: int


def scored_runs(
    connection: Connection, binding: str, version: str, since: datetime
) -> list[ScoredRun]:
    """The runs ``binding`` scored ``ok`` with ``version`` since ``since`` (what a re-score of
    a changed scorer samples from), by the binding's created-at index."""
    c = SCORES.c
    statement = select(c.trace_id, c.span_id, c.input_tokens, c.output_tokens).where(
        c.binding == binding,
        c.created_at >= since,
        c.scorer_version == version,
        c.status == "ok",
    )
    return [cast(ScoredRun, row._asdict()) for row in connection.execute(statement)]
