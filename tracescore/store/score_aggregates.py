"""Aggregates of the ``scores``, ``sampling_decisions`` and ``sampling_tallies`` tables: what the
REST API's summary, the alert rules and the dashboard's charts are made of.

Everything is aggregated in SQL over indexed ranges (scorer or binding plus ``created_at``) and
returns a row per group, never a row per score. Percentiles are the one exception: PostgreSQL
computes them with ``percentile_cont``; SQLite has no percentile aggregate, so its scores of the
range are fetched (one column) and interpolated the same way in Python. The row-level reads of
``scores`` are in :mod:`tracescore.store.score_reads`.

Over 500 lines and kept whole: its three readers' queries (the grouped figures, coverage with
its cascade stages, the judge's cost per day) share the range filters, the failed-run
predicate and the dialect's time buckets at the top, and the same figure on the summary, an
alert and a chart must come from one definition of them. A new reader's aggregate that shares
none of these belongs in a module of its own.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, TypedDict

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Select,
    and_,
    case,
    func,
    literal_column,
    select,
    true,
    type_coerce,
)
from sqlalchemy.engine import Connection

from tracescore.outcomes import FAILED_RUN_REASON
from tracescore.store.feedback_triggers import triggered_score
from tracescore.store.packed_text import starts_with
from tracescore.store.score_reads import ScoreFilter, failing_label
from tracescore.store.score_series import SERIES
from tracescore.store.scores import SCORE_ROWS, SCORES, SamplingDecisionRow, SamplingTallyRow
from tracescore.store.table_of import table_of

DECISIONS = table_of(SamplingDecisionRow)
TALLIES = table_of(SamplingTallyRow)
ATTEMPTED_STATUSES = ("ok", "error", "not_scorable")
"""Rows a scorer actually ran for; skipped runs do not count towards error rates."""
NOT_TRIGGERED = "skipped_cascade"
"""The row of a run a cascade binding's ``after:`` did not trigger: eligible, not sampled."""


@dataclass(frozen=True, slots=True)
class Moments:
    """Count, sum and sum of squares of a group of scores: what SQL aggregates return.

    Sums add up, so the moments of a long window are the sum of its parts' (the alert
    evaluator caches a baseline's hourly parts); mean and standard deviation derive from them.
    """

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    def __add__(self, other: Moments) -> Moments:
        return Moments(self.n + other.n, self.total + other.total, self.squares + other.squares)

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan

    @property
    def std(self) -> float:
        """Sample standard deviation (n - 1 denominator)."""
        if self.n < 2:
            return 0.0 if self.n == 1 else math.nan
        variance = (self.squares - self.n * self.mean * self.mean) / (self.n - 1)
        return math.sqrt(max(variance, 0.0))

    def to_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "mean": self.mean, "std": self.std}


def percentile_cont(sorted_values: Sequence[float], fraction: float) -> float:
    """PostgreSQL's ``percentile_cont``: linear interpolation between the closest ranks.

    Used where the database has no percentile aggregate (SQLite), with the same result.
    """
    if not sorted_values:
        return math.nan
    position = fraction * (len(sorted_values) - 1)
    lower = math.floor(position)
    upper = math.ceil(position)
    first, second = sorted_values[lower], sorted_values[upper]
    return first + (second - first) * (position - lower)


def failed_run_row() -> ColumnElement[bool]:
    """A ``not_scorable`` row of a run that failed before answering (its reason says so): a
    failing agent is what error rates should show, so these count as errors beside the
    scorer's own failures."""
    return and_(
        SCORES.c.status == "not_scorable",
        starts_with(SCORES.c.reason, FAILED_RUN_REASON),
    )


