"""A pass reads a rebuilt run from its models (:meth:`FailedRun.read_answered`) exactly as it
reads the same run's Mastra-shaped dicts (:meth:`FailedRun.read`, what scorers and exported
runs give): request, answer, error, tool lines and signals, over every capture's runs."""

from __future__ import annotations

from typing import Any

from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs
from tracescore.extract.messages import build_message, executed_call, text_part, tool_result_part
from tracescore.extract.model import AgentRun, RunInput, SystemMessage
from tracescore.extract.runs.answered import AnsweredRun, answered_runs
from tracescore.ingest.files import load_traces
from tracescore.insights.runs import FailedRun
from tracescore.scorers.scorer_run import ScorerRun


def _read(run: AgentRun | AnsweredRun) -> dict[str, Any]:
    failed = FailedRun(run.span_id, run.span_id, 0.0)
    if isinstance(run, AgentRun):
        failed.read(ScorerRun.of(run))
    else:
        failed.read_answered(run)
    return {
        "request": failed.request,
        "answer": failed.answer,
        "error": failed.error,
        "tools": failed.tools,
        "signals": failed.signals,
    }


def test_a_run_reads_the_same_from_its_models_as_from_its_dicts() -> None:
    traces = load_traces([CAPTURES])
    read = [
        (_read(run), _read(AnsweredRun.of(run)))
        for trace in traces
        for run in extract_runs(trace)  # every run, LLM and tool runs too
    ]
    assert len(read) > 500
    assert sum(bool(dicts["tools"]) for dicts, _ in read) > 100
    assert sum(bool(dicts["error"]) for dicts, _ in read) >= 10
    for dicts, models in read:
        assert models == dicts


def test_the_primary_runs_read_the_same_answered_as_whole() -> None:
    for trace in load_traces([CAPTURES]):
        whole = [_read(run) for run in extract_runs(trace, only_primary=True)]
        assert [_read(run) for run in answered_runs(trace)] == whole


def test_shapes_no_capture_has_read_the_same() -> None:
    """A message whose text is in several parts (no ``content``), an empty text last, a call
    with no id in both the parts and the legacy list, a legacy-only call, a user turn in two
    parts and a tagged system prompt."""
    failed_call = executed_call("", "lookup", {"q": 1}, "boom", failed=True)
    legacy_only = executed_call("call_9", "refund", {}, {"ok": True})
    output = build_message(
        "m-out",
        "assistant",
        [
            text_part("first"),
            tool_result_part("", "lookup", "boom", is_error=True),
            text_part("second"),
        ],
    )
    output.content.content = None
    output.content.tool_invocations = [failed_call, legacy_only]
    blank_last = build_message("m-blank", "assistant", [text_part("kept"), text_part("")])
    blank_last.content.content = None
    run = AgentRun(
        trace_id="t",
        span_id="s",
        status="error",
        input=RunInput(
            input_messages=[
                build_message("m-in", "user", [text_part("order 12345 "), text_part("refund?")])
            ],
            system_messages=[SystemMessage(content=[{"type": "text", "text": "Be kind."}])],
            tagged_system_messages={"policy": [SystemMessage(content="Never refund.")]},
        ),
        output=[output, blank_last],
    )
    assert _read(AnsweredRun.of(run)) == _read(run)
    assert _read(run)["answer"] == "second"
    assert _read(run)["tools"][:1] == ["lookup failed: boom"]
