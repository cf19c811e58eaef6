"""What each page shows, gathered from the store: plain data for the templates to lay out.

Everything here is synchronous database work; the router runs it in the thread pool.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from markupsafe import Markup
from sqlalchemy import Engine

from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.monitor.queries import GroupStats, ScoreFilter, aggregate_scores, coverage
from tracescore.monitor.stats import Moments
from tracescore.spans import Span
from tracescore.store import SpanStore
from tracescore.store.api import log_json, span_json
from tracescore.web import queries
from tracescore.web.cache import ExpiringCache
from tracescore.web.charts import Bucket, bar_chart, score_chart, usd

NICE_BUCKETS = [
    timedelta(seconds=s)
    for s in (
        1,
        2,
        5,
        10,
        15,
        30,
        60,
        120,
        300,
        600,
        900,
        1800,
        3600,
        7200,
        10800,
        21600,
        43200,
        86400,
    )
]
TARGET_POINTS = 60
MAX_POINTS = 1440
COST_DAYS = 14
LIST_LIMIT = 25
MAX_RAW_SPANS = 300
"""Raw spans shown on a trace page; the rest are one click away in ``/api/traces/{id}``."""


def pick_bucket(window: timedelta) -> timedelta:
    """The smallest round bucket that keeps a chart at about :data:`TARGET_POINTS` points."""
    return next((b for b in NICE_BUCKETS if window / b <= TARGET_POINTS), NICE_BUCKETS[-1])


@dataclass(frozen=True, slots=True)
class Window:
    since: datetime
    until: datetime
    bucket: timedelta

    @classmethod
    def ending_now(cls, length: timedelta, bucket: timedelta | None) -> Window:
        bucket = bucket or pick_bucket(length)
        if bucket < timedelta(seconds=1) or bucket.microseconds or length / bucket > MAX_POINTS:
            raise ValueError(f"a chart has at most {MAX_POINTS} buckets of whole seconds")
        # End on a bucket boundary so the last bucket is whole and points do not drift.
        now = datetime.now(UTC).timestamp()
        size = bucket.total_seconds()
        until = datetime.fromtimestamp((now // size + 1) * size, UTC)
        return cls(until - length, until, bucket)


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

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.attempted if self.attempted else None


@dataclass(frozen=True, slots=True)
class Aggregates:
    """The overview's slow part: everything computed over all scores of the window."""

    panels: list[BindingPanel]
    coverage: list[dict[str, Any]]
    cost_chart: Markup | None
    cost_total: float
    choices: dict[str, list[str]]


def aggregates_ttl(window: Window) -> float:
    """How long aggregates may be reused: half a bucket, between 1 and 15 seconds."""
    return min(15.0, max(1.0, window.bucket.total_seconds() / 2))


def overview(
    engine: Engine, bindings: list[str], window: Window, where: ScoreFilter, cache: ExpiringCache
) -> dict[str, Any]:
    """Alerts, one chart per binding, judge spend, coverage, the lowest and the newest scores.

    Alerts and score lists are read on every request; the aggregates come from ``cache``.
    """
    summary = cache.get(
        (str(engine.url), tuple(bindings), window), aggregates_ttl(window),
        lambda: _aggregates(engine, bindings, window),
    )  # fmt: skip
    ranged = ScoreFilter(
        scorer=where.scorer,
        agent=where.agent,
        model=where.model,
        since=window.since,
        until=window.until,
    )
    with engine.connect() as connection:
        version = queries.live_version(connection)
        alerts = queries.firing_alerts(connection)
        lowest = queries.lowest_scores(connection, ranged, LIST_LIMIT)
        latest = queries.latest_scores(connection, ScoreFilter(), 15)
    return {
        "version": version,
        "window": window,
        "alerts": alerts,
        "panels": summary.panels,
        "cost_chart": summary.cost_chart,
        "cost_total": summary.cost_total,
        "coverage": summary.coverage,
        "choices": summary.choices,
        "lowest": lowest,
        "latest": latest,
    }


