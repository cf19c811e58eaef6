"""Hand-written agent loops traced by a model client's own instrumentation (issue 45, item 3):
the Anthropic SDK's telemetry (alone and beside OpenLLMetry's), Google GenAI's instrumentation,
LiteLLM's ``otel`` callback, Logfire, and Instructor under OpenLLMetry. Captures of the real
libraries against the scripted model (``tests/fixtures/captures/README.md``).

Each model call is read with its whole content: the system prompt, the user's turn, the calls
of earlier steps joined to their results, and its own output; and each user turn is one agent
run, whether an agent span marks it or its calls are linked only by what each was sent.
"""

from __future__ import annotations

import pytest

from tests.support.extract_support import (
    LONDON_RESULT,
    SECOND_TURN_ANSWER,
    SECOND_TURN_USER,
    TOOL_ERROR_ANSWER,
    TOOL_ERROR_USER,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    capture_runs,
    final_answer,
    only,
    system_text,
    tool_calls,
    user_text,
)
from tests.support.paths import CAPTURES
from tests.support.scorer_builds import CODE_READING_THE_ANSWER, build
from tracescore.extract import extract_runs
from tracescore.extract.content import has_content
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import CONTENT_NOT_CAPTURED, read_sources
from tracescore.ingest.files import load_traces

PARIS = {"city": "Paris"}


def _primary(library: str, scenario: str) -> list[AgentRun]:
    return [run for run in capture_runs(library, scenario) if run.primary]


def _answers(runs: list[AgentRun]) -> list[AgentRun]:
    """The runs whose last step answered in text (the others only called tools)."""
    return [run for run in runs if final_answer(run)]


def _assert_answered_turn(run: AgentRun, user: str = WEATHER_USER) -> None:
    """The last model call of the WeatherBot turn: the whole loop is in what it was sent."""
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [user]
    (call,) = tool_calls(run)
    assert (call.tool_name, call.args, call.result, call.state) == (
        "get_weather",
        PARIS,
        WEATHER_RESULT,
        "result",
    )
    assert call.tool_call_id
    assert final_answer(run).startswith(WEATHER_ANSWER)
    assert run.usage.input_tokens and run.usage.output_tokens
    assert run.warnings == []


def _assert_tool_step(run: AgentRun) -> None:
    """A model call whose output is only the ``get_weather("Paris")`` call."""
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [WEATHER_USER]
    (call,) = tool_calls(run)
    assert (call.tool_name, call.args, call.state) == ("get_weather", PARIS, "call")
    assert final_answer(run) == ""


def _assert_atlantis_paris_london(run: AgentRun, *, atlantis_failed: bool) -> None:
    assert user_text(run) == [TOOL_ERROR_USER]
    atlantis, paris, london = tool_calls(run)
    assert atlantis.args == {"city": "Atlantis"}
    assert "Unknown city: Atlantis" in str(atlantis.result)
    if atlantis_failed:
        assert (atlantis.state, atlantis.is_error) == ("output-error", True)
    assert (paris.args, paris.result) == (PARIS, WEATHER_RESULT)
    assert (london.args, london.result) == ({"city": "London"}, LONDON_RESULT)
    assert len({c.tool_call_id for c in (atlantis, paris, london)}) == 3
    assert final_answer(run).startswith(TOOL_ERROR_ANSWER.split(".")[0])


# --- every model call read ---------------------------------------------------------------------

CLIENT_LOOPS = [
    ("anthropic-sdk", "otel-genai", "claude-sonnet-4-5"),
    ("google-genai", "google-genai", "gemini-2.5-flash"),
    ("litellm-otel", "litellm", "gpt-4o-mini"),
    ("logfire", "otel-genai", "gpt-4o-mini"),
]


@pytest.mark.parametrize(("library", "convention", "model"), CLIENT_LOOPS)
def test_each_call_of_the_loop_is_read_whole(library: str, convention: str, model: str) -> None:
    calls = sorted(only(capture_runs(library, "tool_call"), "llm"), key=lambda r: r.start_time)
    assert [run.kind for run in calls] == ["llm", "llm"]
    assert {run.convention for run in calls} == {convention}
    assert {run.model for run in calls} == {model}
    _assert_tool_step(calls[0])
    _assert_answered_turn(calls[1])


