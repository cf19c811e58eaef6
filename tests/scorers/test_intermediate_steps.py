"""A loop's call that only asked for tools is not scored as an answer, nor counted as a turn of
its conversation (issue 45, item 1).

Raw client instrumentations start a trace per request, so a hand-written loop's calls arrive as
separate traces, each rebuilt as a run of its own. The captured weather loops of three client
instrumentations hold exactly that: a first trace whose call answered only with
``get_weather``'s call, a second whose call answered in text. Every scorer that reads the answer
calls the first ``not_scorable`` (without asking a judge), and scores the second.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from tests.support.judge_server import JudgeServer
from tests.support.loop_traces import loop_trace, weather_loop
from tests.support.paths import CAPTURES
from tests.support.scorer_builds import CODE_READING_THE_ANSWER, build
from tests.support.scorer_names import judge_scorer_names
from tracescore.extract import extract_runs
from tracescore.extract.content import awaits_tool_results
from tracescore.extract.model import AgentRun
from tracescore.ingest.files import load_traces
from tracescore.judge import LiteLLMJudge
from tracescore.offline.conversations import by_conversation
from tracescore.pipeline.batches import trace_turn
from tracescore.scorers.unscorable import INTERMEDIATE_STEP_REASON
from tracescore.spans import Trace

LOOPS = (
    "openinference-openai/tool_call",
    "otel-genai-openai-v2-latest/tool_call",
    "otel-genai-openai-v2-legacy/tool_call",
)


def _primary_runs(folder: str) -> list[AgentRun]:
    runs = [
        run
        for trace in load_traces([CAPTURES / folder])
        for run in extract_runs(trace, only_primary=True)
    ]
    return sorted(runs, key=lambda run: run.start_time or 0)


def _step_and_answer(folder: str) -> tuple[AgentRun, AgentRun]:
    """The loop's call that asked for the tool, and the one that answered."""
    runs = _primary_runs(folder)
    steps = [r for r in runs if not r.output or not r.output[0].content.content]
    answers = [r for r in runs if r.output and r.output[0].content.content]
    assert len(steps) == 1 and len(answers) == 1, folder
    return steps[0], answers[0]


@pytest.mark.parametrize("folder", LOOPS)
@pytest.mark.parametrize("name", CODE_READING_THE_ANSWER)
def test_code_scorers_do_not_score_a_tool_call_only_step(name: str, folder: str) -> None:
    step, answer = _step_and_answer(folder)
    result = build(name).run_sync(step)
    assert result.status == "not_scorable" and result.score is None
    assert result.reason == INTERMEDIATE_STEP_REASON
    scored = build(name).run_sync(answer)
    assert scored.status == "ok" and scored.score is not None


@pytest.mark.parametrize("name", [n for n in judge_scorer_names() if n != "tool-call-accuracy-llm"])
async def test_judge_scorers_do_not_ask_the_judge_about_a_tool_call_only_step(
    name: str, server: JudgeServer, judge: LiteLLMJudge
) -> None:
    step, _ = _step_and_answer(LOOPS[0])
    result = await build(name, judge).run(step)
    assert result.status == "not_scorable" and result.reason == INTERMEDIATE_STEP_REASON
    assert server.count == 0


def test_tool_call_accuracy_still_judges_the_step_s_call() -> None:
    """The step's tool call is what tool-call scorers judge: that is scored, not skipped."""
    step, _ = _step_and_answer(LOOPS[0])
    result = build("tool-call-accuracy-code").run_sync(step)
    assert result.status == "ok" and result.score == 1.0


def _loop_as_separate_traces() -> list[AgentRun]:
    """A two-call loop whose calls arrived as traces of their own, both naming one conversation
    (``gen_ai.conversation.id``), as a client instrumentation that starts a trace per request
    sends it."""
    loop = weather_loop("c1", "Paris", "sunny")
    (step, answer) = loop_trace(loop, "otel-genai", tool_spans=False).spans
    traces = [
        Trace(
            trace_id,
            [
                dataclasses.replace(
                    span,
                    trace_id=trace_id,
                    attributes={**span.attributes, "gen_ai.conversation.id": "chat-1"},
                )
            ],
        )
        for trace_id, span in (("a" * 32, step), ("b" * 32, answer))
    ]
    return [run for trace in traces for run in extract_runs(trace, only_primary=True)]


def test_a_step_that_arrived_as_its_own_trace_is_no_turn_of_its_conversation() -> None:
    """The step's trace holds the question and a tool call; the answering trace holds the
    question again, the call with its result and the answer: that one is the turn."""
    runs = _loop_as_separate_traces()
    assert [awaits_tool_results(run) for run in runs] == [True, False]
    (conversation,) = by_conversation(runs, max_turns=20)
    assert [(t.trace_id, t.user, t.answer) for t in conversation.turns] == [
        ("b" * 32, "Weather in Paris?", "Sunny.")
    ]
    now = datetime.now(UTC)
    assert trace_turn(runs[:1], now, 60.0) is None
    turn = trace_turn(runs[1:], now, 60.0)
    assert turn is not None and (turn.conversation_id, turn.trace_id) == ("chat-1", "b" * 32)
