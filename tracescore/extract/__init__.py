"""Rebuild agent runs from spans of any convention (one module per convention).

``extract_runs(trace)`` is the entry point: every convention module in
:mod:`tracescore.extract.registry` reads the spans it recognises, and
:mod:`tracescore.extract.runs` builds agent, LLM and tool runs from the result.
``runs_from_mastra_json`` reads runs given directly in Mastra's scorer shape.
"""

from tracescore.extract.mastra_json import MastraRunError, run_from_mastra, runs_from_mastra_json
from tracescore.extract.model import AgentRun, SpanInfo
from tracescore.extract.runs import (
    RUN_KINDS,
    iter_runs,
    primary_runs,
    read_spans,
    run_document,
    select_runs,
)
from tracescore.extract.runs import build_runs as extract_runs

__all__ = [
    "RUN_KINDS",
    "AgentRun",
    "MastraRunError",
    "SpanInfo",
    "extract_runs",
    "iter_runs",
    "primary_runs",
    "read_spans",
    "run_document",
    "run_from_mastra",
    "runs_from_mastra_json",
    "select_runs",
]