# --- aggregates -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupStats:
    """Aggregates of one group of score rows (one segment, or one scorer × bucket × dimension)."""

    group: tuple[Any, ...]
    """Values of the grouping columns, in the order asked for."""
    bucket: datetime | None
    attempted: int
    errors: int
    """``error`` rows (the scorer or its judge failed) and rows of runs that failed before
    answering (:func:`failed_run_row`)."""
    failed_runs: int
    """Of ``errors``, the runs that failed before answering."""
    moments: Moments
    """Of the ``ok`` rows' scores."""
    quantiles: dict[float, float]
    failed: int = 0
    """Of the ``ok`` scores, those that failed their binding's pass threshold (the label it
    gave them when scored: :func:`~tracescore.store.score_reads.failing_label`)."""

    @property
    def start(self) -> datetime:
        """The bucket's start, for aggregates asked per time bucket (``bucket_seconds``)."""
        if self.bucket is None:
            raise ValueError("these aggregates were not grouped by time bucket")
        return self.bucket

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.attempted if self.attempted else None

    @property
    def fail_rate(self) -> float | None:
        """Share of the scored runs that failed their pass threshold."""
        return self.failed / self.moments.n if self.moments.n else None


def bucket_start(
    seconds: int, moment: ColumnElement[Any] = SCORES.c.created_at
) -> ColumnElement[int]:
    """``created_at`` floored to a multiple of ``seconds`` since the epoch, as epoch seconds:
    integer division of its stored microseconds, alike on both databases. The sizes are
    inlined as literals (ints) so PostgreSQL sees the same expression in SELECT and GROUP BY."""
    size = literal_column(str(int(seconds)), BigInteger)
    micros = literal_column(str(int(seconds) * 1_000_000), BigInteger)
    stored = type_coerce(moment, BigInteger)
    return (stored // micros) * size


@lru_cache(maxsize=512)
def _aggregate_statements(
    dialect: str,
    shape: ScoreFilter,
    group_by: tuple[str, ...],
    bucket_seconds: int | None,
    quantiles: tuple[float, ...],
    in_sql: bool,
) -> tuple[Select[Any], Select[Any] | None]:
    """The aggregate query and, when percentiles are computed in Python, the one fetching scores.

    Built once per shape: the alert evaluator runs the same few queries every round, and
    building SQLAlchemy constructs costs more than SQLite takes to run them.
    """
    c = SCORES.c
    keys: list[ColumnElement[Any]] = [c[name] for name in group_by]
    if bucket_seconds is not None:
        keys.append(bucket_start(bucket_seconds).label("bucket"))
    ok_score = case((c.status == "ok", c.score))
    aggregates: list[ColumnElement[Any]] = [
        func.sum(case((c.status.in_(ATTEMPTED_STATUSES), 1), else_=0)),
        func.sum(case((c.status == "error", 1), else_=0)),
        func.sum(case((failed_run_row(), 1), else_=0)),
        func.count(ok_score),
        func.sum(ok_score),
        func.sum(ok_score * ok_score),
        func.sum(case((and_(c.status == "ok", c.score.is_not(None), failing_label()), 1), else_=0)),
    ]
    if in_sql:
        aggregates += [func.percentile_cont(q).within_group(ok_score) for q in quantiles]
    conditions = shape.conditions()
    statement = select(*keys, *aggregates).where(*conditions).group_by(*keys)
    scores = None
    if quantiles and not in_sql:
        scores = select(*keys, c.score).where(*conditions, c.status == "ok", c.score.is_not(None))
    return statement, scores


def aggregate_scores(
    connection: Connection,
    where: ScoreFilter,
    group_by: Sequence[str] = (),
    *,
    bucket_seconds: int | None = None,
    quantiles: Sequence[float] = (),
    sql_quantiles: bool | None = None,
) -> list[GroupStats]:
    """Count, error count, sums of ``ok`` scores and percentiles per group.

    ``sql_quantiles`` forces percentiles in SQL (True, PostgreSQL only) or in Python (False);
    by default they are computed in SQL where the database can.
    """
    dialect = connection.dialect.name
    in_sql = dialect == "postgresql" if sql_quantiles is None else sql_quantiles
    statement, scores = _aggregate_statements(
        dialect, where.shape(), tuple(group_by), bucket_seconds, tuple(quantiles), in_sql
    )
    params = where.params()
    width = len(group_by) + (bucket_seconds is not None)
    rows = connection.execute(statement, params).all()

    python_quantiles: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    if scores is not None:
        for row in connection.execute(scores, params):
            python_quantiles[tuple(row[:width])].append(row[width])

    found = []
    for row in rows:
        key = tuple(row[:width])
        attempted, errors, failed_runs, n, total, squares, failed = row[width : width + 7]
        if in_sql:
            values = dict(zip(quantiles, row[width + 7 :], strict=True))
        else:
            ordered = sorted(python_quantiles.get(key, ()))
            values = {q: percentile_cont(ordered, q) for q in quantiles}
        found.append(
            GroupStats(
                group=key[: len(group_by)],
                bucket=(
                    datetime.fromtimestamp(int(key[-1]), UTC)
                    if bucket_seconds is not None
                    else None
                ),
                attempted=int(attempted or 0),
                errors=int(errors or 0) + int(failed_runs or 0),
                failed_runs=int(failed_runs or 0),
                moments=Moments(int(n or 0), float(total or 0.0), float(squares or 0.0)),
                failed=int(failed or 0),
                quantiles={
                    q: (float(v) if v is not None else float("nan")) for q, v in values.items()
                },
            )
        )
    return found


# --- coverage -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Coverage:
    """How many runs a binding saw, sampled and actually scored over a range."""

    binding: str
    eligible: int
    """Runs that passed the binding's filter: those sampled (a score row each) and those not
    (a decision row each, or counted in a tally)."""
    sampled: int
    scored: int
    """Distinct runs with at least one ``ok`` score."""
    statuses: dict[str, int]
    """Score rows by status."""
    cascade: CascadeStages | None = None
    """The stages of a cascade binding (one with ``after:``), None for others."""

    def to_dict(self) -> CoverageFigures:
        return {
            "binding": self.binding,
            "eligible": self.eligible,
            "sampled": self.sampled,
            "scored": self.scored,
            "statuses": self.statuses,
            "sample_rate": self.sampled / self.eligible if self.eligible else None,
            "scored_rate": self.scored / self.sampled if self.sampled else None,
            "cascade": self.cascade,
        }


class CascadeStages(TypedDict):
    """A cascade's stages over a range: what its upstream scored, what that flagged, what was
    explored beside it, and what the cascade binding scored and spent."""

    after: str
    """The upstream binding."""
    upstream_scored: int
    """Distinct runs the upstream scored ``ok``."""
    upstream_errored: int
    """Distinct runs the upstream's scoring errored on (and never scored ``ok``): what a cascade
    with ``errored: true`` flags, so ``flagged`` is at most this and ``upstream_scored``
    together."""
    flagged: int
    """Runs the upstream flagged, scored by the cascade binding."""
    explored: int
    """Runs the upstream did not flag, scored anyway (``explore``)."""
    not_triggered: int
    """Runs left to the upstream's verdict (``skipped_cascade`` rows): filtered, not lost."""
    scored: int
    """Distinct runs the cascade binding scored ``ok``."""
    cost_usd: float
    """What the cascade binding's judge calls cost."""


class CoverageFigures(TypedDict):
    """A :class:`Coverage` as the API and the dashboard show it, with its two rates."""

    binding: str
    eligible: int
    sampled: int
    scored: int
    statuses: dict[str, int]
    sample_rate: float | None
    scored_rate: float | None
    cascade: CascadeStages | None


def coverage(
    connection: Connection,
    since: datetime | None,
    until: datetime | None,
    binding: str | None = None,
) -> list[Coverage]:
    def in_range(table: Any, moment: str = "created_at") -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = [true()]
        if since is not None:
            found.append(table.c[moment] >= since)
        if until is not None:
            found.append(table.c[moment] < until)
        if binding is not None:
            found.append(table.c.binding == binding)
        return found

    d, s = DECISIONS.c, SCORES.c
    # A sampled run has a score row and, since the pipeline stopped writing one beside it, no
    # decision row; decision rows stored before then still count, once with their score's.
    # A run a cascade did not trigger has a row too: eligible, but not sampled. A score a
    # feedback trigger made is not a sampled one (the run was judged because someone
    # complained): it counts in the statuses, not in the sampled or scored figures.
    sampled_runs = (
        select(s.binding, s.trace_id, s.span_id)
        .where(
            *in_range(SCORES),
            s.status != NOT_TRIGGERED,
            ~triggered_score(s.trace_id, s.span_id, s.binding),
        )
        .union(select(d.binding, d.trace_id, d.span_id).where(*in_range(DECISIONS), d.sampled))
        .subquery()
    )
    sampled_by_binding = connection.execute(
        select(sampled_runs.c.binding, func.count()).group_by(sampled_runs.c.binding)
    ).all()
    unsampled_by_binding = connection.execute(
        select(d.binding, func.count())
        .where(*in_range(DECISIONS), d.sampled.is_(False))
        .group_by(d.binding)
    ).all()
    runs = (
        select(s.binding, s.trace_id, s.span_id)
        .where(
            *in_range(SCORES),
            s.status == "ok",
            ~triggered_score(s.trace_id, s.span_id, s.binding),
        )
        .distinct()
        .subquery()
    )
    scored: dict[str, int] = dict(
        connection.execute(select(runs.c.binding, func.count()).group_by(runs.c.binding)).all()
    )
    statuses: dict[str, dict[str, int]] = defaultdict(dict)
    for name, status, count in connection.execute(
        select(s.binding, s.status, func.count())
        .where(*in_range(SCORES))
        .group_by(s.binding, s.status)
    ):
        statuses[name][status] = count
    eligible = {name: (int(count), int(count)) for name, count in sampled_by_binding}
    for name, found in statuses.items():
        if NOT_TRIGGERED in found:
            total, sampled = eligible.get(name, (0, 0))
            eligible[name] = (total + found[NOT_TRIGGERED], sampled)
    for name, unsampled in unsampled_by_binding:
        total, sampled = eligible.get(name, (0, 0))
        eligible[name] = (total + int(unsampled), sampled)
    # Traces no binding sampled were counted, not loaded: each is one eligible, unsampled run.
    # (Their minute buckets are kept whole at the range's edges.)
    t = TALLIES.c
    for name, unsampled in connection.execute(
        select(t.binding, func.sum(t.unsampled))
        .where(*in_range(TALLIES, "minute"))
        .group_by(t.binding)
    ):
        total, sampled = eligible.get(name, (0, 0))
        eligible[name] = (total + int(unsampled), sampled)
    stages = _cascade_stages(connection, since, until, list(statuses), scored)
    return [
        Coverage(
            binding=name,
            eligible=eligible.get(name, (0, 0))[0],
            sampled=eligible.get(name, (0, 0))[1],
            scored=int(scored.get(name, 0)),
            statuses=statuses.get(name, {}),
            cascade=stages.get(name),
        )
        for name in sorted(set(eligible) | set(statuses))
    ]


def _cascade_stages(
    connection: Connection,
    since: datetime | None,
    until: datetime | None,
    bindings: Sequence[str],
    scored: dict[str, int],
) -> dict[str, CascadeStages]:
    """Each cascade binding's stages, from its rows' ``steps.cascade`` (what triggered each).

    A binding is taken for a cascade when its newest row of the range says so (one row read
    per binding, by its index), and only cascades' rows are then read whole, so the dashboard
    parses no other binding's steps; the upstream's scored runs are counted over the same
    range, whatever binding the coverage was asked for."""
    s = SCORES.c
    window: list[ColumnElement[bool]] = [true()]
    if since is not None:
        window.append(s.created_at >= since)
    if until is not None:
        window.append(s.created_at < until)
    cascades = [
        name
        for name in bindings
        if _cascade_of(
            connection.execute(
                select(s.steps)
                .where(*window, s.binding == name)
                .order_by(s.created_at.desc())
                .limit(1)
            ).scalar()
        ).get("after")
        is not None
    ]
    if not cascades:
        return {}
    found: dict[str, CascadeStages] = {}
    tally: dict[tuple[str, Any, Any], tuple[int, float]] = {}
    # Steps are compressed (PackedJSON), so they are grouped here rather than in SQL.
    for name, steps, cost in connection.execute(
        select(s.binding, s.steps, s.cost_usd).where(*window, s.binding.in_(cascades))
    ):
        cascade = _cascade_of(steps)
        key = (name, cascade.get("after"), cascade.get("trigger"))
        count, spent = tally.get(key, (0, 0.0))
        tally[key] = (count + 1, spent + float(cost or 0.0))
    rows = [(*key, count, cost) for key, (count, cost) in tally.items()]
    for name, upstream, kind, count, cost in rows:
        stage = found.get(name)
        if stage is None:
            stage = found[name] = {
                "after": "",
                "upstream_scored": 0,
                "upstream_errored": 0,
                "flagged": 0,
                "explored": 0,
                "not_triggered": 0,
                "scored": int(scored.get(name, 0)),
                "cost_usd": 0.0,
            }
        stage["after"] = upstream or stage["after"]
        stage["cost_usd"] += float(cost or 0.0)
        if kind == "flagged":
            stage["flagged"] += int(count)
        elif kind == "explored":
            stage["explored"] += int(count)
        elif kind == "none":
            stage["not_triggered"] += int(count)
    for stage in found.values():
        if stage["after"]:
            stage["upstream_scored"], stage["upstream_errored"] = _upstream_runs(
                connection, window, stage["after"]
            )
    return found


def _cascade_of(steps: Any) -> dict[str, Any]:
    """A score's ``steps.cascade`` (empty when it has none)."""
    cascade = steps.get("cascade") if isinstance(steps, dict) else None
    return cascade if isinstance(cascade, dict) else {}


def _upstream_runs(
    connection: Connection, window: Sequence[ColumnElement[bool]], upstream: str
) -> tuple[int, int]:
    """The distinct runs ``upstream`` scored ``ok``, and those its scoring only errored on:
    the two kinds of verdict a cascade's gate decides from. (Counting the ``ok`` ones alone
    showed a cascade on errors flagging 80 of 20.)"""
    s = SCORES.c
    # Per run: 1 when any of its rows is ok, 0 when its rows are errors only.
    runs = (
        select(func.max(case((s.status == "ok", 1), else_=0)).label("ok"))
        .where(*window, s.binding == upstream, s.status.in_(("ok", "error")))
        .group_by(s.trace_id, s.span_id)
        .subquery()
    )
    count, scored = connection.execute(select(func.count(), func.sum(runs.c.ok))).one()
    return int(scored or 0), int(count) - int(scored or 0)


class JudgeCostDay(TypedDict):
    """Judge spend and judged scores of one UTC day."""

    day: datetime
    cost_usd: float
    count: int


def judge_cost_per_day(
    connection: Connection, since: datetime, until: datetime
) -> list[JudgeCostDay]:
    """Judge spend and judged scores per UTC day, oldest first (days without judging left out):
    the rows of the judged series only, each series' range read by its index."""
    c = SCORE_ROWS.c
    day = bucket_start(86_400, c.created_at).label("day")
    judged = select(SERIES.c.id).where(SERIES.c.judge_model.is_not(None))
    statement = (
        select(day, func.sum(c.cost_usd), func.count())
        .where(c.series_id.in_(judged), c.created_at >= since, c.created_at < until)
        .group_by(day)
        .order_by(day)
    )
    return [
        {
            "day": datetime.fromtimestamp(int(start), UTC),
            "cost_usd": float(cost or 0.0),
            "count": int(count),
        }
        for start, cost, count in connection.execute(statement)
    ]


# --- names ----------------------------------------------------------------------------------


def binding_has_scores(connection: Connection, binding: str) -> bool:
    """Some score row carries ``binding``: a binding removed from the configuration keeps its
    history readable through the API rather than turning into a 404. One probe of the
    ``(binding, created_at)`` index."""
    found = connection.execute(
        select(SCORES.c.id).where(SCORES.c.binding == binding).limit(1)
    ).first()
    return found is not None
