"""The overview's slow part: every binding's trend (and its segments' lines when the chart is
split), coverage, judge spend and the filter choices, computed over all scores of the window.

The overview caches what :func:`read_aggregates` returns for a few seconds
(:func:`~tracescore.web.overview.aggregates_ttl`); everything here is synchronous database work
the router runs in the thread pool.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from markupsafe import Markup

from tracescore.store import Database
from tracescore.store.score_aggregates import (
    CoverageFigures,
    GroupStats,
    Moments,
    aggregate_scores,
    coverage,
    judge_cost_per_day,
)
from tracescore.store.score_reads import ScoreFilter, binding_scorers, filter_choices
from tracescore.web.charts import Bucket, bar_chart, usd
from tracescore.web.timerange import Window

COST_DAYS = 14
"""Days the judge spend chart covers, today included."""
TOP_SEGMENTS = 5
"""Lines a split chart draws per segment; the remaining segments are one "other" line."""
NO_VALUE = "(none)"


def segment_name(value: Any) -> str:
    """A segment value as lines, legends and alert bands name it: runs without one (no agent
    name, say) are the ``(none)`` segment, whether a split or an alert rule found them."""
    return NO_VALUE if value is None else str(value)


@dataclass(frozen=True, slots=True)
class Line:
    """A segment's buckets over the window; ``value`` None for "other"."""

    name: str
    value: Any
    other: bool
    buckets: list[Bucket]
    count: int
    mean: float | None


@dataclass(frozen=True, slots=True)
class Trend:
    """A binding's buckets over the window, and its lines when split (largest first)."""

    buckets: list[Bucket]
    lines: list[Line]
    count: int
    mean: float | None
    attempted: int
    errors: int


@dataclass(frozen=True, slots=True)
class Aggregates:
    """The overview's slow part: everything computed over all scores of the window."""

    trends: dict[str, Trend]
    scorers: dict[str, set[str]]
    """Binding → scorer ids it stored in the window (which charts a scorer's alert is on)."""
    coverage: dict[str, CoverageFigures]
    cost_chart: Markup | None
    cost_total: float
    choices: dict[str, list[str]]


def read_aggregates(engine: Database, window: Window, column: str | None) -> Aggregates:
    """Everything the overview computes over all scores of ``window`` (one read transaction),
    with each binding's lines split by ``column`` when one is asked for."""
    in_window = ScoreFilter(since=window.since, until=window.until)
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    days = [today - timedelta(days=back) for back in range(COST_DAYS - 1, -1, -1)]
    seconds = int(window.bucket.total_seconds())
    with engine.connect() as connection:
        trend = aggregate_scores(
            connection, in_window, ["binding"], bucket_seconds=seconds, quantiles=(0.1, 0.9)
        )
        segments = (
            aggregate_scores(connection, in_window, ["binding", column], bucket_seconds=seconds)
            if column
            else []
        )
        covered = {
            entry.binding: entry.to_dict()
            for entry in coverage(connection, window.since, window.until)
        }
        costs = {
            c["day"]: c for c in judge_cost_per_day(connection, days[0], today + timedelta(days=1))
        }
        choices = filter_choices(connection, window.since)
        scorers: dict[str, set[str]] = defaultdict(set)
        for binding, scorer in binding_scorers(connection, window.since, window.until):
            scorers[binding].add(scorer)

    groups: dict[str, list[GroupStats]] = defaultdict(list)
    for group in trend:
        groups[group.group[0]].append(group)
    split: dict[str, list[GroupStats]] = defaultdict(list)
    for group in segments:
        split[group.group[0]].append(group)
    trends = {}
    for name, found in groups.items():
        found.sort(key=lambda g: g.start)
        total = sum((g.moments for g in found), Moments())  # moments add up: no second query
        trends[name] = Trend(
            buckets=[_bucket(g) for g in found],
            lines=_lines(split.get(name, [])),
            count=total.n,
            mean=None if total.n == 0 else total.mean,
            attempted=sum(g.attempted for g in found),
            errors=sum(g.errors for g in found),
        )

    cost_chart = None
    if costs:
        spent = [costs.get(day, {"cost_usd": 0.0, "count": 0}) for day in days]
        cost_chart = bar_chart(
            "judge cost per day (USD)",
            [
                (
                    f"{day:%m-%d}",
                    c["cost_usd"],
                    f"{day:%Y-%m-%d}: {usd(c['cost_usd'])} over {c['count']} judged scores",
                )
                for day, c in zip(days, spent, strict=True)
            ],
        )
    return Aggregates(
        trends=trends,
        scorers=dict(scorers),
        coverage=covered,
        cost_chart=cost_chart,
        cost_total=sum(c["cost_usd"] for c in costs.values()),
        choices=choices,
    )


def _bucket(group: GroupStats) -> Bucket:
    return Bucket(
        start=group.start,
        count=group.moments.n,
        mean=None if group.moments.n == 0 else group.moments.mean,
        p10=_finite(group.quantiles.get(0.1)),
        p90=_finite(group.quantiles.get(0.9)),
        errors=group.errors,
        attempted=group.attempted,
    )


def merge_buckets(groups: Iterable[GroupStats]) -> list[Bucket]:
    """Buckets of several segments added up per bucket start (the "other" line)."""
    by_start: dict[datetime, list[GroupStats]] = defaultdict(list)
    for group in groups:
        by_start[group.start].append(group)
    merged = []
    for start in sorted(by_start):
        parts = by_start[start]
        moments = sum((g.moments for g in parts), Moments())
        merged.append(
            Bucket(
                start=start,
                count=moments.n,
                mean=moments.mean if moments.n else None,
                p10=None,
                p90=None,
                errors=sum(g.errors for g in parts),
                attempted=sum(g.attempted for g in parts),
            )
        )
    return merged


def _line(name: str, value: Any, other: bool, groups: list[GroupStats]) -> Line:
    total = sum((g.moments for g in groups), Moments())
    buckets = merge_buckets(groups)
    return Line(name, value, other, buckets, total.n, total.mean if total.n else None)


def _lines(groups: list[GroupStats]) -> list[Line]:
    """The top :data:`TOP_SEGMENTS` segments by runs, then the rest as one "other" line."""
    by_value: dict[Any, list[GroupStats]] = defaultdict(list)
    for group in groups:
        by_value[group.group[1]].append(group)
    volume = {value: sum(g.attempted for g in found) for value, found in by_value.items()}
    ranked = sorted(by_value, key=lambda value: (-volume[value], str(value)))
    lines = [
        _line(segment_name(value), value, False, by_value[value]) for value in ranked[:TOP_SEGMENTS]
    ]
    rest = [g for value in ranked[TOP_SEGMENTS:] for g in by_value[value]]
    if rest:
        lines.append(_line(f"other ({len(ranked) - TOP_SEGMENTS})", None, True, rest))
    return lines


def _finite(value: float | None) -> float | None:
    return None if value is None or value != value else value  # NaN is not equal to itself
