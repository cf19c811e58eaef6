"""What each page shows, gathered from the store: plain data for the templates to lay out.

Everything here is synchronous database work; the router runs it in the thread pool.
"""

from __future__ import annotations

import itertools
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from markupsafe import Markup
from sqlalchemy import Connection, Engine

from tracescore.extract import extract_runs
from tracescore.extract.base import Convention
from tracescore.extract.model import AgentRun
from tracescore.extract.registry import CONVENTIONS
from tracescore.monitor.config import AlertRule
from tracescore.monitor.queries import GroupStats, ScoreFilter, aggregate_scores, coverage
from tracescore.monitor.stats import Moments
from tracescore.offline.compare import compare_versions
from tracescore.spans import Span
from tracescore.store import SpanStore
from tracescore.web import queries, timerange
from tracescore.web.alerting import (
    Period,
    firing_periods,
    periods_of,
    runs_url,
    segment_text,
    stale_since,
)
from tracescore.web.cache import ExpiringCache
from tracescore.web.charts import Band, Bucket, Series, bar_chart, score_chart, usd
from tracescore.web.timerange import RECENT, SPLITS, ViewState, Window
from tracescore.web.traces_api import log_json, span_json
from tracescore.web.waterfall import waterfall

COST_DAYS = 14
LIST_LIMIT = 25
RUNS_LIMIT = 200
"""Rows a bucket's runs page lists (lowest first); the count says how many more there are."""
TOP_SEGMENTS = 5
"""Lines a split chart draws per segment; the remaining segments are one "other" line."""
PALETTE_SIZE = 8
"""Colours of segment lines in the stylesheet (``s0``…``s7``)."""
MAX_RAW_SPANS = 300
"""Raw spans shown on a trace page; the rest are one click away in ``/api/v1/traces/{id}``."""
MAX_RUNS = 200
"""Runs a trace page shows, and inner runs it lists; all of them are in
``/api/v1/traces/{id}/runs``. A 20,000-span trace's page then stays a few hundred KB."""
NO_VALUE = "(none)"


def segment_name(value: Any) -> str:
    """A segment value as lines, legends and alert bands name it: runs without one (no agent
    name, say) are the ``(none)`` segment, whether a split or an alert rule found them."""
    return NO_VALUE if value is None else str(value)


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
    coverage: dict[str, Any] | None = None
    legend: list[LegendEntry] = field(default_factory=list)
    firing: int = 0
    """Alerts firing now on this chart."""
    alerting: list[LegendEntry] = field(default_factory=list)
    """Lines of the segments firing now, drawn over the unsplit chart."""

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.attempted if self.attempted else None


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
    coverage: dict[str, dict[str, Any]]
    cost_chart: Markup | None
    cost_total: float
    choices: dict[str, list[str]]


def aggregates_ttl(window: Window) -> float:
    """How long aggregates may be reused: half a bucket, between 1 and 15 seconds."""
    return min(15.0, max(1.0, window.bucket.total_seconds() / 2))


def default_window(engine: Engine, cache: ExpiringCache, now: datetime) -> str:
    """The preset a bare ``/`` shows, from how old the data is (re-read every few seconds)."""

    def read() -> str:
        with engine.connect() as connection:
            oldest, older = queries.oldest_score(connection, now - RECENT)
        return timerange.default_window(now, oldest, older)

    return cache.get((str(engine.url), "default-window"), 5.0, read)


