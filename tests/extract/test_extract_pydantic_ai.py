"""Pydantic AI: data format 5 and 6 captures, Logfire's wrapper and pending spans, older names."""

from __future__ import annotations

import orjson
import pytest

from tests.support.extract_support import (
    CHAT_ANSWER,
    CHAT_SYSTEM,
    CHAT_USER,
    REASONING_ANSWER,
    REASONING_TEXT,
    REASONING_USER,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    capture_runs,
    final_answer,
    only,
    reasoning,
    span,
    system_text,
    tool_calls,
    trace,
    user_text,
)
from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs, primary_runs, read_spans
from tracescore.ingest.files import load_traces
from tracescore.spans import Scope, Span

LIBRARY = "pydantic-ai"
CONVENTION = "pydantic-ai"
THOUGHT = (
    "The user wants the weather. I should call the weather tool and then summarise its result "
    "briefly."
)


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


@pytest.mark.parametrize("scenario", ["tool_call", "tool_call_sysprompt", "tool_call_format_v6"])
def test_agent_with_tool_call(scenario: str) -> None:
    """``instructions=`` (JSON parts) or ``system_prompt=`` (a system message); tool results
    under role ``user`` (format 5) or ``tool`` (format 6): the same run either way."""
    runs = capture_runs(LIBRARY, scenario)
    (agent,) = only(runs, "agent")
    assert primary_runs(runs) == [agent]
    assert agent.convention == CONVENTION
    assert (agent.agent_name, agent.model) == ("WeatherBot", "gpt-4o-mini")
    assert agent.provider == "openai"
    assert system_text(agent) == [WEATHER_SYSTEM]
    assert user_text(agent) == [WEATHER_USER]
    assert agent.input.remembered_messages == []
    (call,) = tool_calls(agent)
    assert call.tool_name == "get_weather" and call.tool_call_id.startswith("call_")
    assert (call.args, call.result, call.state) == ({"city": "Paris"}, WEATHER_RESULT, "result")
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    # The chat spans (115+201, 33+35), which is also what gen_ai.aggregated_usage says.
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (316, 68)
    (tool,) = agent.tools
    assert tool.name == "get_weather" and tool.parameters["required"] == ["city"]
    assert len(agent.span_ids) == 4 and agent.warnings == []
    second = only(runs, "llm")[1]
    assert orjson.loads(second.context[0].content) == WEATHER_RESULT  # tool result it was sent


def test_agent_span_reads_the_whole_conversation() -> None:
    (loaded,) = load_traces([CAPTURES / LIBRARY / "tool_call"])
    agent = next(i for i in read_spans(loaded) if i.kind == "agent")
    assert [m.content.content for m in agent.input_messages] == [WEATHER_USER]
    assert [m.role for m in agent.output_messages] == ["assistant", "user", "assistant"]
    assert agent.output_messages[-1].content.content.startswith(WEATHER_ANSWER)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (316, 68)  # aggregated_usage


def test_plain_chat_and_stream() -> None:
    for scenario in ("plain_chat", "plain_chat_stream"):
        runs = capture_runs(LIBRARY, scenario)
        (agent,) = only(runs, "agent")
        assert agent.agent_name == "Greeter"
        assert system_text(agent) == [CHAT_SYSTEM] and user_text(agent) == [CHAT_USER]
        assert final_answer(agent) == CHAT_ANSWER
        assert (agent.usage.input_tokens, agent.usage.output_tokens) == (36, 17)


def test_thinking_parts_are_reasoning() -> None:
    (agent,) = only(capture_runs(LIBRARY, "reasoning"), "agent")
    assert (agent.agent_name, agent.model) == ("Thinker", "o4-mini")
    assert user_text(agent) == [REASONING_USER]
    assert reasoning(agent) == [REASONING_TEXT]
    assert final_answer(agent).startswith(REASONING_ANSWER)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (34, 64)
    assert agent.usage.reasoning_tokens == 32


def test_responses_api_reasoning_summaries_in_step_order() -> None:
    (agent,) = only(capture_runs(LIBRARY, "responses"), "agent")
    assert [p.type for p in agent.output[0].content.parts] == [
        "reasoning",
        "tool-invocation",
        "reasoning",
        "text",
    ]
    assert reasoning(agent) == [THOUGHT, THOUGHT]  # the model thought before each step
    assert tool_calls(agent)[0].result == WEATHER_RESULT
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (365, 233)
    assert agent.usage.reasoning_tokens == 48


# --- Logfire and hand-made edge cases ---------------------------------------------------------


