"""LlamaIndex ``FunctionAgent`` through openinference-instrumentation-llama-index: the CHAIN
root is the agent, wrapper LLM spans are no runs, tool outputs come out of ``ToolOutput``."""

from __future__ import annotations

from tests.support.extract_support import (
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
    trace,
    user_text,
)
from tests.support.extract_support import span as make_span
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun, TokenUsage

LIB = "openinference-llamaindex"
CONVENTION = "openinference-llamaindex"


def _agent_runs(scenario: str) -> list[AgentRun]:
    """The scenario's runs, checked to hold exactly one primary run per agent invocation (the
    agent) and no run for a wrapper LLM span (``_prepare_chat_with_tools``, the outer
    ``astream_chat``): the LLM runs are the calls that sent messages."""
    runs = capture_runs(LIB, scenario)
    agents = only(runs, "agent")
    assert [r for r in runs if r.primary] == agents
    assert {r.trace_id for r in agents} == {r.trace_id for r in runs}
    assert len({r.trace_id for r in agents}) == len(agents)
    for llm in only(runs, "llm"):
        assert llm.attributes["llm.input_messages.0.message.role"] == "system"
    assert all(r.convention == CONVENTION for r in runs)
    return agents


def _assert_weather_agent(agent: AgentRun) -> None:
    assert agent.agent_name == "WeatherBot"
    assert agent.model == "gpt-4o-mini" and agent.provider == "openai"
    assert system_text(agent) == [WEATHER_SYSTEM]
    assert [t.name for t in agent.tools] == ["get_weather"]
    assert agent.tools[0].description is not None
    assert "Get the current weather for a city." in agent.tools[0].description
    # FunctionAgent streams its chat calls, and the stream carried no token counts: unknown,
    # not invented.
    assert agent.usage == TokenUsage()
    assert agent.warnings == []


def test_tool_call() -> None:
    runs = capture_runs(LIB, "tool_call")
    (agent,) = _agent_runs("tool_call")
    _assert_weather_agent(agent)
    assert user_text(agent) == [WEATHER_USER]
    assert agent.input.remembered_messages == []
    (call,) = tool_calls(agent)
    assert call.tool_call_id.startswith("call_")
    assert (call.tool_name, call.args, call.state, call.result) == (
        "get_weather",
        {"city": "Paris"},
        "result",
        WEATHER_RESULT,
    )
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    assert [c.kind for c in agent.context] == ["tool_result"]
    assert agent.context[0].metadata == {"tool_call_id": call.tool_call_id}
    # Two chat calls: each an LLM run; the tool span a tool run with the call's own id and
    # arguments out of {"kwargs": …}, its result out of the ToolOutput (raw_output).
    assert len(only(runs, "llm")) == 2
    (tool,) = only(runs, "tool")
    (executed,) = tool_calls(tool)
    assert (executed.tool_call_id, executed.args, executed.result) == (
        call.tool_call_id,
        {"city": "Paris"},
        WEATHER_RESULT,
    )


def test_multi_turn_reads_the_memory_as_history() -> None:
    first, second = _agent_runs("multi_turn")
    for agent in (first, second):
        _assert_weather_agent(agent)
    assert user_text(first) == [WEATHER_USER] and first.input.remembered_messages == []
    earlier = assert_second_turn(second)
    # The result LlamaIndex sent the model back is str() of the tool's dict: kept as sent.
    assert earlier.result == str(WEATHER_RESULT)
    assert first.conversation_id is None  # FunctionAgent names no session


def test_tool_error() -> None:
    runs = capture_runs(LIB, "tool_error")
    (agent,) = _agent_runs("tool_error")
    _assert_weather_agent(agent)
    assert_tool_error_agent(agent, error="ValueError: Unknown city: Atlantis")
    atlantis = tool_calls(agent)[0]
    failed = [r for r in only(runs, "tool") if r.status == "error"]
    assert [tool_calls(r)[0].tool_call_id for r in failed] == [atlantis.tool_call_id]
    # The LLM call after the failure knows its call failed (the tool span says so).
    last_llm = only(runs, "llm")[-1]
    assert [c.state for c in tool_calls(last_llm)] == ["output-error", "result", "result"]


def test_tool_output_error_and_a_workflow_that_is_no_agent() -> None:
    """A ``ToolOutput`` with ``is_error`` is a failed call (tools that return their error
    rather than raise); a ``*.run`` CHAIN whose steps name no agent stays a plain workflow."""
    scope = "openinference.instrumentation.llama_index"
    workflow = make_span("MyWorkflow.run", {"openinference.span.kind": "CHAIN"}, scope=scope)
    step = make_span(
        "MyWorkflow.step",
        {"openinference.span.kind": "CHAIN", "input.value": "StartEvent(" + "x" * 30_000 + ")"},
        parent=workflow.span_id,
        scope=scope,
    )
    tool = make_span(
        "FunctionTool.acall",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": '{"kwargs": {"city": "Atlantis"}}',
            "output.value": '{"blocks": [{"text": "no such city"}], "tool_name": "get_weather", '
            '"raw_input": {"args": [], "kwargs": {"city": "Atlantis"}}, '
            '"raw_output": "no such city", "is_error": true}',
        },
        parent=step.span_id,
        scope=scope,
    )
    (run,) = extract_runs(trace(workflow, step, tool))
    assert run.kind == "tool" and run.primary is False and run.agent_name is None
    (call,) = tool_calls(run)
    assert (call.args, call.state, call.error_text) == (
        {"city": "Atlantis"},
        "output-error",
        "no such city",
    )
