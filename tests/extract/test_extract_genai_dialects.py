"""GenAI dialects claimed by scope: Strands Agents, Semantic Kernel and OpenLIT (issue 31).

Every test reads a capture from the real library (``_make/capture_strands.py``,
``capture_semantic_kernel.py``, ``capture_openlit.py``): a single tool call, a second turn with
history, and a tool that fails for Atlantis before answering for Paris and London.
"""

from __future__ import annotations

import orjson
import pytest

from tests.support.extract_support import (
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    capture_runs,
    final_answer,
    only,
    span,
    system_text,
    tool_calls,
    trace,
    user_text,
)
from tracescore.extract import extract_runs, primary_runs, semantic_kernel
from tracescore.extract.model import AgentRun, ToolInvocation

DESCRIPTION = "Get the current weather for a city."
SECOND_USER = "Is it warmer than yesterday?"
SECOND_ANSWER = "Yes: 21 degrees Celsius in Paris today, warmer than yesterday."
ERROR_USER = "What's the weather in Atlantis, Paris and London today?"
ERROR_ANSWER = "I could not find Atlantis. It is sunny in Paris today, about 21 degrees Celsius"
LONDON_RESULT = {"city": "London", "forecast": "rainy", "temperature_c": 14}


def _primary(library: str, scenario: str) -> list[AgentRun]:
    return sorted(primary_runs(capture_runs(library, scenario)), key=lambda r: r.start_time)


def _call(call: ToolInvocation, name: str, city: str, result: object) -> None:
    assert call.tool_call_id.startswith("call_")
    assert (call.tool_name, call.args, call.result, call.state) == (
        name,
        {"city": city},
        result,
        "result",
    )


def _assert_agent(run: AgentRun, convention: str, user: str) -> None:
    """Who the agent is, what it was told and asked: the same for every turn."""
    assert run.kind == "agent" and run.primary and run.convention == convention
    assert (run.agent_name, run.model) == ("WeatherBot", "gpt-4o-mini")
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [user]
    assert run.warnings == []


def _assert_error_calls(calls: list[ToolInvocation], name: str, error: str) -> None:
    """Atlantis failed (its error kept), then Paris and London answered."""
    atlantis, paris, london = calls
    assert (atlantis.tool_name, atlantis.args, atlantis.state) == (
        name,
        {"city": "Atlantis"},
        "output-error",
    )
    assert atlantis.is_error is True and atlantis.error_text == error
    _call(paris, name, "Paris", WEATHER_RESULT)
    _call(london, name, "London", LONDON_RESULT)
    assert len({c.tool_call_id for c in calls}) == 3


def _assert_tool_runs(runs: list[AgentRun], calls: list[ToolInvocation]) -> None:
    """Each tool run carries the arguments and outcome its agent's call shows."""
    tools = only(runs, "tool")
    assert [t.output[0].content.tool_invocations for t in tools] == [[c] for c in calls]
    for tool, call in zip(tools, calls, strict=True):
        assert user_text(tool) == [orjson.dumps(call.args).decode()]
        assert tool.status == ("error" if call.state == "output-error" else tool.status)


# --- Strands Agents -------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["tool_call", "tool_call_latest_semconv"])
def test_strands_tool_call(scenario: str) -> None:
    """Default semconv (the tool's arguments and result only as span events) and
    ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` read the same."""
    runs = capture_runs("strands", scenario)
    (agent,) = _primary("strands", scenario)
    _assert_agent(agent, "strands", WEATHER_USER)
    assert agent.status == "ok"
    assert agent.input.remembered_messages == []
    (call,) = tool_calls(agent)
    _call(call, "get_weather", "Paris", WEATHER_RESULT)
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (116 + 142, 23 + 23)
    (offered,) = agent.tools
    assert (offered.name, offered.description) == ("get_weather", DESCRIPTION)
    assert offered.parameters is not None and offered.parameters["required"] == ["city"]
    assert [(c.kind, orjson.loads(c.content)) for c in agent.context] == [
        ("tool_result", WEATHER_RESULT)
    ]
    _assert_tool_runs(runs, [call])
    (tool,) = only(runs, "tool")
    assert orjson.loads(final_answer(tool)) == WEATHER_RESULT
    assert len(only(runs, "llm", primary=False)) == 2


def test_strands_tool_error() -> None:
    runs = capture_runs("strands", "tool_error")
    (agent,) = _primary("strands", "tool_error")
    _assert_agent(agent, "strands", ERROR_USER)
    calls = tool_calls(agent)
    _assert_error_calls(calls, "get_weather", "Unknown city: Atlantis")
    assert calls[0].result == "Error: Unknown city: Atlantis"  # what the model was told
    assert final_answer(agent).startswith(ERROR_ANSWER)
    _assert_tool_runs(runs, calls)
    assert [t.status for t in only(runs, "tool")] == ["error", "ok", "ok"]


# --- Semantic Kernel ------------------------------------------------------------------------