@pytest.mark.parametrize(("library", "convention", "model"), CLIENT_LOOPS)
def test_the_second_turn_carries_the_first_as_history(
    library: str, convention: str, model: str
) -> None:
    answered = sorted(_answers(_primary(library, "multi_turn")), key=lambda run: run.start_time)
    first, second = answered
    _assert_answered_turn(first)
    assert user_text(second) == [SECOND_TURN_USER]
    assert second.input.remembered_messages[0].content.content == WEATHER_USER
    (call,) = tool_calls(second)
    assert (call.args, call.result) == (PARIS, WEATHER_RESULT)
    assert final_answer(second) == SECOND_TURN_ANSWER


@pytest.mark.parametrize(
    ("library", "atlantis_failed"),
    [
        ("anthropic-sdk", False),  # the SDK leaves the tool_result's is_error out
        ("google-genai", True),  # the SDK's {"error": …} function response
        ("litellm-otel", False),  # the loop sends "Error: …" as a plain tool message
        ("logfire", False),
    ],
)
def test_a_failed_tool_is_read_with_its_error(library: str, atlantis_failed: bool) -> None:
    (run,) = _answers(_primary(library, "tool_error"))
    _assert_atlantis_paris_london(run, atlantis_failed=atlantis_failed)
    assert system_text(run) == [WEATHER_SYSTEM]


def test_google_genai_function_responses_are_joined_to_their_calls() -> None:
    """The instrumentation names a response ``get_weather_0``, not the call's id: it is joined
    by order, so the result is the call's (not a second, unanswered call)."""
    (run,) = _answers(_primary("google-genai", "tool_call"))
    (call,) = tool_calls(run)
    assert call.tool_call_id.startswith("fc_")


def test_litellm_reads_a_tool_call_sent_only_as_a_legacy_function_call() -> None:
    """The first call's ``gen_ai.output.messages`` has no parts: the call is only in
    ``gen_ai.completion.0.function_call.*``. The tool's result, sent back as GenAI text parts,
    is the object the tool returned."""
    first, second = sorted(_primary("litellm-otel", "tool_call"), key=lambda run: run.start_time)
    _assert_tool_step(first)
    (call,) = tool_calls(second)
    assert call.result == WEATHER_RESULT
    runs = capture_runs("litellm-otel", "tool_call")
    assert len(runs) == 2  # the raw provider request span is the same call, no run of its own


def test_logfire_instrumented_tool_spans_are_tool_runs_and_its_scope_is_read() -> None:
    runs = capture_runs("logfire", "tool_error")
    tools = only(runs, "tool")
    assert [(r.convention, r.output[0].content.tool_invocations[0].args) for r in tools] == [
        ("logfire", {"city": "Atlantis"}),
        ("logfire", PARIS),
        ("logfire", {"city": "London"}),
    ]
    atlantis = tools[0].output[0].content.tool_invocations[0]
    assert (atlantis.tool_name, atlantis.state) == ("get_weather", "output-error")
    assert atlantis.error_text == "ValueError: Unknown city: Atlantis"
    for found in load_traces([CAPTURES / "logfire" / "tool_error"]):
        reading = read_sources(found, extract_runs(found))
        by_scope = {s.scope: s for s in reading.sources}
        # Its spans fed four runs: the turn's agent run (anchored to the ``logfire.span``) and
        # the three tool runs.
        assert by_scope["logfire"].convention == "logfire" and by_scope["logfire"].runs == 4
        assert reading.reason is None


# --- advice -----------------------------------------------------------------------------------


def _readings(library: str, scenario: str) -> list:
    return [
        read_sources(found, extract_runs(found, only_primary=True))
        for found in load_traces([CAPTURES / library / scenario])
    ]


def test_google_genai_with_true_names_a_value_it_accepts() -> None:
    """``=true`` is rejected by the instrumentation (no content): the advice names one it
    accepts, never ``true``."""
    readings = _readings("google-genai", "tool_call_content_true")
    assert readings and all(r.reason == CONTENT_NOT_CAPTURED for r in readings)
    for reading in readings:
        (source,) = reading.sources
        assert source.detail is not None
        assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT" in source.detail
        assert "CAPTURE_MESSAGE_CONTENT=true" not in source.detail


