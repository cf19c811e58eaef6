"""OpenLLMetry / Traceloop: indexed ≤0.54 attributes, 0.62 GenAI layout, decorator spans."""

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
    WEATHER_RESULT,
    assert_weather_agent,
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
from tracescore.extract import extract_runs

CURRENT = "openllmetry-openai"
LEGACY = "openllmetry-openai-legacy"


@pytest.mark.parametrize("library", [CURRENT, LEGACY])
def test_agent_spread_over_four_requests(library: str) -> None:
    # traceloop-sdk with disable_batch sends one request per span (SPAN_FORMATS §1).
    runs = capture_runs(library, "tool_call_agent")
    (agent,) = only(runs, "agent")
    assert_weather_agent(agent, convention="openllmetry")
    assert agent.attributes["traceloop.span.kind"] == "agent"
    # The @tool span has no call id and a double-encoded string result; both are handled.
    (tool,) = only(runs, "tool")
    (call,) = tool_calls(tool)
    assert (call.tool_call_id, call.tool_name, call.args) == ("", "get_weather", {"city": "Paris"})
    assert call.result == WEATHER_RESULT
    assert {r.agent_name for r in only(runs, "llm")} == {"WeatherBot"}


@pytest.mark.parametrize("library", [CURRENT, LEGACY])
@pytest.mark.parametrize("scenario", ["plain_chat", "plain_chat_stream"])
def test_plain_chat(library: str, scenario: str) -> None:
    (run,) = capture_runs(library, scenario)
    assert (run.kind, run.primary, run.convention) == ("llm", True, "openllmetry")
    assert (system_text(run), user_text(run)) == ([CHAT_SYSTEM], [CHAT_USER])
    assert final_answer(run) == CHAT_ANSWER
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.total_tokens) == (36, 17, 53)


@pytest.mark.parametrize(
    ("library", "scenario", "has_reasoning"),
    [
        (CURRENT, "reasoning", True),  # 0.62 reads Chat Completions reasoning_content
        (CURRENT, "responses", True),  # a double-encoded summary list
        (LEGACY, "reasoning", False),  # 0.54 does not capture reasoning_content
        (LEGACY, "responses", True),  # gen_ai.completion.0.reasoning
    ],
)
def test_reasoning(library: str, scenario: str, has_reasoning: bool) -> None:
    (run,) = capture_runs(library, scenario)
    assert run.model == "o4-mini"
    assert system_text(run) == [CHAT_SYSTEM]
    assert user_text(run) == [REASONING_USER]
    assert final_answer(run).startswith(REASONING_ANSWER)
    assert reasoning(run) == ([REASONING_TEXT] if has_reasoning else [])
    assert run.usage.reasoning_tokens == 32
    assert run.warnings == []


def test_legacy_tool_definitions_and_tool_messages() -> None:
    runs = capture_runs(LEGACY, "tool_call_agent")
    first, second = only(runs, "llm")
    (tool_def,) = first.tools
    assert tool_def.name == "get_weather" and tool_def.parameters["required"] == ["city"]
    # The second call was sent the assistant's call and the tool's answer: joined by id, they
    # open its trajectory; its input is the user's turn only.
    assert [m.role for m in second.input.input_messages] == ["user"]
    (call,) = tool_calls(second)
    assert (call.tool_name, call.state) == ("get_weather", "result")
    assert orjson.loads(second.context[0].content) == WEATHER_RESULT


def test_indexed_gaps_and_multimodal_content() -> None:
    llm = span(
        "openai.chat",
        {
            "llm.request.type": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": orjson.dumps(
                [
                    {"type": "text", "text": "Describe"},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                ]
            ).decode(),
            "gen_ai.prompt.3.role": "user",
            "gen_ai.prompt.3.content": "[not json, just text",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "A cat.",
        },
    )
    (run,) = extract_runs(trace(llm))
    first, second = run.input.input_messages
    assert [p.type for p in first.content.parts] == ["text", "file"]
    assert first.content.parts[1].url == "https://x/y.png"
    assert second.content.content == "[not json, just text"
    assert final_answer(run) == "A cat."
    assert any("gen_ai.prompt.N: index 1, 2 missing" in w for w in run.warnings)


def test_workflow_without_agent_and_failing_tool() -> None:
    workflow = span(
        "plan.workflow",
        {"traceloop.span.kind": "workflow", "traceloop.entity.name": "plan"},
        scope="traceloop.tracer",
    )
    llm = span(
        "openai.chat",
        {
            "llm.request.type": "chat",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Go",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.id": "call_1",
            "gen_ai.completion.0.tool_calls.0.name": "fetch",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"u": 1}',
        },
        parent=workflow.span_id,
    )
    tool = span(
        "fetch.tool",
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "fetch",
            "traceloop.entity.input": '{"args": [], "kwargs": {"u": 1}}',
        },
        parent=workflow.span_id,
        status=2,
        status_message="ConnectionError",
    )
    runs = extract_runs(trace(workflow, llm, tool))
    # No agent span: the outermost LLM run stands for the agent.
    assert [r.kind for r in runs if r.primary] == ["llm"]
    (tool_run,) = only(runs, "tool")
    (call,) = tool_calls(tool_run)
    assert (call.tool_name, call.args, call.state, call.error_text) == (
        "fetch",
        {"u": 1},
        "output-error",
        "ConnectionError",
    )


def test_agent_decorator_with_non_string_return_and_bad_input() -> None:
    agent = span(
        "Bot.agent",
        {
            "traceloop.span.kind": "agent",
            "traceloop.entity.name": "Bot",
            "traceloop.entity.input": '{"args": ["Hi", 2], "kw',
            "traceloop.entity.output": '{"answer": "Hello", "score": 1}',
        },
    )
    (run,) = extract_runs(trace(agent))
    assert run.agent_name == "Bot"
    assert orjson.loads(final_answer(run)) == {"answer": "Hello", "score": 1}
    assert user_text(run) == ['{"args": ["Hi", 2], "kw']
    assert any("traceloop.entity.input: invalid JSON" in w for w in run.warnings)
