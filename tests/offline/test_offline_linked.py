"""Offline reading links a folder's traces as the scoring worker links a batch: a loop whose
calls came as traces of their own is one run, a request traced twice is read once."""

from __future__ import annotations

import pytest

from tests.support.extract_support import (
    WEATHER_USER,
    final_answer,
    linked_traces,
    tool_calls,
    user_text,
)
from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs
from tracescore.extract.content import has_content
from tracescore.ingest.files import load_traces
from tracescore.offline.inputs import read_runs


@pytest.mark.parametrize(
    ("library", "scenario"),
    [
        ("openinference-openai", "responses_loop_tool_call"),
        ("openinference-openai", "responses_loop_tool_error"),
        ("anthropic-sdk-openllmetry", "tool_call"),
        ("litellm-otel", "multi_turn"),
    ],
)
def test_a_folder_is_read_with_the_runs_the_worker_reads(library: str, scenario: str) -> None:
    folder = CAPTURES / library / scenario
    traces = load_traces([folder])
    worker = [run for found in linked_traces(traces).values() for run in found.runs]
    offline = read_runs([folder], only_primary=True)
    assert offline == worker
    alone = [run for trace in traces for run in extract_runs(trace, only_primary=True)]
    assert offline != alone  # linking changed something in each of these captures


def test_an_answer_sent_only_tool_outputs_is_read_with_the_step_it_continues() -> None:
    """OpenAI Responses: the answering call is sent ``previous_response_id`` and the tool
    outputs only; read alone it has no user message and no tool call to judge."""
    folder = CAPTURES / "openinference-openai" / "responses_loop_tool_call"
    alone = [
        run
        for trace in load_traces([folder])
        for run in extract_runs(trace, only_primary=True)
        if final_answer(run)
    ]
    assert [user_text(run) for run in alone] == [[]]
    (answer,) = [run for run in read_runs([folder], only_primary=True) if final_answer(run)]
    assert user_text(answer) == [WEATHER_USER]
    assert [call.tool_name for call in tool_calls(answer)] == ["get_weather"]
    assert answer.trace_id == alone[0].trace_id  # kept in the answering call's trace


def test_a_request_traced_twice_is_one_run() -> None:
    """The Anthropic SDK's own content-less span of a request OpenLLMetry read is no run."""
    folder = CAPTURES / "anthropic-sdk-openllmetry" / "tool_call"
    runs = read_runs([folder], only_primary=True)
    assert runs and all(has_content(run) for run in runs)
    traces = load_traces([folder])
    assert sum(not has_content(r) for t in traces for r in extract_runs(t, only_primary=True))
