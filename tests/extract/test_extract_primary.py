"""``extract_runs(trace, only_primary=True)``: the live pipeline's shortcut when every binding
targets the agent builds just the primary runs, and they are exactly the full extraction's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs, primary_runs
from tracescore.ingest.files import load_traces

TRACES = load_traces([CAPTURES])


def _without_default_times(value: Any) -> Any:
    """A message with no timestamp of its own is stamped with the time it was built: the two
    extractions run a moment apart, so those stamps differ and say nothing."""
    if isinstance(value, dict):
        return {
            key: _without_default_times(item) for key, item in value.items() if key != "created_at"
        }
    if isinstance(value, list):
        return [_without_default_times(item) for item in value]
    return value


@pytest.mark.parametrize("trace", TRACES, ids=lambda trace: trace.trace_id)
def test_only_primary_runs_are_the_full_extractions_primary_runs(trace) -> None:
    full = [run.model_dump(mode="json") for run in primary_runs(extract_runs(trace))]
    fast = [run.model_dump(mode="json") for run in extract_runs(trace, only_primary=True)]
    assert _without_default_times(fast) == _without_default_times(full)


def test_the_captures_hold_every_kind_of_primary_run() -> None:
    """The comparison above covers agent runs, wrappers that are not primary, and raw clients'
    LLM runs standing for their agent."""
    kinds = {(run.kind, run.primary) for trace in TRACES for run in extract_runs(trace)}
    assert {
        ("agent", True),
        ("agent", False),
        ("llm", True),
        ("llm", False),
        ("tool", False),
    } <= kinds