SK_TOOL = "WeatherPlugin-get_weather"


def test_semantic_kernel_tool_call() -> None:
    """Content from log records (``event.name`` attribute, JSON-string body); the kernel
    function's ``str()``-ed dict read as the dict it returned."""
    runs = capture_runs("semantic-kernel", "tool_call")
    (agent,) = _primary("semantic-kernel", "tool_call")
    _assert_agent(agent, "semantic-kernel", WEATHER_USER)
    assert agent.input.remembered_messages == []
    (call,) = tool_calls(agent)
    _call(call, SK_TOOL, "Paris", WEATHER_RESULT)
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (116 + 142, 23 + 23)
    (offered,) = agent.tools
    assert (offered.name, offered.description) == (SK_TOOL, DESCRIPTION)
    assert [(c.kind, orjson.loads(c.content)) for c in agent.context] == [
        ("tool_result", WEATHER_RESULT)
    ]
    _assert_tool_runs(runs, [call])
    first, second = sorted(only(runs, "llm"), key=lambda r: r.start_time)
    assert system_text(first) == system_text(second) == [WEATHER_SYSTEM]
    assert user_text(first) == [WEATHER_USER]
    (asked,) = tool_calls(first)
    assert (asked.tool_call_id, asked.state) == (call.tool_call_id, "call")
    assert final_answer(second).startswith(WEATHER_ANSWER)


@pytest.mark.parametrize(
    ("library", "tool"),
    [("strands", "get_weather"), ("semantic-kernel", "WeatherPlugin-get_weather")],
)
def test_agent_multi_turn(library: str, tool: str) -> None:
    """The second turn's run: the new question as input, the first turn as history (its tool
    call joined to its result), its own tool call and answer."""
    first, second = _primary(library, "multi_turn")
    _assert_agent(first, library, WEATHER_USER)
    _assert_agent(second, library, SECOND_USER)
    history = second.input.remembered_messages
    assert [m.role for m in history] == ["user", "assistant", "assistant"]
    assert history[0].content.content == WEATHER_USER
    (earlier,) = history[1].content.tool_invocations or []
    _call(earlier, tool, "Paris", WEATHER_RESULT)
    assert (history[2].content.content or "").startswith(WEATHER_ANSWER)
    (call,) = tool_calls(second)
    _call(call, tool, "Paris", WEATHER_RESULT)
    assert call.tool_call_id != earlier.tool_call_id
    assert final_answer(second) == SECOND_ANSWER


def test_semantic_kernel_tool_error() -> None:
    runs = capture_runs("semantic-kernel", "tool_error")
    (agent,) = _primary("semantic-kernel", "tool_error")
    _assert_agent(agent, "semantic-kernel", ERROR_USER)
    calls = tool_calls(agent)
    _assert_error_calls(calls, SK_TOOL, "ValueError: Unknown city: Atlantis")
    assert final_answer(agent).startswith(ERROR_ANSWER)
    _assert_tool_runs(runs, calls)
    assert [t.status for t in only(runs, "tool")] == ["error", "unset", "unset"]


# --- OpenLIT --------------------------------------------------------------------------------


def _assert_openlit_call(run: AgentRun, user: str) -> None:
    assert run.kind == "llm" and run.convention == "openlit" and run.model == "gpt-4o-mini"
    assert system_text(run) == [WEATHER_SYSTEM]  # sent twice, kept once
    assert user_text(run) == [user]
    (offered,) = run.tools
    assert (offered.name, offered.description) == ("get_weather", DESCRIPTION)


def _rebuilt_warning(call_id: str) -> str:
    return (
        f"openlit: the call {call_id} answered in the input is not in the trace (OpenLIT "
        "leaves tool-call messages out); rebuilt from its result as 'get_weather', "
        "arguments unknown"
    )


def test_openlit_tool_call() -> None:
    """A raw client's two calls, each its own trace: the second is sent the tool's result
    without the call; the call is put back (id and the only offered tool's name), with a
    warning that its arguments are in the other trace."""
    asking, answering = _primary("openlit", "tool_call")
    _assert_openlit_call(asking, WEATHER_USER)
    (asked,) = tool_calls(asking)
    assert (asked.tool_name, asked.args, asked.state) == ("get_weather", {"city": "Paris"}, "call")
    assert (asking.usage.input_tokens, asking.usage.output_tokens) == (116, 23)
    assert asking.usage.total_tokens == 139 and asking.warnings == []
    _assert_openlit_call(answering, WEATHER_USER)
    (call,) = tool_calls(answering)
    assert (call.tool_call_id, call.tool_name, call.args, call.result, call.state) == (
        asked.tool_call_id,
        "get_weather",
        {},
        WEATHER_RESULT,
        "result",
    )
    assert [p.type for p in answering.output[0].content.parts] == ["tool-invocation", "text"]
    assert final_answer(answering).startswith(WEATHER_ANSWER)
    assert [c.kind for c in answering.context] == ["tool_result"]
    assert [w.split(": ", 1)[1] for w in answering.warnings] == [
        _rebuilt_warning(asked.tool_call_id)
    ]


