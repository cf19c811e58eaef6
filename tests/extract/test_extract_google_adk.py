"""Google ADK 2.13 (built-in telemetry, LiteLlm to the scripted server): captures with the
default settings (no message content) and with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (the ``_content`` folders)."""

from __future__ import annotations

import orjson
import pytest

from tests.support.extract_support import (
    LONDON_RESULT,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    assert_atlantis_calls,
    assert_read_without_crash,
    capture_runs,
    final_answer,
    only,
    span,
    system_text,
    tool_calls,
    user_text,
)
from tracescore.extract import primary_runs
from tracescore.extract.model import AgentRun

LIBRARY = "google-adk"
CONVENTION = "google-adk"
MODEL = "openai/gpt-4o-mini"  # ADK names the model as LiteLlm was given it
# ADK appends the agent's identity to the instruction it sends.
ADK_SYSTEM = WEATHER_SYSTEM + '\n\nYou are an agent. Your internal name is "WeatherBot".'
SECOND_USER = "Is it warmer than yesterday?"
SECOND_ANSWER = "Yes: 21 degrees Celsius in Paris today, warmer than yesterday."


def _assert_agent_facts(agent: AgentRun, usage: tuple[int, int]) -> None:
    """What ADK sends whatever the content setting: names, model, tools, usage, session."""
    assert agent.kind == "agent" and agent.primary and agent.convention == CONVENTION
    assert (agent.agent_name, agent.model, agent.provider) == ("WeatherBot", MODEL, "openai")
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == usage
    (tool,) = agent.tools
    assert (tool.name, tool.description) == ("get_weather", "Get the current weather for a city.")
    assert agent.conversation_id  # the ADK session id, gen_ai.conversation.id
    assert agent.warnings == []


def _assert_no_content(run: AgentRun) -> None:
    assert run.input.system_messages == [] and run.input.input_messages == []
    assert run.input.remembered_messages == []
    assert all(not m.content.content for m in run.output)
    assert run.context == []


# --- default settings: no content ------------------------------------------------------------


def test_default_settings_rebuild_the_agent_without_content() -> None:
    runs = capture_runs(LIBRARY, "tool_call")
    (agent,) = primary_runs(runs)  # the invoke_workflow wrapper is no run of its own
    assert len(only(runs, "agent")) == 1
    _assert_agent_facts(agent, (258, 46))
    _assert_no_content(agent)
    (call,) = tool_calls(agent)
    assert call.tool_name == "get_weather" and call.tool_call_id.startswith("call_")
    assert (call.args, call.result) == ({}, None)
    for llm in only(runs, "llm"):
        assert not llm.primary and llm.model == MODEL
        assert llm.input.input_messages == [] and llm.output == []
    (tool_run,) = only(runs, "tool")
    assert tool_calls(tool_run)[0].tool_call_id == call.tool_call_id


def test_default_settings_multi_turn_is_one_run_per_invocation() -> None:
    runs = capture_runs(LIBRARY, "multi_turn")
    first, second = primary_runs(runs)
    assert first.trace_id != second.trace_id
    _assert_agent_facts(first, (258, 46))
    _assert_agent_facts(second, (362, 46))
    _assert_no_content(first)
    _assert_no_content(second)
    assert first.conversation_id == second.conversation_id


def test_default_settings_tool_error_keeps_each_call() -> None:
    runs = capture_runs(LIBRARY, "tool_error")
    (agent,) = primary_runs(runs)
    _assert_agent_facts(agent, (620, 95))
    _assert_no_content(agent)
    calls = tool_calls(agent)
    assert [c.tool_name for c in calls] == ["get_weather"] * 3
    assert len({c.tool_call_id for c in calls}) == 3
    assert all(c.result is None for c in calls)


# --- content capture on ----------------------------------------------------------------------


def test_content_capture_rebuilds_every_field() -> None:
    runs = capture_runs(LIBRARY, "tool_call_content")
    (agent,) = primary_runs(runs)
    _assert_agent_facts(agent, (258, 46))
    assert system_text(agent) == [ADK_SYSTEM]
    assert user_text(agent) == [WEATHER_USER]
    assert agent.input.remembered_messages == []
    (call,) = tool_calls(agent)
    assert call.tool_call_id.startswith("call_")
    assert (call.args, call.result, call.state) == ({"city": "Paris"}, WEATHER_RESULT, "result")
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert [orjson.loads(c.content) for c in agent.context] == [WEATHER_RESULT]
    assert len(agent.span_ids) == 4
    # The execute_tool span carries no content: its run takes it from the model calls.
    (tool_run,) = only(runs, "tool")
    (ran,) = tool_calls(tool_run)
    assert (ran.tool_call_id, ran.args, ran.result, ran.state) == (
        call.tool_call_id,
        {"city": "Paris"},
        WEATHER_RESULT,
        "result",
    )


