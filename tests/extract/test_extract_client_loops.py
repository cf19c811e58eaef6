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
    linked_traces,
    only,
    system_text,
    tool_calls,
    user_text,
)
from tests.support.paths import CAPTURES
from tests.support.scorer_builds import CODE_READING_THE_ANSWER, build
from tracescore.extract import extract_runs
from tracescore.extract.content import has_content
from tracescore.extract.linked import CallLinks, read_linked
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import CONTENT_NOT_CAPTURED, READ_ELSEWHERE, read_sources
from tracescore.ingest.files import load_traces
from tracescore.spans import Trace

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


def test_anthropic_sdk_beside_openllmetry_reads_each_request_once() -> None:
    """OpenLLMetry's spans are not made current, so the SDK's own (metadata-only) span of the
    same request is a trace of its own: linked by the response id, it is no run, and its trace
    says where the request was read and how to stop sending it twice. OpenLLMetry's two calls
    are one loop, read in its answering call's trace."""
    traces = load_traces([CAPTURES / "anthropic-sdk-openllmetry" / "tool_call"])
    linked = linked_traces(traces)
    readings = {
        trace.trace_id: read_sources(
            trace, linked[trace.trace_id].runs, twins=linked[trace.trace_id].twins
        )
        for trace in traces
    }
    sdk = [t for t in traces if t.spans[0].scope.name == "com.anthropic.sdk.python"]
    assert len(sdk) == 2
    for trace in sdk:
        found = linked[trace.trace_id]
        (twin,) = found.twins
        assert found.runs == [] and twin.response_id in ("msg_0053", "msg_0054")
        assert readings[twin.read_in].reason is None  # the twin's trace is read
        reading = readings[trace.trace_id]
        assert reading.reason == READ_ELSEWHERE
        detail = reading.sources[0].detail or ""
        assert twin.read_in in detail and "ANTHROPIC_OPEN_TELEMETRY=false" in detail
    runs = [run for found in linked.values() for run in found.runs]
    assert all(has_content(run) for run in runs)  # no content-less primary run
    step, loop = sorted(runs, key=lambda run: run.start_time)
    _assert_tool_step(step)
    assert loop.kind == "agent"
    _assert_answered_turn(loop)
    assert (loop.usage.input_tokens, loop.usage.output_tokens) == (103 + 129, 23 + 23)


def test_a_content_less_request_with_no_twin_is_a_run_with_its_advice() -> None:
    """Without OpenLLMetry's traces (or before they come), the SDK's spans are what there is:
    each stays a run, and the advice says how to get the content."""
    traces = load_traces([CAPTURES / "anthropic-sdk-openllmetry" / "tool_call"])
    sdk = [t for t in traces if t.spans[0].scope.name == "com.anthropic.sdk.python"]
    linked = linked_traces(sdk)
    for trace in sdk:
        found = linked[trace.trace_id]
        assert len(found.runs) == 1 and found.twins == []
        reading = read_sources(trace, found.runs, twins=found.twins)
        assert reading.reason == CONTENT_NOT_CAPTURED
        assert "ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content" in (
            reading.sources[0].detail or ""
        )


# --- a loop's calls as traces of their own, joined ------------------------------------------------

PER_CALL_TRACES = [
    "anthropic-sdk",
    "google-genai",
    "litellm-otel",
    "openlit",
]
"""Client instrumentations that start a trace per model call (a hand-written loop's calls come
as separate traces); each has a tool_call, multi_turn and tool_error capture."""


def _joined(library: str, scenario: str, order: int = 1) -> tuple[list[AgentRun], list[AgentRun]]:
    """(the loops' agent runs, the steps' runs) of a capture's traces linked in ``order``."""
    traces = load_traces([CAPTURES / library / scenario])[::order]
    runs = [run for found in linked_traces(traces).values() for run in found.runs]
    loops = sorted((r for r in runs if r.kind == "agent"), key=lambda r: r.start_time)
    return loops, [r for r in runs if r.kind != "agent"]


def _all_calls_usage(library: str, scenario: str) -> tuple[int, int]:
    calls = _primary(library, scenario)
    return sum(r.usage.input_tokens for r in calls), sum(r.usage.output_tokens for r in calls)


@pytest.mark.parametrize("order", [1, -1])
@pytest.mark.parametrize("library", PER_CALL_TRACES)
def test_a_loop_of_per_call_traces_is_one_agent_run(library: str, order: int) -> None:
    (loop,), steps = _joined(library, "tool_call", order)
    _assert_answered_turn(loop)
    assert loop.primary and loop.trace_id != steps[0].trace_id
    assert (loop.usage.input_tokens, loop.usage.output_tokens) == _all_calls_usage(
        library, "tool_call"
    )
    (step,) = steps  # the step's trace keeps its run: an intermediate step, never an answer
    for name in CODE_READING_THE_ANSWER:
        assert build(name).run_sync(step).status == "not_scorable", name


@pytest.mark.parametrize("library", PER_CALL_TRACES)
def test_each_turn_and_a_failed_tool_loop_are_joined(library: str) -> None:
    (first, second), _ = _joined(library, "multi_turn")
    _assert_answered_turn(first)
    assert user_text(second) == [SECOND_TURN_USER]
    assert final_answer(second) == SECOND_TURN_ANSWER
    (loop,), steps = _joined(library, "tool_error")
    assert len(steps) == 3
    _assert_atlantis_paris_london(loop, atlantis_failed=library == "google-genai")


def test_a_loop_is_joined_across_batches_from_the_store() -> None:
    """The step's trace read in an earlier batch: the answering call's trace fetches it (from
    the store in the worker), once, and reads the loop whole."""
    step_trace, answer_trace = load_traces([CAPTURES / "anthropic-sdk" / "tool_call"])
    links, fetched = CallLinks(), []

    def load(ids: list[str]) -> dict[str, Trace]:
        fetched.append(ids)
        return {step_trace.trace_id: step_trace}

    def extract(trace: Trace) -> list[AgentRun]:
        return extract_runs(trace, only_primary=True)

    read_linked({step_trace.trace_id: step_trace}, links, extract, load)
    found = read_linked({answer_trace.trace_id: answer_trace}, links, extract, load)
    (loop,) = found[answer_trace.trace_id].runs
    assert fetched == [[step_trace.trace_id]] and loop.kind == "agent"
    _assert_answered_turn(loop)


def test_links_are_bounded_and_a_forgotten_step_leaves_the_call_as_it_was() -> None:
    traces = load_traces([CAPTURES / "anthropic-sdk" / "multi_turn"])
    links = CallLinks(limit=1)  # the second turn's step pushes the first turn's call out
    found = read_linked(
        {t.trace_id: t for t in traces},
        links,
        lambda trace: extract_runs(trace, only_primary=True),
        lambda _: {},
    )
    kinds = [[run.kind for run in found[t.trace_id].runs] for t in traces]
    assert kinds == [["llm"], ["llm"], ["llm"], ["agent"]]


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
