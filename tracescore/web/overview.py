"""The overview page: the alerts firing now, one chart card per binding with its alert bands and
legend, judge spend, coverage, and the lowest and newest scores.

The trends behind the charts come cached from :mod:`tracescore.web.trends`; alerts, bands and
score lists are read per request. Everything here is synchronous database work the router runs
in the thread pool.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup

from tracescore.monitor.config import AlertRule
from tracescore.store import Connection, Database
from tracescore.store.alerts import firing_alerts
from tracescore.store.score_aggregates import CoverageFigures, aggregate_scores
from tracescore.store.score_reads import (
    ScoreFilter,
    latest_scores,
    live_version,
    lowest_scores,
    oldest_score,
)
from tracescore.web import timerange
from tracescore.web.alerting import (
    Period,
    firing_periods,
    periods_of,
    runs_url,
    segment_text,
    stale_since,
)
from tracescore.web.cache import ExpiringCache
from tracescore.web.charts import Band, Bucket, Series, score_chart
from tracescore.web.timerange import RECENT, SPLITS, ViewState, Window
from tracescore.web.trends import (
    Aggregates,
    Line,
    Trend,
    merge_buckets,
    read_aggregates,
    segment_name,
)

LIST_LIMIT = 25
"""Rows of the lowest scores' list."""
PALETTE_SIZE = 8
"""Colours of segment lines in the stylesheet (``s0``…``s7``)."""


@dataclass
class LegendEntry:
    """A split chart's line as its legend lists it: name, colour, totals, firing or not."""

    name: str
    colour: int | None
    count: int
    mean: float | None
    runs_url: str
    firing: bool = False


@dataclass
class BindingPanel:
    """One chart card: a binding's trend and its totals over the window."""

    binding: str
    chart: Markup
    count: int = 0
    mean: float | None = None
    attempted: int = 0
    errors: int = 0
    coverage: CoverageFigures | None = None
    legend: list[LegendEntry] = field(default_factory=list)
    firing: int = 0
    """Alerts firing now on this chart."""
    alerting: list[LegendEntry] = field(default_factory=list)
    """Lines of the segments firing now, drawn over the unsplit chart."""

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.attempted if self.attempted else None


def aggregates_ttl(window: Window) -> float:
    """How long aggregates may be reused: half a bucket, between 1 and 15 seconds."""
    return min(15.0, max(1.0, window.bucket.total_seconds() / 2))


def default_window(engine: Database, cache: ExpiringCache, now: datetime) -> str:
    """The preset a bare ``/`` shows, from how old the data is (re-read every few seconds)."""

    def read() -> str:
        with engine.connect() as connection:
            oldest, older = oldest_score(connection, now - RECENT)
        return timerange.default_window(now, oldest, older)

    return cache.get((str(engine.url), "default-window"), 5.0, read)


def overview(
    engine: Database,
    bindings: list[str],
    window: Window,
    view: ViewState,
    cache: ExpiringCache,
    rules: Sequence[AlertRule] = (),
) -> dict[str, Any]:
    """Alerts, one chart per binding, judge spend, coverage, the lowest and the newest scores.

    Alerts, their bands and the score lists are read on every request; the aggregates come
    from ``cache``. Charts are drawn per request (cheap) because their bands change live.
    """
    column = SPLITS.get(view.split or "")
    summary = cache.get(
        (str(engine.url), tuple(bindings), window, column),
        aggregates_ttl(window),
        lambda: read_aggregates(engine, window, column),
    )
    where = ScoreFilter(scorer=view.scorer, agent=view.agent, model=view.model)
    ranged = replace(where, binding=view.binding, since=window.since, until=window.until)
    now = datetime.now(UTC)
    with engine.connect() as connection:
        version = live_version(connection)
        firing = firing_alerts(connection)
        periods = firing_periods(connection, rules, window.since, window.until, firing)
        by_name = {rule.name: rule for rule in rules}
        alerts = [
            dict(alert, stale=stale_since(connection, by_name.get(alert["rule"]), alert, now))
            for alert in firing
        ]
        lowest = lowest_scores(connection, ranged, LIST_LIMIT)
        latest = latest_scores(connection, ScoreFilter(), 15)
        names = sorted(set(bindings) | set(summary.trends) | set(summary.coverage))
        shown = {
            name: periods_of(periods, name, summary.scorers.get(name, set()))
            for name in names
            if view.binding in (None, name)
        }
        alerting = {
            name: [] if view.split else _alerting_lines(connection, name, found, window)
            for name, found in shown.items()
        }
    panels = [
        _panel(name, summary, window, view, found, now, alerting[name])
        for name, found in shown.items()
    ]
    return {
        "version": version,
        "window": window,
        "alerts": alerts,
        "panels": panels,
        "cost_chart": summary.cost_chart,
        "cost_total": summary.cost_total,
        "coverage": [summary.coverage[name] for name in sorted(summary.coverage)],
        "choices": summary.choices,
        "lowest": lowest,
        "latest": latest,
    }


_SEGMENT_FILTERS = {"agent", "service", "model", "scorer_version"}
"""Alert segment keys that are score columns a :class:`ScoreFilter` narrows by."""


