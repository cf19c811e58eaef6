"""Haystack's ``Agent`` through openinference-instrumentation-haystack, alone and inside a
``Pipeline``: ``Agent.run`` is the agent, its steps' tool calls and results read from the
``ChatMessage`` reprs the LLM spans were sent, the pipeline and prompt-builder spans no runs."""

from __future__ import annotations

import pytest

from tests.support.extract_support import (
    LONDON_RESULT,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    assert_second_turn,
    assert_tool_error_agent,
    capture_runs,
    final_answer,
    only,
    system_text,
    tool_calls,
    user_text,
)
from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs
from tracescore.extract.haystack import chat_message
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import read_sources
from tracescore.ingest.files import load_traces

LIB = "openinference-haystack"
CONVENTION = "openinference-haystack"


def _agents(scenario: str) -> tuple[list[AgentRun], list[AgentRun]]:
    runs = capture_runs(LIB, scenario)
    agents = only(runs, "agent")
    assert [r for r in runs if r.primary] == agents
    assert len({a.trace_id for a in agents}) == len(agents)
    assert all(r.convention == CONVENTION for r in runs)
    if not scenario.endswith("_haystack2"):
        assert only(runs, "tool") == []  # haystack-ai 3.x runs its tools inside Agent.run
    return runs, agents


@pytest.mark.parametrize(
    ("scenario", "name"),
    [("tool_call", "Agent"), ("pipeline", "weather_agent"), ("tool_call_haystack2", "Agent")],
)
def test_one_agent_run_with_its_call_result_and_answer(scenario: str, name: str) -> None:
    runs, (agent,) = _agents(scenario)
    steps = only(runs, "llm")
    usage = (
        sum(s.usage.input_tokens for s in steps),
        sum(s.usage.output_tokens for s in steps),
    )
    assert usage == (116 + 142, 23 + 23)
    assert (agent.agent_name, agent.model, agent.usage.input_tokens, agent.usage.output_tokens) == (
        name,
        "gpt-4o-mini",
        *usage,
    )
    assert system_text(agent) == [WEATHER_SYSTEM]
    assert user_text(agent) == [WEATHER_USER]
    assert agent.input.remembered_messages == []
    (call,) = tool_calls(agent)
    assert call.tool_call_id.startswith("call_")
    assert (call.tool_name, call.args, call.result, call.state) == (
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
        "result",
    )
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert final_answer(agent) == WEATHER_ANSWER + "."
    # Offered tools from the generator's Tool reprs (the description is the docstring whole).
    (offered,) = agent.tools
    assert offered.name == "get_weather"
    assert (offered.description or "").startswith("Get the current weather for a city.")
    assert offered.parameters == {
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "type": "object",
    }
    assert [c.kind for c in agent.context] == ["tool_result"]
    assert agent.warnings == []
    # The agent's span, its prompt builder's and its two steps'; not the pipeline's.
    assert len(agent.span_ids) == 4 and agent.span_ids[0] == agent.span_id
    # The second step was sent the call (lost from llm.input_messages) and its result.
    (earlier,) = tool_calls(steps[1])
    assert (earlier.tool_call_id, earlier.args, earlier.result) == (
        tool_calls(agent)[0].tool_call_id,
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    (found,) = load_traces([CAPTURES / LIB / scenario])
    assert read_sources(found, extract_runs(found, only_primary=True)).reason is None


def test_multi_turn() -> None:
    _, agents = _agents("multi_turn")
    first, second = sorted(agents, key=lambda r: r.start_time or 0)
    assert system_text(second) == [WEATHER_SYSTEM]
    assert [m.content.content for m in first.input.input_messages] == [WEATHER_USER]
    assert_second_turn(second)


ATLANTIS_ERROR = (
    "Failed to invoke Tool `get_weather` with parameters {'city': 'Atlantis'}. "
    "Error: Unknown city: Atlantis"
)


@pytest.mark.parametrize("scenario", ["tool_error", "tool_error_haystack2"])
def test_tool_error(scenario: str) -> None:
    """The ToolInvoker's failure goes back to the model as a ``ToolCallResult`` with
    ``error=True``: the call failed with that text."""
    _, (agent,) = _agents(scenario)
    assert_tool_error_agent(agent, error=ATLANTIS_ERROR)


def test_tool_invoker_spans_are_tool_runs() -> None:
    """haystack-ai 2.x runs the Agent's tools in a ToolInvoker component: each of its spans
    is the tool run of the call it ran, joined to the model's call by id."""
    runs, (agent,) = _agents("tool_error_haystack2")
    tools = [tool_calls(t)[0] for t in only(runs, "tool")]
    assert [(t.tool_call_id, t.args, t.state) for t in tools] == [
        (c.tool_call_id, c.args, c.state) for c in tool_calls(agent)
    ]
    assert tools[0].error_text == ATLANTIS_ERROR
    assert [t.result for t in tools[1:]] == [WEATHER_RESULT, LONDON_RESULT]


def test_chat_message_reprs() -> None:
    reasoning = (
        "ChatMessage(_role=<ChatRole.ASSISTANT: 'assistant'>, _content=[ReasoningContent("
        "reasoning_text='Paris first.', extra={}), TextContent(text='Looking.'), ToolCall("
        "tool_name='get_weather', arguments={'city': 'Paris'}, id='c1', extra=None)], "
        "_name=None, _meta={'usage': {'prompt_tokens': 3}})"
    )
    assert chat_message(reasoning) == {
        "role": "assistant",
        "reasoning_content": "Paris first.",
        "content": "Looking.",
        "tool_calls": [
            {"id": "c1", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        ],
    }
    # Not a ChatMessage, not a literal (nothing is evaluated), cut short: none.
    assert chat_message("__import__('os').system('true')") is None
    assert chat_message("ChatMessage(_role=__import__('os'))") == {"role": "user", "content": ""}
    assert chat_message(reasoning[:80]) is None
    assert chat_message("ChatMessage(" * 5000) is None
