"""A LangGraph ``create_agent`` traced by LangSmith's OTel export: LangChain-serialized messages
in ``gen_ai.prompt`` / ``gen_ai.completion`` read, the graph's root chain the agent, its
``model`` / ``tools`` nodes no runs of their own. Also the LangChain reader on its own, under
another convention (OpenInference's ``input.value``)."""

from __future__ import annotations

import json

import pytest

from tests.support.extract_support import (
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    assert_second_turn,
    assert_tool_error_agent,
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
from tests.support.paths import CAPTURES
from tracescore.config import parse_config
from tracescore.extract import extract_runs
from tracescore.extract.declared import claim_order
from tracescore.extract.langchain import langchain_message_values, langchain_messages
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import read_sources
from tracescore.ingest.files import load_traces

LIB = "langsmith-otel"


def _agents(scenario: str) -> tuple[list[AgentRun], list[AgentRun]]:
    """All runs, and the agent runs, checked to be the only primary runs (one per invoke)."""
    runs = capture_runs(LIB, scenario)
    agents = only(runs, "agent")
    assert [r for r in runs if r.primary] == agents
    assert all(r.convention == "langsmith" for r in runs)
    return runs, agents


@pytest.mark.parametrize("scenario", ["tool_call", "tool_call_hybrid"])
def test_one_agent_run_with_its_call_result_and_answer(scenario: str) -> None:
    """``LANGSMITH_OTEL_ONLY=true`` and the hybrid export send the same spans."""
    runs, (agent,) = _agents(scenario)
    steps = only(runs, "llm")
    assert len(steps) == 2
    usage = (
        sum(s.usage.input_tokens for s in steps),
        sum(s.usage.output_tokens for s in steps),
    )
    assert usage == (116 + 142, 23 + 23)
    # The agent's, its two steps' and its tool's spans, and the graph's three node spans.
    assert_weather_agent(agent, convention="langsmith", usage=usage, spans=7)
    assert agent.provider == "openai"
    # The first step made only the call: it is the agent's step, not a run scored as an answer.
    first = steps[0]
    assert not first.primary
    (call,) = tool_calls(first)
    assert (call.tool_name, call.args, call.state) == ("get_weather", {"city": "Paris"}, "call")
    (tool,) = only(runs, "tool")
    (executed,) = tool_calls(tool)
    assert (executed.tool_call_id, executed.args, executed.result) == (
        tool_calls(agent)[0].tool_call_id,
        {"city": "Paris"},
        WEATHER_RESULT,
    )


def test_the_trace_is_read_and_counted() -> None:
    """No ``content_not_captured``: the LangSmith source fed the run."""
    (found,) = load_traces([CAPTURES / LIB / "tool_call"])
    reading = read_sources(found, extract_runs(found, only_primary=True))
    assert reading.reason is None
    (source,) = reading.sources
    assert (source.scope, source.convention, source.runs, source.runs_with_content) == (
        "langsmith",
        "langsmith",
        1,
        1,
    )


def test_multi_turn_one_run_per_invoke_with_history() -> None:
    _, agents = _agents("multi_turn")
    first, second = sorted(agents, key=lambda r: r.start_time or 0)
    assert user_text(first) == [WEATHER_USER]
    assert final_answer(first).startswith("It is sunny in Paris today")
    assert system_text(second) == [WEATHER_SYSTEM]
    assert_second_turn(second)
    assert second.trace_id != first.trace_id


def test_tool_error() -> None:
    """``ToolException`` handled: the model is sent the error as a ``status: error`` message."""
    _, (agent,) = _agents("tool_error")
    assert_tool_error_agent(agent, error="Unknown city: Atlantis")
    assert len(only(capture_runs(LIB, "tool_error"), "tool")) == 3


_SYSTEM = {
    "lc": 1,
    "type": "constructor",
    "id": ["langchain", "schema", "messages", "SystemMessage"],
    "kwargs": {"content": "Be brief.", "type": "system"},
}
_HUMAN = {
    "lc": 1,
    "type": "constructor",
    "id": ["langchain", "schema", "messages", "HumanMessage"],
    "kwargs": {"content": "Weather in Paris?", "type": "human"},
}
_AI = {
    "lc": 1,
    "type": "constructor",
    "id": ["langchain", "schema", "messages", "AIMessage"],
    "kwargs": {
        "content": "",
        "type": "ai",
        "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}],
    },
}


def test_langchain_envelopes_give_their_messages_in_order() -> None:
    dumped_tool = {"type": "tool", "content": "sunny", "tool_call_id": "c1", "name": "get_weather"}
    cases = {
        "batch of prompts": {"messages": [[_SYSTEM, _HUMAN]]},
        "generations": {"generations": [[{"text": "", "message": _AI}]]},
        "graph update": {"output": [{"update": {"messages": [_AI]}, "goto": []}]},
        "tool message": {"output": dumped_tool},
    }
    found = {name: langchain_message_values(value) for name, value in cases.items()}
    assert found == {
        "batch of prompts": [_SYSTEM, _HUMAN],
        "generations": [_AI],
        "graph update": [_AI],
        "tool message": [dumped_tool],
    }
    # OpenAI-style messages, a plain generation's text and other JSON are not LangChain's
    # messages (the text of a Generation is read as the assistant's).
    assert langchain_message_values({"messages": [{"role": "user", "content": "hi"}]}) is None
    assert langchain_message_values({"city": "Paris"}) is None
    plain = langchain_messages({"generations": [[{"text": "Hello"}]]}, "p", [], "test")
    assert plain is not None and [(m.role, m.content.content) for m in plain] == [
        ("assistant", "Hello")
    ]


def test_any_convention_reads_langchain_messages_where_its_body_sits() -> None:
    """An OpenInference LLM span with only raw bodies holding LangChain's envelopes."""
    llm = span(
        "ChatOpenAI",
        {
            "openinference.span.kind": "LLM",
            "input.value": json.dumps({"messages": [[_SYSTEM, _HUMAN]]}),
            "output.value": json.dumps({"generations": [[{"text": "", "message": _AI}]]}),
        },
    )
    (run,) = extract_runs(trace(llm))
    assert system_text(run) == ["Be brief."]
    assert user_text(run) == ["Weather in Paris?"]
    (call,) = tool_calls(run)
    assert (call.tool_call_id, call.tool_name, call.args) == (
        "c1",
        "get_weather",
        {"city": "Paris"},
    )


def test_a_declared_convention_reads_langchain_envelopes_for_input_and_output() -> None:
    config = parse_config("""
conventions:
  - name: acme-langchain
    spans:
      - kind: llm
        equals: {acme.kind: llm}
        read: {messages: acme.in, output: acme.out}
""")
    llm = span(
        "acme.chat",
        {
            "acme.kind": "llm",
            "acme.in": json.dumps({"messages": [[_SYSTEM, _HUMAN]]}),
            "acme.out": json.dumps({"generations": [[{"text": "", "message": _AI}]]}),
        },
    )
    (run,) = extract_runs(trace(llm), claim_order(config.conventions))
    assert (run.kind, run.convention) == ("llm", "acme-langchain")
    assert system_text(run) == ["Be brief."]
    assert user_text(run) == ["Weather in Paris?"]
    (call,) = tool_calls(run)
    assert (call.tool_call_id, call.tool_name, call.args) == (
        "c1",
        "get_weather",
        {"city": "Paris"},
    )


def test_an_unnamed_graph_is_the_agent() -> None:
    """``create_react_agent`` names no agent: the graph's root chain (``LangGraph``) is it,
    its ``agent`` / ``tools`` nodes and the ``RunnableSequence`` around the model no runs."""
    runs, (agent,) = _agents("prebuilt_react_agent")
    assert agent.agent_name == "LangGraph"
    assert system_text(agent) == [WEATHER_SYSTEM] and user_text(agent) == [WEATHER_USER]
    (call,) = tool_calls(agent)
    assert (call.tool_name, call.args, call.result) == (
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert final_answer(agent).startswith("It is sunny in Paris today")
    assert sorted(r.kind for r in runs) == ["agent", "llm", "llm", "tool"]


def _wrapped_openai_runs() -> tuple[list[AgentRun], list[AgentRun]]:
    runs = capture_runs(LIB, "wrap_openai")
    return runs, only(runs, "llm")


def test_a_wrapped_openai_client_reads_its_request_and_response_bodies() -> None:
    """``wrap_openai`` records the OpenAI request and response bodies: the calls' content,
    offered tools and usage are read; the loop's ``@traceable`` chain is no run of its own."""
    runs, (first, second) = _wrapped_openai_runs()
    for step in (first, second):
        assert system_text(step) == [WEATHER_SYSTEM] and user_text(step) == [WEATHER_USER]
        assert [t.name for t in step.tools] == ["get_weather"]
    (call,) = tool_calls(first)
    assert call.tool_call_id.startswith("call_")
    assert (call.args, call.state) == ({"city": "Paris"}, "call")
    (answered,) = tool_calls(second)
    assert (answered.tool_call_id, answered.result) == (call.tool_call_id, WEATHER_RESULT)
    assert final_answer(second).startswith("It is sunny in Paris today")
    assert [(s.usage.input_tokens, s.usage.output_tokens) for s in (first, second)] == [
        (116, 23),
        (142, 23),
    ]
    (tool,) = only(runs, "tool")
    assert tool_calls(tool)[0].result == WEATHER_RESULT


def test_a_wrapped_openai_loop_is_one_agent_run() -> None:
    """The loop has no agent span (its chain is the user's own): one agent run all the same,
    the tool-call-only first call no run scored as an answer."""
    runs, _ = _wrapped_openai_runs()
    (run,) = [r for r in runs if r.primary]
    assert run.kind == "agent"
    assert system_text(run) == [WEATHER_SYSTEM] and user_text(run) == [WEATHER_USER]
    (call,) = tool_calls(run)
    assert (call.args, call.result) == ({"city": "Paris"}, WEATHER_RESULT)
    assert final_answer(run).startswith("It is sunny in Paris today")
    assert (run.usage.input_tokens, run.usage.output_tokens) == (116 + 142, 23 + 23)