def overview(
    engine: Engine,
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
        (str(engine.url), tuple(bindings), window, column), aggregates_ttl(window),
        lambda: _aggregates(engine, bindings, window, column),
    )
    where = ScoreFilter(scorer=view.scorer, agent=view.agent, model=view.model)
    ranged = replace(where, binding=view.binding, since=window.since, until=window.until)
    now = datetime.now(UTC)
    with engine.connect() as connection:
        version = queries.live_version(connection)
        alerts = queries.firing_alerts(connection)
        periods = firing_periods(connection, rules, window.since, window.until, alerts)
        by_name = {rule.name: rule for rule in rules}
        alerts = [
            dict(alert, stale=stale_since(connection, by_name.get(alert["rule"]), alert, now))
            for alert in alerts
        ]
        lowest = queries.lowest_scores(connection, ranged, LIST_LIMIT)
        latest = queries.latest_scores(connection, ScoreFilter(), 15)
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
        if period.end is not None or not segment or any(
            key not in _SEGMENT_FILTERS or value is None for key, value in segment.items()
        ):
            continue
        where = ScoreFilter(binding=binding, since=window.since, until=window.until,
                            **{key: str(value) for key, value in segment.items()})
        found = aggregate_scores(connection, where, ["binding"],
                                 bucket_seconds=int(window.bucket.total_seconds()))
        name = segment_text(segment)
        # one key: the segment's own colour, as on the chart split by that key
        own = segment_name(next(iter(segment.values()))) if len(segment) == 1 else name
        lines.append((segment, Series(
            name, segment_colour(own), _merge(found), _bucket_runs(binding, segment, window),
            [(period.start, window.until)],
        )))  # fmt: skip
    return lines


def _bucket_runs(
    binding: str, segment: dict[str, Any], window: Window
) -> Callable[[datetime], str]:
    """The runs page of one bucket of a segment's line."""
    return lambda start: runs_url(binding, None, segment, start, start + window.bucket)


def _panel(
    name: str, summary: Aggregates, window: Window, view: ViewState,
    periods: list[Period], now: datetime,
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
            Band(period.start, period.end or window.until, period.rule,
                 segment_text(period.segment), period.label(),
                 colours.get(line_name) if line_name is not None else None,
                 period.runs_url(now))
        )
    firing_segments = {concerns(p) for p in periods if p.end is None}
    legend = [
        LegendEntry(
            line.name, colours[line.name], line.count, line.mean,
            runs_url(name, None, segment_of(line), window.since, window.until),
            firing=not line.other and line.name in firing_segments,
        )
        for line in trend.lines
    ]
    bands = [replace(band, colour=next(
        (line.colour for _, line in alerting if line.name == band.segment), band.colour
    )) for band in bands]  # fmt: skip
    chart = score_chart(
        f"{name}: score over time" + (f" by {split}" if split else ""),
        trend.buckets, window.since, window.until, window.bucket,
        series=series, bands=bands, href=link(None),
        highlights=[line for _, line in alerting],
    )
    return BindingPanel(
        binding=name, chart=chart, count=trend.count, mean=trend.mean,
        attempted=trend.attempted, errors=trend.errors, coverage=summary.coverage.get(name),
        legend=legend, firing=sum(p.end is None for p in periods),
        alerting=[
            LegendEntry(line.name, line.colour, sum(b.count for b in line.buckets),
                        _mean_of(line.buckets),
                        runs_url(name, None, segment, window.since, window.until), firing=True)
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


def _merge(groups: Iterable[GroupStats]) -> list[Bucket]:
    """Buckets of several segments added up per bucket start (the "other" line)."""
    by_start: dict[datetime, list[GroupStats]] = defaultdict(list)
    for group in groups:
        by_start[group.start].append(group)
    merged = []
    for start in sorted(by_start):
        parts = by_start[start]
        moments = sum((g.moments for g in parts), Moments())
        merged.append(
            Bucket(start=start, count=moments.n, mean=moments.mean if moments.n else None,
                   p10=None, p90=None, errors=sum(g.errors for g in parts),
                   attempted=sum(g.attempted for g in parts))
        )
    return merged


def _line(name: str, value: Any, other: bool, groups: list[GroupStats]) -> Line:
    total = sum((g.moments for g in groups), Moments())
    buckets = _merge(groups)
    return Line(name, value, other, buckets, total.n, total.mean if total.n else None)


def _lines(groups: list[GroupStats]) -> list[Line]:
    """The top :data:`TOP_SEGMENTS` segments by runs, then the rest as one "other" line."""
    by_value: dict[Any, list[GroupStats]] = defaultdict(list)
    for group in groups:
        by_value[group.group[1]].append(group)
    volume = {value: sum(g.attempted for g in found) for value, found in by_value.items()}
    ranked = sorted(by_value, key=lambda value: (-volume[value], str(value)))
    lines = [
        _line(segment_name(value), value, False, by_value[value])
        for value in ranked[:TOP_SEGMENTS]
    ]
    rest = [g for value in ranked[TOP_SEGMENTS:] for g in by_value[value]]
    if rest:
        lines.append(_line(f"other ({len(ranked) - TOP_SEGMENTS})", None, True, rest))
    return lines


def _aggregates(
    engine: Engine, bindings: list[str], window: Window, column: str | None
) -> Aggregates:
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
            c["day"]: c
            for c in queries.judge_cost_per_day(connection, days[0], today + timedelta(days=1))
        }
        choices = queries.filter_choices(connection, window.since)
        scorers: dict[str, set[str]] = defaultdict(set)
        for binding, scorer in queries.binding_scorers(connection, window.since, window.until):
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
            [(f"{day:%m-%d}", c["cost_usd"],
              f"{day:%Y-%m-%d}: {usd(c['cost_usd'])} over {c['count']} judged scores")
             for day, c in zip(days, spent, strict=True)],
        )
    return Aggregates(
        trends=trends,
        scorers=dict(scorers),
        coverage=covered,
        cost_chart=cost_chart,
        cost_total=sum(c["cost_usd"] for c in costs.values()),
        choices=choices,
    )


