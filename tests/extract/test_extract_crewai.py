"""CrewAI traced by openinference-instrumentation-crewai (issue 31), on real captures.

``tests/fixtures/captures/openinference-crewai`` was made with crewai 1.15.30 and the
instrumentor 1.1.21 (``_make/capture_crewai.py``): default settings, which send no LLM span and
put the whole OpenAI transcript of each agent invocation in its AGENT span's ``output.value``,
and ``use_event_listener=True``, which sends LLM spans with quirks of their own.
"""

from __future__ import annotations

import dataclasses

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
from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs, read_spans
from tracescore.extract.crewai import SCOPE, python_literal
from tracescore.extract.model import AgentRun
from tracescore.ingest.files import load_traces

LIBRARY = "openinference-crewai"
CREW_SYSTEM = f"You are WeatherBot. {WEATHER_SYSTEM}\nYour personal goal is: Answer weather questions concisely."
CRITERIA = (
    "\n\nThis is the expected criteria for your final answer: A one-sentence weather report.\n"
    "you MUST return the actual complete content as the final answer, not a summary."
)
LONDON_RESULT = {"city": "London", "forecast": "rainy", "temperature_c": 14}
ATLANTIS_ANSWER = (
    "I could not find Atlantis. It is sunny in Paris today, about 21 degrees "
    "Celsius, and rainy in London at 14 degrees."
)
WARMER = "Is it warmer than yesterday?"
WARMER_ANSWER = "Yes: 21 degrees Celsius in Paris today, warmer than yesterday."
WEATHER_SCHEMA = {
    "properties": {"city": {"title": "City", "type": "string"}},
    "required": ["city"],
    "type": "object",
}
PARIS_GROUNDING = '{"city":"Paris","forecast":"sunny","temperature_c":21}'
LONDON_GROUNDING = '{"city":"London","forecast":"rainy","temperature_c":14}'


def _the_agent(runs: list[AgentRun]) -> AgentRun:
    """The one primary run: the agent's, never the crew's or the task's wrapper."""
    (agent,) = [r for r in runs if r.primary]
    assert agent.kind == "agent" and agent.convention == "openinference-crewai"
    assert agent.agent_name == "WeatherBot"
    return agent


def _assert_tool(run: AgentRun, *, parameters: dict) -> None:
    (tool,) = run.tools
    assert (tool.name, tool.description) == ("get_weather", "Get the current weather for a city.")
    assert {k: v for k, v in (tool.parameters or {}).items() if k in parameters} == parameters


def test_default_settings_rebuild_the_run_from_the_transcript() -> None:
    """No LLM span: system prompt, task, tool call and answer come from the AGENT span's
    ``TaskOutput.messages``, not its configuration (``input.value``) nor every message as
    answer text; the TOOL span is joined to the transcript's call, not counted again; the
    crew's token usage is the run's."""
    runs = capture_runs(LIBRARY, "tool_call")
    agent = _the_agent(runs)
    assert [r.kind for r in runs] == ["agent", "tool"]  # the crew's CHAIN is no run
    assert system_text(agent) == [CREW_SYSTEM]
    assert user_text(agent) == [f"\nCurrent Task: {WEATHER_USER}{CRITERIA}"]
    assert agent.input.remembered_messages == []
    (call,) = tool_calls(agent)
    assert (call.tool_call_id, call.tool_name, call.args) == (
        "call_010",
        "get_weather",
        {"city": "Paris"},
    )
    assert (call.state, call.result) == ("result", WEATHER_RESULT)
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert final_answer(agent) == f"{WEATHER_ANSWER}."
    assert (agent.usage.input_tokens, agent.usage.output_tokens, agent.usage.total_tokens) == (
        258,
        46,
        304,
    )
    _assert_tool(agent, parameters=WEATHER_SCHEMA)
    assert [(c.kind, c.content) for c in agent.context] == [("tool_result", PARIS_GROUNDING)]
    assert agent.model is None  # the transcript does not name it
    assert (agent.status, agent.warnings) == ("ok", [])
    (tool,) = only(runs, "tool")
    assert len(agent.span_ids) == 2 and agent.span_ids[1] == tool.span_id
    (ran,) = tool.output[0].content.tool_invocations or []
    assert (ran.tool_call_id, ran.args, ran.result) == (
        "call_010",
        {"city": "Paris"},
        WEATHER_RESULT,
    )


