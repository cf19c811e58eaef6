"""The BeeAI framework's ``RequirementAgent`` and ``ToolCallingAgent`` through
openinference-instrumentation-beeai: ``final_answer`` is the answer (no tool call, no extra
empty agent run), the user's prompt out of BeeAI's task template, tool arguments out of
``{input, options}``."""

from __future__ import annotations

import pytest

from tests.support.extract_support import (
    LONDON_RESULT,
    SECOND_TURN_USER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    assert_atlantis_calls,
    assert_second_turn,
    capture_runs,
    final_answer,
    only,
    system_text,
    tool_calls,
    user_text,
)
from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import read_sources
from tracescore.ingest.files import load_traces

LIB = "openinference-beeai"
CONVENTION = "openinference-beeai"
AGENTS = pytest.mark.parametrize("agent_kind", ["", "_toolcalling"])
"""The ``RequirementAgent``'s captures, then the ``ToolCallingAgent``'s (scenario suffix)."""


def _agents(scenario: str) -> list[AgentRun]:
    """The agent runs, checked to be the only primary runs (one per ``run()``, none for
    ``final_answer``), with no ``final_answer`` call, tool run or offered tool anywhere."""
    runs = capture_runs(LIB, scenario)
    agents = only(runs, "agent")
    assert [r for r in runs if r.primary] == agents
    assert [a.agent_name for a in agents] == ["WeatherBot"] * len(agents)
    assert len({a.trace_id for a in agents}) == len(agents)
    for run in runs:
        assert run.convention == CONVENTION
        assert all(
            c.tool_name == "get_weather"
            for m in [*run.output, *run.input.remembered_messages]
            for c in m.content.tool_invocations or []
        )
        assert all(t.name == "get_weather" for t in run.tools)
    return agents


def _assert_weather_bot(agent: AgentRun) -> None:
    (system,) = system_text(agent)
    assert "Assume the role of" in system  # BeeAI's prompt, with ours in it
    assert WEATHER_SYSTEM in system
    assert agent.model == "gpt-4o-mini"
    assert [t.name for t in agent.tools] == ["get_weather"]
    assert agent.warnings == []


@AGENTS
def test_tool_call(agent_kind: str) -> None:
    runs = capture_runs(LIB, "tool_call" + agent_kind)
    (agent,) = _agents("tool_call" + agent_kind)
    _assert_weather_bot(agent)
    assert user_text(agent) == [WEATHER_USER]  # not "Your task: …"
    (call,) = tool_calls(agent)
    assert (call.tool_name, call.args, call.result, call.state) == (
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
        "result",
    )
    assert call.tool_call_id.startswith("call_")
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert final_answer(agent) == "It is sunny in Paris today, about 21 degrees Celsius."
    steps = only(runs, "llm")
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (
        sum(s.usage.input_tokens for s in steps),
        sum(s.usage.output_tokens for s in steps),
    )
    assert agent.usage.input_tokens == 116 + 142
    # The answering step said the answer: it is no tool-call-only step.
    assert final_answer(steps[-1]) == final_answer(agent)
    # The tool run: the call's own arguments, not {"input": {…}, "options": None}, and what
    # the tool returned, not its str().
    (tool,) = only(runs, "tool")
    (executed,) = tool_calls(tool)
    assert (executed.args, executed.result) == ({"city": "Paris"}, WEATHER_RESULT)
    (found,) = load_traces([CAPTURES / LIB / ("tool_call" + agent_kind)])
    assert read_sources(found, extract_runs(found, only_primary=True)).reason is None


@AGENTS
def test_multi_turn_with_memory(agent_kind: str) -> None:
    first, second = sorted(_agents("multi_turn" + agent_kind), key=lambda r: r.start_time or 0)
    _assert_weather_bot(second)
    assert user_text(first) == [WEATHER_USER]
    assert user_text(second) == [SECOND_TURN_USER]
    # The first run's answer is remembered as said, its "Message has been sent" result gone.
    assert_second_turn(second)


@AGENTS
def test_tool_error(agent_kind: str) -> None:
    runs = capture_runs(LIB, "tool_error" + agent_kind)
    (agent,) = _agents("tool_error" + agent_kind)
    calls = tool_calls(agent)
    assert_atlantis_calls(
        calls,
        error='ToolError(beeai_framework.tools.errors): Tool Error\nContext: {"name": '
        '"get_weather"}\n  ValueError(builtins): Unknown city: Atlantis',
    )
    assert calls[2].result == LONDON_RESULT
    assert final_answer(agent).startswith("I could not find Atlantis.")
    # Three tool runs: the error event BeeAI records below the failed tool's span is none.
    assert [tool_calls(t)[0].args for t in only(runs, "tool")] == [
        {"city": "Atlantis"},
        {"city": "Paris"},
        {"city": "London"},
    ]