def _aggregates(engine: Engine, bindings: list[str], window: Window) -> Aggregates:
    in_window = ScoreFilter(since=window.since, until=window.until)
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    days = [today - timedelta(days=back) for back in range(COST_DAYS - 1, -1, -1)]
    with engine.connect() as connection:
        trend = aggregate_scores(
            connection, in_window, ["binding"],
            bucket_seconds=int(window.bucket.total_seconds()), quantiles=(0.1, 0.9),
        )  # fmt: skip
        covered = {
            entry.binding: entry.to_dict()
            for entry in coverage(connection, window.since, window.until)
        }
        costs = {
            c["day"]: c
            for c in queries.judge_cost_per_day(connection, days[0], today + timedelta(days=1))
        }
        choices = queries.filter_choices(connection, window.since)

    groups: dict[str, list[GroupStats]] = defaultdict(list)
    for group in trend:
        groups[group.group[0]].append(group)
    panels = []
    for name in sorted(set(bindings) | set(groups) | set(covered)):
        found = sorted(groups.get(name, []), key=lambda g: g.bucket)  # type: ignore[arg-type, return-value]
        buckets = [
            Bucket(
                start=g.bucket,  # type: ignore[arg-type]
                count=g.moments.n,
                mean=None if g.moments.n == 0 else g.moments.mean,
                p10=_finite(g.quantiles.get(0.1)),
                p90=_finite(g.quantiles.get(0.9)),
                errors=g.errors,
                attempted=g.attempted,
            )
            for g in found
        ]
        total = sum((g.moments for g in found), Moments())  # moments add up: no second query
        panels.append(
            BindingPanel(
                binding=name,
                chart=score_chart(
                    f"{name}: score over time", buckets, window.since, window.until, window.bucket
                ),
                count=total.n,
                mean=None if total.n == 0 else total.mean,
                attempted=sum(g.attempted for g in found),
                errors=sum(g.errors for g in found),
                coverage=covered.get(name),
            )
        )

    cost_chart = None
    if costs:
        spent = [costs.get(day, {"cost_usd": 0.0, "count": 0}) for day in days]
        cost_chart = bar_chart(
            "judge cost per day (USD)",
            [(f"{day:%m-%d}", c["cost_usd"],
              f"{day:%Y-%m-%d}: {usd(c['cost_usd'])} over {c['count']} judged scores")
             for day, c in zip(days, spent, strict=True)],
        )  # fmt: skip
    return Aggregates(
        panels=panels,
        coverage=sorted(covered.values(), key=lambda entry: entry["binding"]),
        cost_chart=cost_chart,
        cost_total=sum(c["cost_usd"] for c in costs.values()),
        choices=choices,
    )


def _finite(value: float | None) -> float | None:
    return None if value is None or value != value else value  # NaN is not equal to itself


@dataclass
class RunView:
    run: AgentRun
    scores: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SpanView:
    span: Span
    depth: int
    raw: dict[str, Any]


def trace_page(store: SpanStore, trace_id: str) -> dict[str, Any] | None:
    """The rebuilt runs of a trace next to their scores, and the raw spans; None if unknown."""
    trace = store.load_trace(trace_id)
    with store.engine.connect() as connection:
        version = queries.trace_version(connection, trace_id)
        scores = queries.trace_scores(connection, trace_id)
    if trace is None and not scores:
        return None
    runs = extract_runs(trace) if trace is not None else []
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
    return {
        "version": version,
        "live_trace": trace_id,
        "trace_id": trace_id,
        "summary": store.trace_summary(trace_id),
        "runs": shown,
        "other_runs": others,
        "orphan_scores": orphans,
        "spans": _span_tree(trace.spans)[:MAX_RAW_SPANS] if trace is not None else [],
        "span_count": len(trace.spans) if trace is not None else 0,
        "logs": [log_json(record) for record in trace.logs[:MAX_RAW_SPANS]]
        if trace is not None
        else [],
    }


def _span_tree(spans: list[Span]) -> list[SpanView]:
    """Spans depth-first from their roots, children by start time; orphans count as roots."""
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
    while stack:
        span, depth = stack.pop()
        if span.span_id in seen:  # a parent-link cycle
            continue
        seen.add(span.span_id)
        ordered.append(SpanView(span, depth, span_json(span)))
        kids = sorted(children.get(span.span_id, []), key=lambda s: s.start_time_ns, reverse=True)
        stack.extend((kid, depth + 1) for kid in kids)
    ordered.extend(SpanView(s, 0, span_json(s)) for s in spans if s.span_id not in seen)
    return ordered