def test_default_settings_tool_error() -> None:
    """The tool raised for Atlantis: the TOOL span's error is the call's outcome, with the text
    the model was sent as its result; the later calls answered; a failure grounds nothing."""
    runs = capture_runs(LIBRARY, "tool_error")
    agent = _the_agent(runs)
    atlantis, paris, london = tool_calls(agent)
    assert [c.tool_call_id for c in (atlantis, paris, london)] == [
        "call_010",
        "call_020",
        "call_030",
    ]
    assert [c.args for c in (atlantis, paris, london)] == [
        {"city": "Atlantis"},
        {"city": "Paris"},
        {"city": "London"},
    ]
    assert (atlantis.state, atlantis.is_error, atlantis.error_text, atlantis.result) == (
        "output-error",
        True,
        "Unknown city: Atlantis",
        "Error executing tool: Unknown city: Atlantis",
    )
    assert (paris.state, paris.result) == ("result", WEATHER_RESULT)
    assert (london.state, london.result) == ("result", LONDON_RESULT)
    assert final_answer(agent) == ATLANTIS_ANSWER
    assert user_text(agent) == [
        f"\nCurrent Task: What's the weather in Atlantis, Paris and London today?{CRITERIA}"
    ]
    assert [c.content for c in agent.context] == [PARIS_GROUNDING, LONDON_GROUNDING]
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (620, 95)
    assert agent.status == "ok"
    failed = only(runs, "tool")[0]
    assert (failed.status, failed.error) == ("error", "Unknown city: Atlantis")


def test_two_tasks_are_two_agent_runs_and_the_crew_total_is_not_split() -> None:
    """A crew of two tasks: one primary run per task (the second was given the first's answer
    as context); the crew's token total cannot be split per task, and says so."""
    runs = capture_runs(LIBRARY, "two_tasks")
    first, second = only(runs, "agent")
    assert [r.primary for r in runs if r.kind == "agent"] == [True, True]
    assert len([r for r in runs if r.primary]) == 2
    assert user_text(first) == [f"\nCurrent Task: {WEATHER_USER}{CRITERIA}"]
    (text,) = user_text(second)
    assert text.startswith(f"\nCurrent Task: {WARMER}\n")
    assert text.endswith(f"This is the context you're working with:\n{WEATHER_ANSWER}.")
    assert [(c.tool_call_id, c.result) for r in (first, second) for c in tool_calls(r)] == [
        ("call_010", WEATHER_RESULT),
        ("call_030", WEATHER_RESULT),
    ]
    assert (final_answer(first), final_answer(second)) == (f"{WEATHER_ANSWER}.", WARMER_ANSWER)
    for run in (first, second):
        assert run.usage.total_tokens == 0
        (warning,) = run.warnings
        assert "the crew's 608 tokens are a total over 2 tasks" in warning


