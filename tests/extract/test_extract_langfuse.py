"""The Langfuse Python SDK: ``@observe`` agents and tools, ``langfuse.openai`` generations.

Captures from langfuse 3.15.0 (``tool_call``, ``multi_turn``, ``tool_error``) and 5.0.4
(``tool_call_v5``, ``conversation``), made by ``_make/capture_langfuse.py`` and
``_make/capture_conversation_langfuse.py``.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.support.extract_support import (
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    assert_weather_agent,
    capture_runs,
    final_answer,
    only,
    span,
    system_text,
    tool_calls,
    trace,
    user_text,
)
from tracescore.extract import extract_runs, primary_runs, read_spans
from tracescore.extract.model import AgentRun
from tracescore.spans import Span

LIBRARY = "langfuse"
CONVENTION = "langfuse"
TOOL_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
LONDON = {"city": "London", "forecast": "rainy", "temperature_c": 14}


def _history(run: AgentRun) -> list[tuple[str, str | None]]:
    return [(m.role, m.content.content) for m in run.input.remembered_messages]


@pytest.mark.parametrize("scenario", ["tool_call", "tool_call_v5"])
def test_observed_agent_with_a_tool_is_one_agent_run(scenario: str) -> None:
    """3.15.0 and 5.0.4 send the same observations: an ``agent``, two ``generation``s and a
    ``tool`` between them; the agent is the one run scored."""
    runs = capture_runs(LIBRARY, scenario)
    (agent,) = only(runs, "agent")
    assert primary_runs(runs) == [agent]
    assert_weather_agent(agent, convention=CONVENTION, usage=(116 + 142, 23 + 23))
    assert agent.usage.total_tokens == 139 + 165
    assert agent.conversation_id == "session-lf-tool_call"
    (tool,) = agent.tools
    assert tool.parameters == TOOL_SCHEMA
    assert [(c.source, orjson.loads(c.content)) for c in agent.context] == [
        ("get_weather", WEATHER_RESULT)
    ]

    first, second = only(runs, "llm", primary=False)
    assert (first.usage.input_tokens, first.usage.output_tokens) == (116, 23)
    assert [c.state for c in tool_calls(first)] == ["call"]  # the call it made, not yet run
    assert orjson.loads(second.context[0].content) == WEATHER_RESULT  # the result it was sent
    assert final_answer(second).startswith(WEATHER_ANSWER)
    (tool_run,) = only(runs, "tool")
    (ran,) = tool_calls(tool_run)
    assert (ran.tool_name, ran.args, ran.result) == (
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert tool_run.agent_name == "WeatherBot"


def test_second_turn_of_a_session_reads_the_first_as_history() -> None:
    runs = capture_runs(LIBRARY, "multi_turn")
    first, second = sorted(primary_runs(runs), key=lambda r: r.start_time)
    assert first.trace_id != second.trace_id
    assert {r.conversation_id for r in runs} == {"session-lf-multi_turn"}
    assert user_text(first) == [WEATHER_USER] and first.input.remembered_messages == []
    assert (second.kind, second.agent_name) == ("agent", "WeatherBot")
    assert system_text(second) == [WEATHER_SYSTEM]
    assert user_text(second) == ["Is it warmer than yesterday?"]
    assert _history(second) == [
        ("user", WEATHER_USER),
        ("assistant", "It is sunny in Paris today, about 21 degrees Celsius."),
    ]
    (call,) = tool_calls(second)
    assert (call.args, call.result, call.state) == ({"city": "Paris"}, WEATHER_RESULT, "result")
    assert final_answer(second) == "Yes: 21 degrees Celsius in Paris today, warmer than yesterday."
    assert (second.usage.input_tokens, second.usage.output_tokens) == (142 + 168, 46)


def test_a_tool_that_raised_is_a_failed_call_and_no_grounding() -> None:
    runs = capture_runs(LIBRARY, "tool_error")
    (agent,) = primary_runs(runs)
    assert user_text(agent) == ["What's the weather in Atlantis, Paris and London today?"]
    atlantis, paris, london = tool_calls(agent)
    assert [c.tool_call_id for c in (atlantis, paris, london)] == [
        "call_070",
        "call_080",
        "call_090",
    ]
    assert (atlantis.args, atlantis.state, atlantis.is_error, atlantis.error_text) == (
        {"city": "Atlantis"},
        "output-error",
        True,
        "Unknown city: Atlantis",
    )
    assert (paris.args, paris.result, paris.state) == ({"city": "Paris"}, WEATHER_RESULT, "result")
    assert (london.args, london.result, london.state) == ({"city": "London"}, LONDON, "result")
    assert [orjson.loads(c.content) for c in agent.context] == [WEATHER_RESULT, LONDON]
    assert final_answer(agent).startswith("I could not find Atlantis. " + WEATHER_ANSWER)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (116 + 142 + 168 + 194, 95)
    failed = next(r for r in only(runs, "tool") if tool_calls(r)[0].args == {"city": "Atlantis"})
    assert (failed.status, failed.error) == ("error", "Unknown city: Atlantis")


def test_without_an_agent_observation_the_generation_is_the_run_not_its_wrapper() -> None:
    """5.0.4's ``conversation``: an ``@observe`` function (type ``span``) around one
    generation per turn; the span is no run, the generation is primary."""
    runs = capture_runs(LIBRARY, "conversation")
    assert {r.kind for r in runs} == {"llm"}
    turns = sorted(primary_runs(runs), key=lambda r: r.start_time)
    assert [t.span_id for t in turns] == [
        r.span_id for r in sorted(runs, key=lambda r: r.start_time)
    ]
    assert [user_text(t) for t in turns] == [
        ["Hi, my name is Ada and I live in Lyon."],
        ["Can you recommend a museum in my city?"],
        ["What is my name?"],
    ]
    assert {tuple(system_text(t)) for t in turns} == {("You are Concierge, a helpful city guide.",)}
    assert _history(turns[2]) == [
        ("user", "Hi, my name is Ada and I live in Lyon."),
        ("assistant", "Nice to meet you, Ada! How can I help you today?"),
        ("user", "Can you recommend a museum in my city?"),
        ("assistant", "In Lyon, the Musee des Confluences is a great choice."),
    ]
    assert final_answer(turns[2]) == "Your name is Ada, and you live in Lyon."
    assert (turns[2].usage.input_tokens, turns[2].usage.output_tokens) == (168, 22)
    assert {t.conversation_id for t in turns} == {"session-lf-ada"}


# --- hand-made spans: what the captures do not show -------------------------------------------


def _observation(name: str, kind: str, attributes: dict, **extra: Any) -> Span:
    return span(
        name, {"langfuse.observation.type": kind, **attributes}, scope="langfuse-sdk", **extra
    )


def test_langfuse_usage_keys_responses_input_and_trace_level_content() -> None:
    """``usage_details`` with Langfuse's own keys; a Responses request; an agent whose input and
    output were set on the trace (``update_current_trace``) rather than the observation."""
    agent = _observation(
        "Planner",
        "agent",
        {"langfuse.trace.input": '"Plan my day"', "langfuse.trace.output": "Done."},
        span_id="a1",
    )
    generation = _observation(
        "OpenAI-generation",
        "generation",
        {
            "langfuse.observation.input": orjson.dumps(
                {"instructions": "Be brief.", "input": "Plan my day"}
            ).decode(),
            "langfuse.observation.output": '{"role": "assistant", "content": "Done."}',
            "langfuse.observation.usage_details": orjson.dumps(
                {"input": 10, "output": 4, "output_tokens_details": {"reasoning_tokens": 2}}
            ).decode(),
            "langfuse.observation.model.name": "o4-mini",
        },
        parent="a1",
    )
    (info_agent, info_llm) = read_spans(trace(agent, generation))
    assert [m.content.content for m in info_agent.input_messages] == ["Plan my day"]
    assert [m.content.content for m in info_agent.output_messages] == ["Done."]
    (run,) = primary_runs(extract_runs(trace(agent, generation)))
    assert (run.kind, run.agent_name, run.model) == ("agent", "Planner", "o4-mini")
    assert system_text(run) == ["Be brief."] and user_text(run) == ["Plan my day"]
    assert final_answer(run) == "Done."
    assert (
        run.usage.input_tokens,
        run.usage.output_tokens,
        run.usage.total_tokens,
        run.usage.reasoning_tokens,
    ) == (10, 4, 14, 2)
    assert info_llm.kind == "llm"


def test_level_error_marks_a_failure_and_hostile_values_never_raise() -> None:
    failed = _observation(
        "lookup",
        "tool",
        {
            "langfuse.observation.level": "ERROR",
            "langfuse.observation.status_message": "timeout",
            "langfuse.observation.input": '{"args": ["x", {"deep": 1}], "kwargs": {"k": 2}}',
        },
    )
    garbage = _observation(
        "OpenAI-generation",
        "generation",
        {
            "langfuse.observation.input": '{"messages": [1, null, {"role": 7}]',  # cut JSON
            "langfuse.observation.output": "[[[]]]",
            "langfuse.observation.usage_details": '{"input": -3, "output": "many", "total": true}',
        },
    )
    tool_info, llm_info = read_spans(trace(failed, garbage))
    assert (tool_info.status, tool_info.error) == ("error", "timeout")
    assert tool_info.tool_call.state == "output-error"
    assert tool_info.tool_call.args == {"args": ["x", {"deep": 1}], "kwargs": {"k": 2}}
    assert llm_info.usage is None
    assert any("invalid JSON" in w for w in llm_info.warnings)
    assert [r.kind for r in extract_runs(trace(failed, garbage))] == ["llm", "tool"]
