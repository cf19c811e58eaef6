"""The trace page: a trace's rebuilt runs next to their scores, and its raw spans as a tree and a
timeline, bounded so that a huge trace's page stays a few hundred KB.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from tracescore.extract import iter_runs
from tracescore.extract.base import Convention
from tracescore.extract.linked import joined_from, read_with_steps
from tracescore.extract.model import AgentRun
from tracescore.extract.registry import CONVENTIONS
from tracescore.pipeline.recomputed_steps import StepsRecompute
from tracescore.spans import Span
from tracescore.store import SpanStore
from tracescore.store.call_links import StoredLinks
from tracescore.store.score_reads import trace_scores, trace_version
from tracescore.store.scores import StoredScore
from tracescore.web.trace_json import log_json, span_json
from tracescore.web.waterfall import waterfall

MAX_RAW_SPANS = 300
"""Raw spans shown on a trace page; the rest are one click away in ``/api/v1/traces/{id}``."""
MAX_RUNS = 200
"""Runs a trace page shows, and inner runs it lists; all of them are in
``/api/v1/traces/{id}/runs``. A 20,000-span trace's page then stays a few hundred KB."""


@dataclass
class RunView:
    run: AgentRun
    scores: list[StoredScore] = field(default_factory=list)


@dataclass
class SpanView:
    span: Span
    depth: int
    raw: dict[str, Any]


def trace_page(
    store: SpanStore,
    trace_id: str,
    conventions: list[Convention] = CONVENTIONS,
    recompute: StepsRecompute | None = None,
) -> dict[str, Any] | None:
    """The rebuilt runs of a trace (read with ``conventions``, the service's claim order) next
    to their scores, and the raw spans; None if unknown. ``recompute`` fills in the steps of
    code scores, stored without them, from the runs rebuilt here."""
    trace = store.load_trace(trace_id)
    with store.engine.connect() as connection:
        version = trace_version(connection, trace_id)
        scores = trace_scores(connection, trace_id)
    if trace is None and not scores:
        return None
    by_span: dict[str, list[StoredScore]] = defaultdict(list)
    for row in scores:
        by_span[row["span_id"]].append(row)
    run_ids: set[str] = set()
    shown: list[RunView] = []
    others: list[AgentRun] = []
    scored: dict[str, AgentRun] = {}
    shown_count = other_count = 0
    # Runs one at a time, the first MAX_RUNS of each list kept: a huge trace's 20,000 runs
    # were 220 MB of objects at once, for a page that shows 400 of them.
    read = functools.partial(iter_runs, conventions=conventions)
    links = StoredLinks.of(store)
    steps_from = joined_from(trace_id, links) if trace is not None else []
    runs = read_with_steps(trace, links, read, steps_from) if trace is not None else ()
    for run in runs:
        run_ids.add(run.span_id)
        if run.span_id in by_span:
            scored[run.span_id] = run
        if run.primary or run.span_id in by_span:
            shown_count += 1
            if len(shown) < MAX_RUNS:
                shown.append(RunView(run, by_span.get(run.span_id, [])))
        else:
            other_count += 1
            if len(others) < MAX_RUNS:
                others.append(run)
    if recompute is not None:
        recompute.fill(scores, lambda _trace, _spans: scored if trace is not None else None)
    orphans = [row for row in scores if row["span_id"] not in run_ids]
    tree = _span_tree(trace.spans, MAX_RAW_SPANS) if trace is not None else []
    return {
        "version": version,
        "live_trace": trace_id,
        "trace_id": trace_id,
        "summary": store.trace_summary(trace_id),
        "runs": shown,
        "run_count": shown_count,
        "other_runs": others,
        "other_run_count": other_count,
        "orphan_scores": orphans,
        "spans": tree,
        "timeline": waterfall([(view.span, view.depth) for view in tree]),
        "span_count": len(trace.spans) if trace is not None else 0,
        "steps_from": steps_from,
        "trace_cut": trace.cut if trace is not None else None,
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
