"""The answered runs of every capture's traces (what an insights pass reads of a failed run,
:mod:`tracescore.extract.runs.answered`) are the primary runs' own fields: same runs, same
order, same input, output, status, error, agent, model and start."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.extract.runs.answered import AnsweredRun, answered_runs
from tracescore.ingest.files import load_traces
from tracescore.spans import Trace

FOLDERS = sorted(
    folder
    for folder in {path.parent for path in CAPTURES.rglob("*") if path.is_file()} - {CAPTURES}
    if folder.relative_to(CAPTURES).parts[0][0] != "_"
)


def _timeless(value: Any) -> Any:
    """A dumped model without its messages' times: a message built with no time takes the
    clock's, different in two builds of the same run."""
    if isinstance(value, dict):
        return {key: _timeless(item) for key, item in value.items() if key != "created_at"}
    if isinstance(value, list):
        return [_timeless(item) for item in value]
    return value


def _fields(run: AgentRun | AnsweredRun) -> dict[str, Any]:
    return {
        "span_id": run.span_id,
        "agent_name": run.agent_name,
        "model": run.model,
        "start_time": run.start_time,
        "status": run.status,
        "error": run.error,
        "input": _timeless(run.input.model_dump()),
        "output": [_timeless(message.model_dump()) for message in run.output],
    }


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: str(f.relative_to(CAPTURES)))
def test_answered_runs_are_the_primary_runs_fields(folder: Any) -> None:
    traces: list[Trace] = load_traces([folder])
    runs = 0
    for trace in traces:
        primary = extract_runs(trace, only_primary=True)
        answered = answered_runs(trace)
        assert [_fields(run) for run in answered] == [_fields(run) for run in primary]
        assert [run.failure() for run in answered] == [
            AnsweredRun.of(run).failure() for run in primary
        ]
        runs += len(primary)
    assert runs or not traces


def test_a_run_that_ended_in_error_says_why_or_that_it_did() -> None:
    run = AnsweredRun(
        "s", None, None, None, "error", None, AgentRun(trace_id="t", span_id="s").input, []
    )
    assert run.failure() == "the run ended in error"
    run.error = "timeout"
    assert run.failure() == "timeout"
    run.status = "ok"
    assert run.failure() is None