def test_openlit_multi_turn() -> None:
    """Turn two's calls: the first turn, without its tool-call message, is history with its
    call put back; the second turn's own call too."""
    runs = _primary("openlit", "multi_turn")
    assert len(runs) == 4
    for run in runs:
        assert run.input.system_messages and system_text(run) == [WEATHER_SYSTEM]
    asking, answering = runs[2:]
    _assert_openlit_call(asking, SECOND_USER)
    history = asking.input.remembered_messages
    assert [m.role for m in history] == ["user", "assistant", "assistant"]
    (earlier,) = history[1].content.tool_invocations or []
    assert (earlier.tool_name, earlier.result, earlier.state) == (
        "get_weather",
        WEATHER_RESULT,
        "result",
    )
    (asked,) = tool_calls(asking)
    assert (asked.args, asked.state) == ({"city": "Paris"}, "call")
    (call,) = tool_calls(answering)
    assert (call.tool_call_id, call.result) == (asked.tool_call_id, WEATHER_RESULT)
    assert final_answer(answering) == SECOND_ANSWER
    assert [w.split(": ", 1)[1] for w in answering.warnings] == [
        _rebuilt_warning(earlier.tool_call_id),
        _rebuilt_warning(asked.tool_call_id),
    ]


def test_openlit_tool_error() -> None:
    """The loop sent Atlantis' error as the tool's message: a result like any other (a raw
    client records no failure), with all three calls put back in the last call's run."""
    runs = _primary("openlit", "tool_error")
    assert len(runs) == 4
    asked = [tool_calls(run)[-1] for run in runs[:3]]  # each after the calls put back
    assert [c.state for c in asked] == ["call"] * 3
    assert [c.args for c in asked] == [{"city": "Atlantis"}, {"city": "Paris"}, {"city": "London"}]
    last = runs[3]
    _assert_openlit_call(last, ERROR_USER)
    calls = tool_calls(last)
    assert [c.tool_call_id for c in calls] == [c.tool_call_id for c in asked]
    assert [c.result for c in calls] == [
        {"error": "Unknown city: Atlantis"},
        WEATHER_RESULT,
        LONDON_RESULT,
    ]
    assert final_answer(last).startswith(ERROR_ANSWER)
    assert len(last.warnings) == 3


def test_openlit_call_recovered_from_its_trace() -> None:
    """When the call that asked for the tool is in the same trace (a parent span around the
    loop), the call is put back with its name and arguments, and nothing is warned."""
    scope = "openlit.instrumentation.openai"
    system = [{"role": "system", "parts": [{"type": "text", "content": WEATHER_SYSTEM}]}]
    user = [{"role": "user", "parts": [{"type": "text", "content": WEATHER_USER}]}]
    call = {
        "type": "tool_call",
        "id": "call_9",
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }
    result = {
        "type": "tool_call_response",
        "id": "call_9",
        "response": orjson.dumps(WEATHER_RESULT).decode(),
    }
    parent = span("turn", {}, scope="app")
    asking = span(
        "chat gpt-4o-mini",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": orjson.dumps([*system, *user]).decode(),
            "gen_ai.output.messages": orjson.dumps(
                [{"role": "assistant", "parts": [call]}]
            ).decode(),
        },
        parent=parent.span_id,
        scope=scope,
    )
    answering = span(
        "chat gpt-4o-mini",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": orjson.dumps(
                [*system, *user, {"role": "tool", "parts": [result]}]
            ).decode(),
            "gen_ai.output.messages": orjson.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "It is sunny in Paris today."}],
                    }
                ]
            ).decode(),
        },
        parent=parent.span_id,
        scope=scope,
    )
    runs = only(extract_runs(trace(parent, asking, answering)), "llm")
    second = next(r for r in runs if r.span_id == answering.span_id)
    (recovered,) = tool_calls(second)
    assert (recovered.tool_call_id, recovered.tool_name, recovered.args, recovered.result) == (
        "call_9",
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert second.warnings == []


@pytest.mark.parametrize(
    "text",
    [
        "{'city': __import__('os').getcwd()}",  # not a literal: never evaluated
        "[" * 5_000 + "]" * 5_000,  # nested past the parser's limit
        "{'a': 1" + " " * 100_000 + "}",  # longer than the bound
        "{'a': 1",  # cut
        "{not python}",
    ],
)
def test_semantic_kernel_result_that_is_no_literal_stays_text(text: str) -> None:
    """A tool result is span text (attacker-controlled): only a plain literal is decoded."""
    assert semantic_kernel.python_literal(text) == text
    assert semantic_kernel.python_literal("{'city': 'Paris', 'temps': [21, 14.5]}") == {
        "city": "Paris",
        "temps": [21, 14.5],
    }
