"""Scored runs out of the store as Mastra-shaped runs, so a production failure becomes a CI case.

Each line is ``{traceId, spanId, agentName, input, output, groundTruth?}``, which
``tracescore score`` reads back (:mod:`tracescore.offline.inputs`); ``groundTruth`` is the run's
latest feedback under the binding (``{value, label, comment, author}``) where it has one, and
``tracescore`` says which score put the run in the export.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from tracescore.extract import extract_runs
from tracescore.extract.base import Convention
from tracescore.extract.registry import CONVENTIONS
from tracescore.store import SpanStore
from tracescore.store.feedback import latest_verdicts
from tracescore.store.scores import exported_scores

BATCH = 200
"""Traces loaded at once."""


def export_runs(
    store: SpanStore,
    binding: str,
    *,
    since: datetime,
    below: float | None = None,
    conventions: list[Convention] = CONVENTIONS,
) -> Iterator[dict[str, Any]]:
    """The runs ``binding`` scored since ``since`` (below ``below``), rebuilt from their traces
    (with ``conventions``, the service's claim order); runs whose trace is no longer stored are
    skipped."""
    scored = exported_scores(store.engine, binding, since, below)
    for start in range(0, len(scored), BATCH):
        batch = scored[start : start + BATCH]
        trace_ids = sorted({row.trace_id for row in batch})
        traces = store.load_traces(trace_ids)
        truths = latest_verdicts(store.engine, binding, trace_ids)
        runs = {
            (run.trace_id, run.span_id): run
            for trace in traces.values()
            for run in extract_runs(trace, conventions)
        }
        for row in batch:
            run = runs.get((row.trace_id, row.span_id))
            if run is None:
                continue
            item: dict[str, Any] = {
                "traceId": run.trace_id,
                "spanId": run.span_id,
                "agentName": run.agent_name,
                "input": run.mastra_input(),
                "output": run.mastra_output(),
            }
            truth = truths.get((row.trace_id, row.span_id)) or truths.get((row.trace_id, None))
            if truth is not None:
                item["groundTruth"] = truth
            item["tracescore"] = {
                "binding": binding,
                "score": row.score,
                "scorerVersion": row.scorer_version,
                "reason": row.reason,
            }
            yield item