def _finite(value: float | None) -> float | None:
    return None if value is None or value != value else value  # NaN is not equal to itself


def runs_page(engine: Engine, where: ScoreFilter) -> dict[str, Any]:
    """A bucket's (or an alert's) scores, lowest first, with what they add up to."""
    with engine.connect() as connection:
        version = queries.live_version(connection)
        rows = queries.lowest_scores(connection, where, RUNS_LIMIT, failed_too=True)
        total = queries.count_scores(connection, where)
        stats = next(iter(aggregate_scores(connection, where)), None)  # one group, or none
    moments = stats.moments if stats is not None else Moments()
    return {
        "version": version,
        "rows": rows,
        "total": total,
        "count": moments.n,
        "mean": moments.mean if moments.n else None,
        "errors": stats.errors if stats is not None else 0,
        "limit": RUNS_LIMIT,
    }


def chart_around(where: ScoreFilter, now: datetime) -> str:
    """The overview around a runs page's range, in buckets of that range's length (the one it
    was drilled down from), 30 of them either side but not past now, focused on its binding and
    split by the first segment column it is narrowed by: the way back to the chart."""
    since, until = where.since or now, where.until or now
    span = until - since
    seconds = int(span.total_seconds())
    segments = {"agent": where.agent, "model": where.model, "service": where.service,
                "version": where.scorer_version}
    return ViewState(
        since=timerange.iso(since - span * 30),
        until=timerange.iso(min(now, until + span * 30)),
        bucket=f"{seconds}s" if seconds >= 1 and seconds == span.total_seconds() else None,
        binding=where.binding,
        split=next((name for name, value in segments.items() if value), None),
    ).url("/")


COMPARE_DAYS = 30
"""Versions scored within this many days are offered for comparison."""
DISAGREEMENTS = 25