def test_anthropic_sdk_beside_openllmetry_reads_openllmetry_and_explains_the_sdk() -> None:
    """OpenLLMetry's spans are not made current, so the SDK's own (metadata-only) span of the
    same request is a trace of its own: OpenLLMetry's traces are read whole; the SDK's say
    how to get its content or turn it off."""
    readings = _readings("anthropic-sdk-openllmetry", "tool_call")
    sdk = [r for r in readings if r.sources[0].scope == "com.anthropic.sdk.python"]
    assert len(sdk) == 2 and all(r.reason == CONTENT_NOT_CAPTURED for r in sdk)
    for reading in sdk:
        detail = reading.sources[0].detail or ""
        assert "ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content" in detail
        assert "ANTHROPIC_OPEN_TELEMETRY=false" in detail
    read = [r for r in readings if r not in sdk]
    assert len(read) == 2 and all(r.reason is None for r in read)
    calls = sorted(
        (run for run in _primary("anthropic-sdk-openllmetry", "tool_call") if has_content(run)),
        key=lambda run: run.start_time,
    )
    _assert_tool_step(calls[0])
    _assert_answered_turn(calls[1])


# --- Instructor under OpenLLMetry ---------------------------------------------------------------


def test_instructor_agent_run_is_read() -> None:
    (agent,) = only(capture_runs("openllmetry-instructor", "tool_call"), "agent")
    assert (agent.agent_name, agent.convention, agent.primary) == (
        "WeatherBot",
        "openllmetry",
        True,
    )
    assert system_text(agent) == [WEATHER_SYSTEM]
    assert user_text(agent) == [WEATHER_USER]
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (116 + 142, 23 + 23)


def test_instructor_second_turn_and_tool_error_are_read() -> None:
    first, second = only(capture_runs("openllmetry-instructor", "multi_turn"), "agent")
    assert user_text(first) == [WEATHER_USER] and user_text(second) == [SECOND_TURN_USER]
    assert final_answer(second) == SECOND_TURN_ANSWER
    (failed,) = only(capture_runs("openllmetry-instructor", "tool_error"), "agent")
    assert final_answer(failed).startswith("I could not find the weather for Atlantis")
    (tool,) = only(capture_runs("openllmetry-instructor", "tool_error"), "tool")
    (call,) = tool.output[0].content.tool_invocations or []
    assert (call.tool_name, call.state) == ("get_weather", "output-error")


@pytest.mark.parametrize("scenario", ["tool_call", "multi_turn", "tool_error"])
def test_instructor_structured_call_and_tool_span_are_one_call(scenario: str) -> None:
    for agent in only(capture_runs("openllmetry-instructor", scenario), "agent"):
        (call,) = tool_calls(agent)
        assert call.args == ({"city": "Atlantis"} if scenario == "tool_error" else PARIS)
        assert call.state == ("output-error" if scenario == "tool_error" else "result")


# --- one agent run per user turn (the loop assembly) ---------------------------------------------


@pytest.mark.parametrize("scenario", ["tool_call", "tool_error"])
def test_logfire_turn_under_its_span_is_one_agent_run(scenario: str) -> None:
    (run,) = _primary("logfire", scenario)
    assert run.kind == "agent"
    if scenario == "tool_call":
        _assert_answered_turn(run)
    else:
        _assert_atlantis_paris_london(run, atlantis_failed=True)


@pytest.mark.parametrize("library", ["anthropic-sdk", "google-genai", "litellm-otel"])
def test_a_tool_call_only_step_in_a_trace_of_its_own_is_not_scored_as_an_answer(
    library: str,
) -> None:
    steps = [run for run in _primary(library, "tool_call") if not final_answer(run)]
    assert len(steps) == 1
    for name in CODE_READING_THE_ANSWER:
        result = build(name).run_sync(steps[0])
        assert (result.status, result.score) == ("not_scorable", None), name
