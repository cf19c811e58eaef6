"""AutoGen AgentChat 0.7.5 with its built-in telemetry, default settings: ``invoke_agent`` and
``execute_tool`` spans (scope ``autogen-core``) with names and ids only, no model call spans,
no content, no usage (``_make/capture_autogen.py``)."""

from __future__ import annotations

from tests.support.extract_support import capture_runs, only, tool_calls
from tracescore.extract import primary_runs
from tracescore.extract.model import AgentRun


def _assert_contentless_agent(agent: AgentRun, calls: int) -> None:
    """What AutoGen sends: the agent's name and each tool call's name and id; nothing else."""
    assert agent.kind == "agent" and agent.primary and agent.convention == "otel-genai"
    assert agent.agent_name == "WeatherBot"
    assert agent.model is None and agent.usage.total_tokens == 0
    assert agent.input.system_messages == [] and agent.input.input_messages == []
    assert agent.input.remembered_messages == []
    assert all(not m.content.content for m in agent.output) and agent.context == []
    invocations = tool_calls(agent)
    assert [c.tool_name for c in invocations] == ["get_weather"] * calls
    assert all(
        c.tool_call_id.startswith("call_") and c.args == {} and c.result is None
        for c in invocations
    )
    assert len({c.tool_call_id for c in invocations}) == calls
    assert agent.warnings == []


def test_one_contentless_run_per_invocation() -> None:
    """``create_agent`` is a trace of its own and no run; ``invoke_agent`` is the run."""
    runs = capture_runs("autogen", "tool_call")
    (agent,) = primary_runs(runs)
    _assert_contentless_agent(agent, 1)
    (tool_run,) = only(runs, "tool")
    assert tool_calls(tool_run)[0].tool_call_id == tool_calls(agent)[0].tool_call_id
    assert only(runs, "llm") == []


def test_multi_turn_is_two_runs() -> None:
    first, second = primary_runs(capture_runs("autogen", "multi_turn"))
    assert first.trace_id != second.trace_id
    _assert_contentless_agent(first, 1)
    _assert_contentless_agent(second, 1)
    assert first.conversation_id is None  # AutoGen names no conversation


def test_tool_error_is_a_failed_call() -> None:
    runs = capture_runs("autogen", "tool_error")
    (agent,) = primary_runs(runs)
    _assert_contentless_agent(agent, 3)
    atlantis, paris, london = tool_calls(agent)
    assert (atlantis.state, atlantis.is_error) == ("output-error", True)
    assert atlantis.error_text == "ValueError: Unknown city: Atlantis"
    assert paris.state == london.state == "call"  # ran; what it returned was not sent
    assert [run.status for run in only(runs, "tool")] == ["error", "unset", "unset"]