def test_content_capture_multi_turn_remembers_the_first_turn() -> None:
    runs = capture_runs(LIBRARY, "multi_turn_content")
    first, second = primary_runs(runs)
    assert first.conversation_id == second.conversation_id
    assert user_text(first) == [WEATHER_USER]
    assert user_text(second) == [SECOND_USER]
    assert system_text(second) == [ADK_SYSTEM]
    user, call_message, answer = second.input.remembered_messages
    assert (user.role, user.content.content) == ("user", WEATHER_USER)
    (remembered,) = [p.tool_invocation for p in call_message.content.parts]
    assert remembered is not None and remembered.result == WEATHER_RESULT
    assert (answer.role, answer.content.content) == ("assistant", final_answer(first))
    (call,) = tool_calls(second)
    assert (call.args, call.result) == ({"city": "Paris"}, WEATHER_RESULT)
    assert final_answer(second) == SECOND_ANSWER


@pytest.mark.parametrize("kind", ["agent", "tool"])
def test_content_capture_tool_error_handled_by_the_plugin_is_a_failure(kind: str) -> None:
    """ReflectAndRetryToolPlugin turns the exception into a tool response the model reads, and
    the tool span ends without error: the call is still the failure it was."""
    runs = capture_runs(LIBRARY, "tool_error_content")
    (agent,) = primary_runs(runs)
    calls = (
        tool_calls(agent) if kind == "agent" else [tool_calls(run)[0] for run in only(runs, "tool")]
    )
    assert_atlantis_calls(calls)
    if kind == "agent":
        assert [orjson.loads(c.content) for c in agent.context] == [WEATHER_RESULT, LONDON_RESULT]
        assert final_answer(agent).startswith("I could not find Atlantis.")
    else:
        assert [run.status for run in only(runs, "tool")] == ["error", "unset", "unset"]


# --- legacy schema (ADK 1.x; ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1) ----------------------------


def test_legacy_schema_reads_the_llm_request_and_tool_attributes() -> None:
    """Content in ``gcp.vertex.agent.llm_request`` / ``llm_response`` on ``call_llm`` and
    ``tool_call_args`` / ``tool_response`` on the tool span, by default; the model call below
    ``call_llm`` logs ``<elided>`` messages and is no second step."""
    runs = capture_runs(LIBRARY, "tool_call_legacy_schema")
    (agent,) = primary_runs(runs)
    assert (agent.agent_name, agent.model, agent.convention) == ("WeatherBot", MODEL, CONVENTION)
    assert system_text(agent) == [ADK_SYSTEM]
    assert user_text(agent) == [WEATHER_USER]
    (call,) = tool_calls(agent)
    assert call.tool_call_id.startswith("call_")
    assert (call.args, call.result, call.state) == ({"city": "Paris"}, WEATHER_RESULT, "result")
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (258, 46)
    (tool,) = agent.tools
    assert tool.name == "get_weather" and tool.parameters is not None
    assert tool.parameters["required"] == ["city"]
    llm_runs = only(runs, "llm")  # the two call_llm spans, not the model calls below them
    assert len(llm_runs) == 2
    assert all(r.attributes.get("gcp.vertex.agent.llm_request") for r in llm_runs)
    (tool_run,) = only(runs, "tool")
    assert (tool_calls(tool_run)[0].args, tool_calls(tool_run)[0].result) == (
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert "<elided>" not in agent.model_dump_json()


def test_legacy_schema_without_content_is_empty_not_elided() -> None:
    """``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false``: ``{}`` placeholders and ``<elided>``
    log messages, which are no content."""
    runs = capture_runs(LIBRARY, "tool_call_legacy_schema_no_content")
    (agent,) = primary_runs(runs)
    assert (agent.agent_name, agent.model) == ("WeatherBot", MODEL)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (258, 46)
    _assert_no_content(agent)
    assert [(c.tool_name, c.args) for c in tool_calls(agent)] == [("get_weather", {})]
    assert len(only(runs, "llm")) == 2
    assert all(r.input.input_messages == [] and r.output == [] for r in only(runs, "llm"))
    assert "<elided>" not in "".join(r.model_dump_json() for r in runs)


@pytest.mark.parametrize(
    "attributes",
    [
        {"gcp.vertex.agent.llm_request": '{"contents": [', "gen_ai.request.model": "m"},
        {
            "gcp.vertex.agent.llm_request": '{"config": {"tools": "x", "system_instruction": 5}, '
            '"contents": {"a": 1}}',
            "gcp.vertex.agent.llm_response": '{"content": [1], "usage_metadata": "none"}',
        },
        {
            "gcp.vertex.agent.llm_request": '{"config": {"tools": [{"function_declarations": 3}],'
            ' "system_instruction": {"parts": [{"text": "s"}]}}}',
            "gcp.vertex.agent.llm_response": "[]",
        },
        {
            "gen_ai.operation.name": "execute_tool",
            "gcp.vertex.agent.tool_call_args": "[{",
            "gcp.vertex.agent.tool_response": 7,
        },
    ],
)
def test_hostile_legacy_values_never_raise(attributes: dict) -> None:
    assert_read_without_crash(span("call_llm", attributes, scope="gcp.vertex.agent"), CONVENTION)
