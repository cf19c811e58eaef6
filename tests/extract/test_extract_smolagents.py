"""smolagents ``ToolCallingAgent`` through openinference-instrumentation-smolagents: the agent's
name and task, ``final_answer`` as the answer, earlier steps rebuilt from ``tool-call`` /
``tool-response`` messages, tool arguments unwrapped."""

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
from tracescore.extract.model import AgentRun

LIB = "openinference-smolagents"
CONVENTION = "openinference-smolagents"
SCOPE = "openinference.instrumentation.smolagents"


def _agent_runs(scenario: str) -> list[AgentRun]:
    """The agent runs, checked to be the only primary runs (one per ``run()``), and no
    ``final_answer`` run, call, context result or offered tool anywhere."""
    runs = capture_runs(LIB, scenario)
    agents = only(runs, "agent")
    assert [r for r in runs if r.primary] == agents
    assert len({r.trace_id for r in agents}) == len(agents)
    for run in runs:
        assert all(
            c.tool_name == "get_weather"
            for m in run.output
            for c in m.content.tool_invocations or []
        )
        assert all(c.source == "get_weather" for c in run.context)
        assert all(t.name == "get_weather" for t in run.tools)
    assert all(r.convention == CONVENTION for r in runs)
    return agents


def _usage_of_steps(runs: list[AgentRun], agent: AgentRun) -> tuple[int, int]:
    steps = [r for r in only(runs, "llm") if r.trace_id == agent.trace_id]
    assert len(steps) >= 2 and all(s.usage.input_tokens > 0 for s in steps)
    return sum(s.usage.input_tokens for s in steps), sum(s.usage.output_tokens for s in steps)


def _assert_weather_agent(agent: AgentRun) -> None:
    assert agent.agent_name == "WeatherBot"  # the span is ``WeatherBot.run``
    assert agent.model == "gpt-4o-mini"
    (system,) = system_text(agent)
    assert WEATHER_SYSTEM in system  # smolagents' own prompt, with the agent's instructions
    assert [t.name for t in agent.tools] == ["get_weather"]
    assert agent.warnings == []


def test_tool_call() -> None:
    runs = capture_runs(LIB, "tool_call")
    (agent,) = _agent_runs("tool_call")
    _assert_weather_agent(agent)
    assert user_text(agent) == [WEATHER_USER]  # not "New task:\n…"
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
    assert final_answer(agent) == WEATHER_ANSWER + "."
    assert [c.kind for c in agent.context] == ["tool_result"]
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == _usage_of_steps(runs, agent)
    assert agent.usage.input_tokens == int(agent.attributes["llm.token_count.prompt"])
    # The tool run: the call's id (from the LLM span of its step) and its own arguments, not
    # Tool.__call__'s {"args", "sanitize_inputs_outputs", "kwargs"}.
    (tool,) = only(runs, "tool")
    (executed,) = tool_calls(tool)
    assert (executed.tool_call_id, executed.args, executed.result) == (
        call.tool_call_id,
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    # The second LLM call was sent the first step as tool-call / tool-response messages: its
    # trajectory holds that call, joined to its result, then the answer.
    second = only(runs, "llm")[-1]
    assert user_text(second) == [WEATHER_USER]
    (earlier,) = tool_calls(second)
    assert (earlier.tool_call_id, earlier.args, earlier.result) == (
        call.tool_call_id,
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert final_answer(second) == WEATHER_ANSWER + "."


def test_multi_turn_with_memory() -> None:
    runs = capture_runs(LIB, "multi_turn")
    first, second = sorted(_agent_runs("multi_turn"), key=lambda r: r.start_time or 0)
    for agent in (first, second):
        _assert_weather_agent(agent)
    assert user_text(first) == [WEATHER_USER]
    # The task of this run, not the agent's previous one (``smolagents.task`` on the span).
    assert second.attributes["smolagents.task"] == WEATHER_USER
    earlier = assert_second_turn(second)
    assert earlier.result == str(WEATHER_RESULT)  # "Observation:\n{…}", as the model read it
    assert second.input.remembered_messages[2].content.content == WEATHER_ANSWER + "."
    # The AGENT span's counts run on over both runs (reset=False); the run sums its own steps.
    assert (second.usage.input_tokens, second.usage.output_tokens) == _usage_of_steps(runs, second)
    assert second.usage.input_tokens < int(second.attributes["llm.token_count.prompt"])


def test_tool_error() -> None:
    runs = capture_runs(LIB, "tool_error")
    (agent,) = _agent_runs("tool_error")
    _assert_weather_agent(agent)
    assert_tool_error_agent(agent, error="ValueError: Unknown city: Atlantis")
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == _usage_of_steps(runs, agent)
    # smolagents keeps no call for a failed step, only its error: the LLM call after it reads
    # the failed call back from the error text.
    after_failure = only(runs, "llm")[1]
    failed, asked = tool_calls(after_failure)
    assert (failed.tool_name, failed.args, failed.state) == (
        "get_weather",
        {"city": "Atlantis"},
        "output-error",
    )
    assert failed.error_text is not None and "Unknown city: Atlantis" in failed.error_text
    assert (asked.args, asked.state) == ({"city": "Paris"}, "call")


def test_hostile_step_messages_do_not_break_the_run() -> None:
    """Step messages are span text: a repr that is no literal, a deep one, an error naming no
    tool, and an observation for several calls read as text, never raise."""
    messages = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "New task:\nWeather?",
        "llm.input_messages.1.message.role": "tool-call",
        "llm.input_messages.1.message.content": "Calling tools:\n[{'id': __import__('os')}]",
        "llm.input_messages.2.message.role": "tool-call",
        "llm.input_messages.2.message.content": "Calling tools:\n" + "[" * 5000 + "]" * 5000,
        "llm.input_messages.3.message.role": "tool-response",
        "llm.input_messages.3.message.content": "Error:\nError while parsing the model output",
        "llm.input_messages.4.message.role": "tool-response",
        "llm.input_messages.4.message.content": (
            "Error:\nError executing tool 'get_weather' with arguments {'city': ': x: y'"
        ),
        "llm.input_messages.5.message.role": "tool-call",
        "llm.input_messages.5.message.content": (
            "Calling tools:\n[{'id': 'a', 'function': {'name': 'get_weather', 'arguments': {}}},"
            " {'id': 'b', 'function': {'name': 'get_weather', 'arguments': {}}}]"
        ),
        "llm.input_messages.6.message.role": "tool-response",
        "llm.input_messages.6.message.content": "Observation:\none\ntwo",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Sunny.",
        "openinference.span.kind": "LLM",
    }
    agent = make_span(
        "Bot.run", {"openinference.span.kind": "AGENT", "input.value": "[1]"}, scope=SCOPE
    )
    (run,) = extract_runs(trace(agent))
    assert run.agent_name == "Bot" and user_text(run) == ["[1]"]  # no task: the text as sent
    (llm_run,) = extract_runs(trace(make_span("OpenAIServerModel.generate", messages, scope=SCOPE)))
    assert user_text(llm_run) == ["Weather?"] and final_answer(llm_run) == "Sunny."
    calls = tool_calls(llm_run)
    # The parse error answers no call; the failed call's cut arguments stay text; the two
    # parallel calls' shared observation cannot be split between them.
    assert [(c.tool_call_id, c.state) for c in calls] == [
        ("", "output-error"),
        ("a", "call"),
        ("b", "call"),
    ]
    assert calls[0].args == "{'city': ': x: y'"
