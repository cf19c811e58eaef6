"""DSPy ``ReAct`` through openinference-instrumentation-dspy (and with LiteLLM's too): the
field-format prompts and replies read as messages, ReAct's steps as the trajectory of one agent
run, tools under their own names and arguments."""

from __future__ import annotations

import pytest

from tests.support.extract_support import (
    LONDON_RESULT,
    SECOND_TURN_ANSWER,
    SECOND_TURN_USER,
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
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import read_sources
from tracescore.ingest.files import load_traces

LIB = "openinference-dspy"
CONVENTION = "openinference-dspy"
ANSWER = "It is sunny in Paris today, about 21 degrees Celsius."


def _agents(scenario: str) -> tuple[list[AgentRun], list[AgentRun]]:
    """All runs and the agent runs: one per ``ReAct`` call, the only primary runs; no
    ``finish`` call or tool run anywhere."""
    runs = capture_runs(LIB, scenario)
    agents = only(runs, "agent")
    assert [r for r in runs if r.primary] == agents
    assert len({a.trace_id for a in agents}) == len(agents)
    for run in runs:
        assert run.convention == CONVENTION
        assert all(
            c.tool_name == "get_weather"
            for m in run.output
            for c in m.content.tool_invocations or []
        )
    return runs, agents


def _assert_weather_react(agent: AgentRun) -> None:
    assert agent.agent_name == "ReAct"
    (system,) = system_text(agent)
    # The signature's instructions (ReAct's own appended), not DSPy's field description.
    assert system.startswith(WEATHER_SYSTEM + "\n\nYou are an Agent.")
    assert "[[ ##" not in system
    assert agent.warnings == []


@pytest.mark.parametrize("scenario", ["tool_call", "tool_call_litellm", "tool_call_json"])
def test_tool_call(scenario: str) -> None:
    runs, (agent,) = _agents(scenario)
    _assert_weather_react(agent)
    assert user_text(agent) == [WEATHER_USER]  # the question field, no markers
    (call,) = tool_calls(agent)
    assert (call.tool_call_id, call.tool_name, call.args, call.result, call.state) == (
        "dspy-step-0",
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
        "result",
    )
    # The trajectory: thought, call; the finish step's thought (no call); the extract call's
    # reasoning and the answer field.
    assert [p.type for p in agent.output[0].content.parts] == [
        "reasoning",
        "tool-invocation",
        "reasoning",
        "reasoning",
        "text",
    ]
    assert reasoning(agent) == [
        "I should look up the weather in Paris.",
        "I have what I need to answer.",
        "The tool says sunny and 21 degrees Celsius.",
    ]
    assert final_answer(agent) == ANSWER
    # The tool run under its own name and arguments, not get_weather.__call__ with kwargs.
    (tool,) = only(runs, "tool")
    (executed,) = tool_calls(tool)
    assert (executed.tool_name, executed.args, executed.result) == (
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    (found,) = load_traces([CAPTURES / LIB / scenario])
    assert read_sources(found, extract_runs(found, only_primary=True)).reason is None


def test_usage_is_there_when_litellm_sends_it() -> None:
    """DSPy's own spans carry no token counts; LiteLLM's, below each ``LM.__call__``, do, and
    the agent sums those model calls once."""
    _, (plain,) = _agents("tool_call")
    assert plain.usage.input_tokens == 0
    runs, (agent,) = _agents("tool_call_litellm")
    leaves = [
        r for r in only(runs, "llm") if r.attributes.get("llm.model_name", "").startswith("openai/")
    ]
    assert len(leaves) == 3
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (
        sum(r.usage.input_tokens for r in leaves),
        sum(r.usage.output_tokens for r in leaves),
    )
    assert agent.usage.input_tokens > 0


def test_second_step_reads_the_trajectory_as_calls_and_results() -> None:
    runs, _ = _agents("tool_call")
    second = only(runs, "llm")[1]
    assert user_text(second) == [WEATHER_USER]
    (earlier,) = tool_calls(second)
    assert (earlier.tool_call_id, earlier.args, earlier.result) == (
        "dspy-step-0",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert final_answer(second) == ""  # the finish step: a thought, no answer and no call


def test_multi_turn_history() -> None:
    _, agents = _agents("multi_turn")
    first, second = sorted(agents, key=lambda r: r.start_time or 0)
    assert final_answer(first) == ANSWER
    _assert_weather_react(second)
    assert user_text(second) == [SECOND_TURN_USER]
    # The earlier turn as the History held it; ReAct's steps were sent its answer as None.
    assert [(m.role, m.content.content) for m in second.input.remembered_messages] == [
        ("user", WEATHER_USER),
        ("assistant", ANSWER),
    ]
    (call,) = tool_calls(second)
    assert (call.args, call.result) == ({"city": "Paris"}, WEATHER_RESULT)
    assert final_answer(second) == SECOND_TURN_ANSWER


def test_tool_error() -> None:
    """ReAct catches the tool's exception and sends it as the observation; the failed span
    says what it was."""
    _, (agent,) = _agents("tool_error")
    atlantis, paris, london = tool_calls(agent)
    assert (atlantis.args, atlantis.state, atlantis.error_text) == (
        {"city": "Atlantis"},
        "output-error",
        "ValueError: Unknown city: Atlantis",
    )
    assert (paris.args, paris.result, london.args, london.result) == (
        {"city": "Paris"},
        WEATHER_RESULT,
        {"city": "London"},
        LONDON_RESULT,
    )
    assert [c.tool_call_id for c in (atlantis, paris, london)] == [
        "dspy-step-0",
        "dspy-step-1",
        "dspy-step-2",
    ]
    assert final_answer(agent).startswith("I could not find Atlantis.")


def test_a_predict_call_reads_its_fields() -> None:
    """A plain ``Predict`` (no agent): the instructions, the input fields as the user's text
    (several as ``name: value``), the output fields as the answer."""
    system = (
        "Your input fields are:\n1. `question` (str):\n2. `context` (str):\nYour output fields "
        "are:\n1. `answer` (str):\nAll interactions will be structured in the following way, "
        "with the appropriate values filled in.\n\n[[ ## question ## ]]\n{question}\n\n"
        "[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]\nIn adhering to this "
        "structure, your objective is: \n        Answer in one word."
    )
    user = (
        "[[ ## question ## ]]\nCapital of France?\n\n[[ ## context ## ]]\nEurope.\n\n"
        "Respond with the corresponding output fields, starting with the field "
        "`[[ ## answer ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."
    )
    llm = span(
        "LM.__call__",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": system,
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": user,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]",
        },
        scope="openinference.instrumentation.dspy",
    )
    (run,) = extract_runs(trace(llm))
    assert run.convention == CONVENTION
    assert system_text(run) == ["Answer in one word."]
    assert user_text(run) == ["question: Capital of France?\n\ncontext: Europe."]
    assert final_answer(run) == "Paris"