def _alerting_lines(
    connection: Connection, binding: str, periods: list[Period], window: Window
) -> list[tuple[dict[str, Any], Series]]:
    """The line of each segment an alert on this chart is firing for now, for the unsplit chart.

    Without it the chart hid what the banner announced: the overall mean barely moves (it may
    even rise) when one agent of several drops. Segments with an empty value (runs without an
    agent name) cannot be told apart by a filter and are left to ``?split=``."""
    lines = []
    for period in periods:
        segment = period.segment
        if (
            period.end is not None
            or not segment
            or any(key not in _SEGMENT_FILTERS or value is None for key, value in segment.items())
        ):
            continue
        where = ScoreFilter(
            binding=binding,
            since=window.since,
            until=window.until,
            **{key: str(value) for key, value in segment.items()},
        )
        found = aggregate_scores(
            connection, where, ["binding"], bucket_seconds=int(window.bucket.total_seconds())
        )
        name = segment_text(segment)
        # one key: the segment's own colour, as on the chart split by that key
        own = segment_name(next(iter(segment.values()))) if len(segment) == 1 else name
        lines.append(
            (
                segment,
                Series(
                    name,
                    segment_colour(own),
                    merge_buckets(found),
                    _bucket_runs(binding, segment, window),
                    [(period.start, window.until)],
                ),
            )
        )
    return lines


def _bucket_runs(
    binding: str, segment: dict[str, Any], window: Window
) -> Callable[[datetime], str]:
    """The runs page of one bucket of a segment's line."""
    return lambda start: runs_url(binding, None, segment, start, start + window.bucket)


def _panel(
    name: str,
    summary: Aggregates,
    window: Window,
    view: ViewState,
    periods: list[Period],
    now: datetime,
    alerting: Sequence[tuple[dict[str, Any], Series]] = (),
) -> BindingPanel:
    """A binding's card: its chart with drill-down links and alert bands, totals, legend.

    ``alerting`` are the lines of segments firing now, drawn over the unsplit chart."""
    trend = summary.trends.get(name) or Trend([], [], 0, None, 0, 0)
    split = view.split if view.split in SPLITS else None

    def link(segment: dict[str, Any] | None) -> Callable[[datetime], str]:
        return lambda start: runs_url(name, None, segment, start, start + window.bucket)

    def segment_of(line: Line) -> dict[str, Any] | None:
        return None if line.other or line.value is None or split is None else {split: line.value}

    colours = _colours(trend.lines)

    def concerns(period: Period) -> str | None:
        """The name of the line an alert period is about, when the chart is split its way."""
        if split is None or split not in period.segment:
            return None
        return segment_name(period.segment[split])

    def firing(line: Line) -> list[tuple[datetime, datetime]]:
        return [
            (p.start, p.end or window.until)
            for p in periods
            if not line.other and concerns(p) == line.name
        ]

    series = [
        Series(line.name, colours[line.name], line.buckets, link(segment_of(line)), firing(line))
        for line in trend.lines
    ]
    bands = []
    for period in periods:
        line_name = concerns(period)
        bands.append(
            Band(
                period.start,
                period.end or window.until,
                period.rule,
                segment_text(period.segment),
                period.label(),
                colours.get(line_name) if line_name is not None else None,
                period.runs_url(now),
            )
        )
    firing_segments = {concerns(p) for p in periods if p.end is None}
    legend = [
        LegendEntry(
            line.name,
            colours[line.name],
            line.count,
            line.mean,
            runs_url(name, None, segment_of(line), window.since, window.until),
            firing=not line.other and line.name in firing_segments,
        )
        for line in trend.lines
    ]
    bands = [
        replace(
            band,
            colour=next(
                (line.colour for _, line in alerting if line.name == band.segment), band.colour
            ),
        )
        for band in bands
    ]
    chart = score_chart(
        f"{name}: score over time" + (f" by {split}" if split else ""),
        trend.buckets,
        window.since,
        window.until,
        window.bucket,
        series=series,
        bands=bands,
        href=link(None),
        highlights=[line for _, line in alerting],
    )
    return BindingPanel(
        binding=name,
        chart=chart,
        count=trend.count,
        mean=trend.mean,
        attempted=trend.attempted,
        errors=trend.errors,
        coverage=summary.coverage.get(name),
        legend=legend,
        firing=sum(p.end is None for p in periods),
        alerting=[
            LegendEntry(
                line.name,
                line.colour,
                sum(b.count for b in line.buckets),
                _mean_of(line.buckets),
                runs_url(name, None, segment, window.since, window.until),
                firing=True,
            )
            for segment, line in alerting
        ],
    )


def segment_colour(name: str) -> int:
    """A segment's own palette index, from its name alone: weather-bot keeps its colour at
    every range and on every chart, whatever its rank by volume (a rank-based colour changed
    when another agent overtook it). CRC-32 because Python's ``hash`` of a string differs
    between processes, so replicas would disagree."""
    return zlib.crc32(name.encode("utf-8")) % PALETTE_SIZE


def _colours(lines: Sequence[Line]) -> dict[str, int | None]:
    """Palette indexes of a chart's lines: each segment's own colour unless a segment whose
    name sorts first already took it on this chart (two names hashing alike), then the next
    free one; "other" is grey. Settling clashes in name order, not rank order, keeps the
    outcome the same however the volumes move."""
    used: set[int] = set()
    found: dict[str, int | None] = {}
    for line in sorted(lines, key=lambda line: line.name):
        if line.other:
            found[line.name] = None
            continue
        colour = segment_colour(line.name)
        while colour in used:  # TOP_SEGMENTS < PALETTE_SIZE: a free one is left
            colour = (colour + 1) % PALETTE_SIZE
        used.add(colour)
        found[line.name] = colour
    return found


def _mean_of(buckets: Sequence[Bucket]) -> float | None:
    """The mean of all scores of ``buckets`` (their means weighted by their counts)."""
    count = sum(b.count for b in buckets if b.mean is not None)
    return sum(b.mean * b.count for b in buckets if b.mean is not None) / count if count else None