def test_agent_kickoff_conversation_keeps_the_history() -> None:
    """``Agent.kickoff`` twice in one session: the second turn's earlier exchange is history,
    its new question the input; usage is the ``LiteAgentOutput``'s own."""
    runs = capture_runs(LIBRARY, "conversation")
    first, second = [r for r in runs if r.primary]
    assert {r.conversation_id for r in runs} == {"weather-chat-1"}
    assert (first.agent_name, second.agent_name) == ("WeatherBot", "WeatherBot")
    assert user_text(first) == [f"\nCurrent Task: {WEATHER_USER}"]
    assert first.input.remembered_messages == []
    assert user_text(second) == [f"\nCurrent Task: {WARMER}"]
    assert system_text(second) == [CREW_SYSTEM]
    assert [(m.role, m.content.content) for m in second.input.remembered_messages] == [
        ("user", WEATHER_USER),
        ("assistant", f"{WEATHER_ANSWER}."),
    ]
    (call,) = tool_calls(second)
    assert (call.tool_call_id, call.args, call.result) == (
        "call_030",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert final_answer(second) == WARMER_ANSWER
    assert (first.usage.input_tokens, first.usage.output_tokens) == (258, 46)
    assert (second.usage.input_tokens, second.usage.output_tokens) == (310, 46)
    _assert_tool(second, parameters=WEATHER_SCHEMA)  # agent.tools names it, its span the rest


def test_event_listener_llm_spans() -> None:
    """``use_event_listener=True``: the same run from the LLM spans. A step that only calls a
    tool records a bare tool-call list (a call, not text); the names sent back are quoted
    (``'get_weather'``); ``llm.tools`` is one JSON list with Python-repr schemas."""
    runs = capture_runs(LIBRARY, "tool_call_event_listener")
    agent = _the_agent(runs)
    assert agent.model == "gpt-4o-mini"
    assert system_text(agent) == [CREW_SYSTEM]
    assert user_text(agent) == [f"\nCurrent Task: {WEATHER_USER}{CRITERIA}"]
    (call,) = tool_calls(agent)
    assert (call.tool_call_id, call.tool_name, call.args, call.result) == (
        "call_010",
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert final_answer(agent) == f"{WEATHER_ANSWER}."
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (116 + 142, 23 + 23)
    _assert_tool(agent, parameters={**WEATHER_SCHEMA, "additionalProperties": False})
    assert [c.content for c in agent.context] == [PARIS_GROUNDING]
    step, answer = only(runs, "llm")
    assert final_answer(step) == ""
    ((asked,), (sent,)) = tool_calls(step), tool_calls(answer)
    assert (asked.tool_call_id, asked.tool_name, asked.state) == ("call_010", "get_weather", "call")
    assert (sent.tool_name, sent.result) == ("get_weather", WEATHER_RESULT)


def test_event_listener_tool_error() -> None:
    """The listener's TOOL spans record no call id either: joined to the LLM steps' calls, the
    failed one is a failure in every LLM run sent its error text, and grounds nothing there."""
    runs = capture_runs(LIBRARY, "tool_error_event_listener")
    agent = _the_agent(runs)
    atlantis, paris, london = tool_calls(agent)
    assert (atlantis.tool_call_id, atlantis.state, atlantis.error_text, atlantis.result) == (
        "call_010",
        "output-error",
        "Unknown city: Atlantis",
        "Error executing tool: Unknown city: Atlantis",
    )
    assert [(c.tool_call_id, c.result) for c in (paris, london)] == [
        ("call_020", WEATHER_RESULT),
        ("call_030", LONDON_RESULT),
    ]
    assert final_answer(agent) == ATLANTIS_ANSWER
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (620, 95)
    assert [c.content for c in agent.context] == [PARIS_GROUNDING, LONDON_GROUNDING]
    assert [
        r.output[0].content.tool_invocations[0].tool_call_id  # type: ignore[index]
        for r in only(runs, "tool")
    ] == ["call_010", "call_020", "call_030"]
    last = only(runs, "llm")[-1]
    assert [(c.tool_call_id, c.state) for c in tool_calls(last)] == [
        ("call_010", "output-error"),
        ("call_020", "result"),
        ("call_030", "result"),
    ]
    assert [c.content for c in last.context] == [PARIS_GROUNDING, LONDON_GROUNDING]


def test_hostile_transcripts_never_raise() -> None:
    """Span text is attacker-controlled: odd transcripts and reprs are read as far as they go."""
    agent = span(
        "Bot._execute_core",
        {
            "openinference.span.kind": "AGENT",
            "output.value": '{"raw": 7, "messages": [3, {"role": "tool", "content": "{\'a\': ("}, '
            '{"role": "assistant", "tool_calls": [{"function": "x"}]}]}',
            "input.value": "{\"tools\": [\"name='t' description='\\\\'\", 5]}",
        },
        scope=SCOPE,
    )
    tool = span(
        "t.run",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "t",
            "input.value": "[",
            "tool.parameters": "{",
        },
        parent=agent.span_id,
        scope=SCOPE,
    )
    crew = span(
        "Crew.kickoff",
        {
            "openinference.span.kind": "CHAIN",
            "output.value": '{"token_usage": {"prompt_tokens": "x"}}',
        },
        scope=SCOPE,
    )
    runs = extract_runs(trace(crew, agent, tool))
    assert [r.kind for r in runs] == ["agent", "tool"]
    assert python_literal("{'a': " + "[" * 5000 + "]" * 5000 + "}").startswith("{'a': [")
    assert python_literal("{'a': __import__('os')}") == "{'a': __import__('os')}"
    assert python_literal("{" + "1: 2, " * 30_000 + "}").startswith("{1: 2")  # over the bound
    assert python_literal("{'a': 1}") == {"a": 1}


def test_an_unreadable_transcript_is_no_input_and_says_so() -> None:
    """A transcript cut by an attribute length limit: the configuration is still not the user's
    input (``Agent.kickoff``'s ``messages`` are), and the run says why it has no answer."""
    config = '{"agent": {"role": "WeatherBot"}, "context": "", "tools": []}'
    cut = '{"raw": "It is sunny", "messages": [{"role": "system", "content": "You are'
    task = span(
        "WeatherBot._execute_core",
        {
            "openinference.span.kind": "AGENT",
            "graph.node.id": "WeatherBot",
            "input.value": config,
            "output.value": cut,
        },
        scope=SCOPE,
    )
    kickoff = span(
        "WeatherBot.kickoff",
        {
            "openinference.span.kind": "AGENT",
            "graph.node.id": "WeatherBot",
            "input.value": f'{{"messages": "{WEATHER_USER}"}}',
            "output.value": cut,
        },
        scope=SCOPE,
    )
    for agent_span, asked in ((task, []), (kickoff, [WEATHER_USER])):
        (run,) = extract_runs(trace(agent_span))
        assert (run.agent_name, run.primary, user_text(run), run.output) == (
            "WeatherBot",
            True,
            asked,
            [],
        )
        assert "no readable transcript" in run.warnings[-1]


@pytest.mark.parametrize("scenario", ["tool_error", "conversation", "tool_error_event_listener"])
def test_every_value_cut_short_is_read_without_a_crash(scenario: str) -> None:
    """Each string attribute of the real spans cut at several lengths (as an attribute length
    limit cuts it): the trace is always read, never through the crash guard."""
    for original in load_traces([CAPTURES / LIBRARY / scenario]):
        for index, victim in enumerate(original.spans):
            for key, value in victim.attributes.items():
                if not isinstance(value, str) or len(value) < 8:
                    continue
                for cut in {1, len(value) // 3, len(value) // 2, len(value) - 2}:
                    spans = list(original.spans)
                    spans[index] = dataclasses.replace(
                        victim, attributes={**victim.attributes, key: value[:cut]}
                    )
                    damaged = dataclasses.replace(original, spans=spans)
                    assert extract_runs(damaged)
                    crashes = [
                        w for i in read_spans(damaged) for w in i.warnings if "could not" in w
                    ]
                    assert crashes == [], (scenario, victim.name, key, cut)