def test_logfire_wrapper_and_pending_spans() -> None:
    """``logfire.span`` around the run, and Logfire's pending copy of the still-open agent span."""
    (loaded,) = load_traces([CAPTURES / LIBRARY / "tool_call"])
    agent_span = next(s for s in loaded.spans if s.name.startswith("invoke_agent"))
    wrapper = span(
        "weather request for Paris",
        {
            "logfire.span_type": "span",
            "logfire.msg_template": "weather request for {city}",
            "logfire.msg": "weather request for Paris",
            "city": "Paris",
            "code.filepath": "app.py",
            "code.lineno": 12,
        },
        start=agent_span.start_time_ns - 1,
        scope="logfire",
    )
    wrapper.trace_id = loaded.trace_id
    agent_span.parent_span_id = wrapper.span_id
    pending = Span(
        trace_id=loaded.trace_id,
        span_id="00000000000000aa",
        parent_span_id=agent_span.span_id,
        name=agent_span.name,
        kind=1,
        start_time_ns=agent_span.start_time_ns,
        end_time_ns=agent_span.start_time_ns,
        attributes={
            **agent_span.attributes,
            "logfire.span_type": "pending_span",
            "logfire.pending_parent_id": wrapper.span_id,
        },
        resource=agent_span.resource,
        scope=Scope("pydantic-ai", "2.68.0"),
    )
    loaded.spans += [wrapper, pending]
    runs = extract_runs(loaded)
    (agent,) = only(runs, "agent")  # neither the wrapper nor the pending copy is a run
    assert agent.span_id == agent_span.span_id and agent.agent_name == "WeatherBot"
    assert user_text(agent) == [WEATHER_USER]
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (316, 68)
    kinds = {i.span_id: i.kind for i in read_spans(loaded)}
    assert (kinds[wrapper.span_id], kinds[pending.span_id]) == ("other", "other")


def test_older_span_names_and_tool_keys() -> None:
    """Before GenAI operations: ``agent run`` and ``running tool`` with ``tool_arguments``."""
    agent = span(
        "agent run",
        {
            "agent_name": "Old",
            "model_name": "gpt-4o",
            "logfire.msg": "Old run",
            "final_result": "done",
        },
        scope="pydantic-ai",
    )
    chat = span(
        "chat gpt-4o",
        {
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.system": "openai",
            "gen_ai.usage.input_tokens": 7,
            "gen_ai.usage.output_tokens": 1,
        },
        parent=agent.span_id,
        scope="pydantic-ai",
    )
    tool = span(
        "running tool: lookup",
        {
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": "c1",
            "tool_arguments": '{"q":"x"}',
            "tool_response": '{"answer":42}',
        },
        parent=agent.span_id,
        scope="pydantic-ai",
    )
    group = span("running 1 tool", {"tools": ["lookup"]}, parent=agent.span_id, scope="pydantic-ai")
    runs = extract_runs(trace(agent, chat, group, tool))
    (run,) = only(runs, "agent")
    assert (run.agent_name, run.model) == ("Old", "gpt-4o")
    (call,) = tool_calls(run)
    assert (call.tool_name, call.args, call.result) == ("lookup", {"q": "x"}, {"answer": 42})
    assert final_answer(run) == "done"  # no text from the chat span: final_result
    assert run.usage.input_tokens == 7
    assert [i.kind for i in read_spans(trace(agent, chat, group, tool))] == [
        "agent",
        "llm",
        "tool",
        "other",
    ]


def test_tool_error_truncated_messages_and_structured_output() -> None:
    agent = span(
        "invoke_agent Extractor",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "Extractor",
            "pydantic_ai.all_messages": '[{"role":"user","parts":[{"type":"text","content":"Par',
            "final_result": _json({"city": "Paris", "ok": False}),
            "gen_ai.aggregated_usage.input_tokens": 30,
            "gen_ai.aggregated_usage.output_tokens": 4,
        },
        scope="pydantic-ai",
    )
    failed = span(
        "execute_tool geocode",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "geocode",
            "gen_ai.tool.call.id": "g1",
            "gen_ai.tool.call.arguments": '{"name":"Paris"}',
        },
        parent=agent.span_id,
        scope="pydantic-ai",
        status=2,
        status_message="geocoder timeout",
    )
    runs = extract_runs(trace(agent, failed))
    (run,) = only(runs, "agent")
    (call,) = tool_calls(run)
    assert (call.state, call.is_error) == ("output-error", True)
    assert call.error_text == "geocoder timeout"
    assert orjson.loads(final_answer(run)) == {"city": "Paris", "ok": False}
    assert user_text(run) == ['[{"role":"user","parts":[{"type":"text","content":"Par']
    assert (run.usage.input_tokens, run.usage.output_tokens) == (30, 4)  # no chat span: aggregated
    assert any("pydantic_ai.all_messages: invalid JSON" in w for w in run.warnings)


def test_spans_with_nothing_but_their_operation() -> None:
    agent = span("invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, scope="pydantic-ai")
    chat = span(
        "chat", {"gen_ai.operation.name": "chat"}, parent=agent.span_id, scope="pydantic-ai"
    )
    tool = span(
        "execute_tool",
        {"gen_ai.operation.name": "execute_tool"},
        parent=agent.span_id,
        scope="pydantic-ai",
    )
    runs = extract_runs(trace(agent, chat, tool))
    assert [r.kind for r in runs] == ["agent", "llm", "tool"]
    (run,) = only(runs, "agent")
    assert run.agent_name == "invoke_agent"  # no gen_ai.agent.name: the span name
    assert user_text(run) == [] and run.usage.total_tokens == 0 and run.warnings == []