def compare_page(
    engine: Engine, binding: str | None, version_a: str | None, version_b: str | None,
    threshold: float | None,
) -> dict[str, Any]:
    """``tracescore compare`` for two versions of a binding, and the runs they disagree on most.

    Without versions, the binding's two most recently scored versions are compared (older as A).
    """
    now = datetime.now(UTC)
    with engine.connect() as connection:
        known = queries.scorer_versions(connection, now - timedelta(days=COMPARE_DAYS))
        versions: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for entry in known:
            versions[entry["binding"]].append(entry)  # oldest newest score first
        if binding is None:
            binding = next((name for name, found in versions.items() if len(found) > 1), None)
            binding = binding or next(iter(versions), None)
        recent = [entry["version"] for entry in versions.get(binding or "", [])]
        if version_a is None and version_b is None and len(recent) > 1:
            version_a, version_b = recent[-2], recent[-1]
        rows = (
            queries.disagreements(connection, binding, version_a, version_b, DISAGREEMENTS)
            if binding and version_a and version_b
            else []
        )
    agreement = (
        compare_versions(engine, binding, version_a, version_b, threshold)
        if binding and version_a and version_b
        else None
    )
    return {
        "versions": dict(versions),
        "binding": binding,
        "version_a": version_a,
        "version_b": version_b,
        "threshold": threshold,
        "agreement": agreement,
        "rows": rows,
        "compare_days": COMPARE_DAYS,
    }


@dataclass
class RunView:
    run: AgentRun
    scores: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SpanView:
    span: Span
    depth: int
    raw: dict[str, Any]


def trace_page(
    store: SpanStore, trace_id: str, conventions: list[Convention] = CONVENTIONS
) -> dict[str, Any] | None:
    """The rebuilt runs of a trace (read with ``conventions``, the service's claim order) next
    to their scores, and the raw spans; None if unknown."""
    trace = store.load_trace(trace_id)
    with store.engine.connect() as connection:
        version = queries.trace_version(connection, trace_id)
        scores = queries.trace_scores(connection, trace_id)
    if trace is None and not scores:
        return None
    runs = extract_runs(trace, conventions) if trace is not None else []
    by_span: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in scores:
        by_span[row["span_id"]].append(row)
    run_ids = {run.span_id for run in runs}
    shown = [
        RunView(run, by_span.get(run.span_id, []))
        for run in runs
        if run.primary or run.span_id in by_span
    ]
    others = [run for run in runs if not (run.primary or run.span_id in by_span)]
    orphans = [row for row in scores if row["span_id"] not in run_ids]
    tree = _span_tree(trace.spans, MAX_RAW_SPANS) if trace is not None else []
    return {
        "version": version,
        "live_trace": trace_id,
        "trace_id": trace_id,
        "summary": store.trace_summary(trace_id),
        "runs": shown[:MAX_RUNS],
        "run_count": len(shown),
        "other_runs": others[:MAX_RUNS],
        "other_run_count": len(others),
        "orphan_scores": orphans,
        "spans": tree,
        "timeline": waterfall([(view.span, view.depth) for view in tree]),
        "span_count": len(trace.spans) if trace is not None else 0,
        "logs": [log_json(record) for record in trace.logs[:MAX_RAW_SPANS]]
        if trace is not None
        else [],
    }


def _span_tree(spans: list[Span], limit: int) -> list[SpanView]:
    """The first ``limit`` spans depth-first from their roots, children by start time; orphans
    count as roots. Only those are turned into JSON: a huge trace costs its tree, not its text."""
    ids = {span.span_id for span in spans}
    children: dict[str | None, list[Span]] = defaultdict(list)
    for span in spans:
        parent = span.parent_span_id if span.parent_span_id in ids else None
        children[parent].append(span)
    ordered: list[SpanView] = []
    seen: set[str] = set()
    stack = [
        (span, 0) for span in sorted(children[None], key=lambda s: s.start_time_ns, reverse=True)
    ]
    while stack and len(ordered) < limit:
        span, depth = stack.pop()
        if span.span_id in seen:  # a parent-link cycle
            continue
        seen.add(span.span_id)
        ordered.append(SpanView(span, depth, span_json(span)))
        kids = sorted(children.get(span.span_id, []), key=lambda s: s.start_time_ns, reverse=True)
        stack.extend((kid, depth + 1) for kid in kids)
    rest = (SpanView(s, 0, span_json(s)) for s in spans if s.span_id not in seen)
    ordered.extend(itertools.islice(rest, max(0, limit - len(ordered))))
    return ordered
