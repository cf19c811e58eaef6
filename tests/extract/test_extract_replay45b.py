"""A fresh replay of libraries this project was not developed against (issue 45, "libraries
never named here"): captures of the real libraries against the scripted model
(``tests/fixtures/captures/README.md``, issue 45 replay). What each rebuilds, or why not.
"""

from __future__ import annotations

from tests.support.extract_support import (
    LONDON_RESULT,
    SECOND_TURN_ANSWER,
    SECOND_TURN_USER,
    TOOL_ERROR_USER,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    final_answer,
    linked_capture,
    system_text,
    tool_calls,
    user_text,
)
from tests.support.paths import CAPTURES
from tests.support.scorer_builds import CODE_READING_THE_ANSWER, build
from tracescore.extract import extract_runs
from tracescore.extract.linked import CallLinks, read_linked
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import READ_ELSEWHERE, read_sources
from tracescore.ingest.files import load_traces
from tracescore.spans import Trace

PARIS = {"city": "Paris"}


def _agents(library: str, scenario: str) -> list[AgentRun]:
    found = linked_capture(library, scenario)
    runs = [run for links in found.values() for run in links.runs if run.kind == "agent"]
    return sorted(runs, key=lambda run: run.start_time or 0)


def _assert_paris_turn(run: AgentRun, user: str = WEATHER_USER) -> None:
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [user]
    (call,) = tool_calls(run)
    assert (call.tool_name, call.args, call.result, call.state) == (
        "get_weather",
        PARIS,
        WEATHER_RESULT,
        "result",
    )
    assert call.tool_call_id.startswith("call_")
    assert run.usage.input_tokens and run.usage.output_tokens


def test_openai_v2_event_only_loop_of_per_call_traces_is_one_run_per_turn() -> None:
    """Content only in the ``…operation.details`` log records, one trace per call: each turn's
    calls are joined into one agent run."""
    library = "otel-genai-openai-v2-latest"
    (run,) = _agents(library, "tool_call_event_only")
    _assert_paris_turn(run)
    assert final_answer(run).startswith(WEATHER_ANSWER)
    first, second = _agents(library, "multi_turn_event_only")
    _assert_paris_turn(first)
    assert user_text(second) == [SECOND_TURN_USER]
    assert final_answer(second) == SECOND_TURN_ANSWER
    (loop,) = _agents(library, "tool_error_event_only")
    assert user_text(loop) == [TOOL_ERROR_USER]
    atlantis, paris, london = tool_calls(loop)
    assert atlantis.result == "Error: Unknown city: Atlantis"
    assert (paris.result, london.result) == (WEATHER_RESULT, LONDON_RESULT)


def test_langchain_under_openllmetry_tool_callbacks_are_unwrapped() -> None:
    """OpenLLMetry's LangChain instrumentation records the tool callbacks whole: the arguments
    are the callback's ``inputs`` (with the call id from its ``kwargs``), the result the
    ``ToolMessage``'s content, an error ``ToolMessage`` a failed call."""
    (run,) = _agents("openllmetry-langchain", "tool_call")
    _assert_paris_turn(run)
    assert run.agent_name == "WeatherBot"
    assert final_answer(run).startswith(WEATHER_ANSWER)
    (loop,) = _agents("openllmetry-langchain", "tool_error")
    atlantis, paris, london = tool_calls(loop)
    assert (atlantis.result, atlantis.is_error, atlantis.state) == (
        "Unknown city: Atlantis",
        True,
        "output-error",
    )
    assert (paris.result, london.result) == (WEATHER_RESULT, LONDON_RESULT)
    runs = [
        run
        for trace in load_traces([CAPTURES / "openllmetry-langchain" / "tool_call"])
        for run in extract_runs(trace)
        if run.kind == "tool"
    ]
    (tool,) = runs
    (call,) = tool_calls(tool)
    assert (call.args, call.result) == (PARIS, WEATHER_RESULT)
    assert call.tool_call_id == tool_calls(run)[0].tool_call_id  # from the callback's kwargs


def test_a_failed_load_of_earlier_steps_fails_only_the_traces_that_needed_them() -> None:
    """The answering call's trace needs its step's trace from the store; the store fails: that
    trace carries the error, a trace of the same batch that needed nothing is read."""
    step, answer = load_traces([CAPTURES / "litellm-otel" / "tool_call"])
    (other,) = load_traces([CAPTURES / "openllmetry-langchain" / "tool_call"])
    links = CallLinks()

    def extract(trace: Trace) -> list[AgentRun]:
        return extract_runs(trace, only_primary=True)

    def load(ids: list[str]) -> dict[str, Trace]:
        raise ConnectionError("the database went away")

    read_linked({step.trace_id: step}, links, extract, load)
    found = read_linked({answer.trace_id: answer, other.trace_id: other}, links, extract, load)
    assert "ConnectionError: the database went away" in (found[answer.trace_id].error or "")
    assert found[other.trace_id].error is None
    (run,) = found[other.trace_id].runs
    assert run.kind == "agent"


def test_llamaindex_under_openllmetry_is_one_agent_run_joined_by_its_tool_steps() -> None:
    """OpenLLMetry's LlamaIndex instrumentation records the model calls as tasks with GenAI
    messages but drops a streamed reply's tool calls; the agent steps that ran the tools
    (``ToolCallResult``) name each call's id, which the next call was sent with its result."""
    (run,) = _agents("openllmetry-llamaindex", "tool_call")
    assert system_text(run) == [WEATHER_SYSTEM] and user_text(run) == [WEATHER_USER]
    (call,) = tool_calls(run)
    assert (call.tool_name, call.args, call.result) == ("get_weather", PARIS, WEATHER_RESULT)
    assert call.tool_call_id.startswith("call_")
    assert final_answer(run).startswith(WEATHER_ANSWER)
    _, second = _agents("openllmetry-llamaindex", "multi_turn")
    assert user_text(second) == [SECOND_TURN_USER]
    assert final_answer(second) == SECOND_TURN_ANSWER
    (loop,) = _agents("openllmetry-llamaindex", "tool_error")
    atlantis, paris, london = tool_calls(loop)
    assert (atlantis.result, atlantis.is_error) == ("Unknown city: Atlantis", True)
    assert (paris.result, london.result) == (WEATHER_RESULT, LONDON_RESULT)


def test_openai_agents_under_logfire_is_one_agent_run_per_turn() -> None:
    """Logfire's OpenAI Agents spans, told apart by their message template: the agent, its
    model calls' Chat Completions messages, and its function tools joined to the calls."""
    (run,) = _agents("openai-agents-logfire", "tool_call")
    _assert_paris_turn(run)
    assert run.agent_name == "WeatherBot" and run.convention == "logfire-openai-agents"
    assert [tool.name for tool in run.tools] == ["get_weather"]
    assert final_answer(run).startswith(WEATHER_ANSWER)
    _, second = _agents("openai-agents-logfire", "multi_turn")
    assert user_text(second) == [SECOND_TURN_USER]
    assert final_answer(second) == SECOND_TURN_ANSWER
    (loop,) = _agents("openai-agents-logfire", "tool_error")
    atlantis, paris, london = tool_calls(loop)
    assert (atlantis.args, atlantis.is_error, atlantis.state) == (
        {"city": "Atlantis"},
        True,
        "output-error",
    )
    assert (paris.result, london.result) == (WEATHER_RESULT, LONDON_RESULT)


def test_mistral_sdk_spans_beside_openllmetry_are_read_once_and_steps_are_not_answers() -> None:
    """Mistral's SDK traces each request again, with usage and no content or response id:
    matched to OpenLLMetry's call of the same tokens around it, it is read elsewhere. The
    instrumentation records no tool call of a reply: a call that stopped for tools is an
    intermediate step all the same, never scored as an answer."""
    traces = load_traces([CAPTURES / "openllmetry-mistral" / "tool_call"])
    found = linked_capture("openllmetry-mistral", "tool_call")
    readings = {
        trace.trace_id: read_sources(
            trace, found[trace.trace_id].runs, twins=found[trace.trace_id].twins
        )
        for trace in traces
    }
    sdk = [t.trace_id for t in traces if t.spans[0].scope.name == "mistralai_sdk_tracer"]
    assert len(sdk) == 2
    for trace_id in sdk:
        assert found[trace_id].runs == []
        assert readings[trace_id].reason == READ_ELSEWHERE
        (source,) = readings[trace_id].sources
        assert "the same service and token counts" in (source.detail or "")
        assert "tracer_provider" in (source.detail or "")
    step, answer = (found[t.trace_id].runs[0] for t in traces if t.trace_id not in sdk)
    assert final_answer(answer).startswith(WEATHER_ANSWER)
    assert system_text(step) == [WEATHER_SYSTEM] and step.output == []
    for name in CODE_READING_THE_ANSWER:
        assert build(name).run_sync(step).status == "not_scorable", name


def test_mistral_sdk_spans_alone_and_dict_messages_get_advice_that_fits() -> None:
    """Without a twin (another trace's call of the same tokens), the SDK's span stays a run,
    and its advice says the SDK never records content; OpenLLMetry's span of a request sent
    as plain dicts holds no prompt, and its advice says why."""
    traces = load_traces([CAPTURES / "openllmetry-mistral" / "tool_call_dict_messages"])
    details = []
    for trace in traces:
        reading = read_sources(trace, extract_runs(trace, only_primary=True))
        details += [source.detail or "" for source in reading.sources if source.reason]
    assert any("Mistral SDK's own spans never carry message content" in d for d in details)
    assert any("typed messages" in d for d in details)


def test_a_responses_loop_linked_only_by_previous_response_id_is_one_run_per_turn() -> None:
    """Each call continues the last by ``previous_response_id`` and sends only the tool
    outputs, each a trace of its own: the answering call's trace reads the steps it continues
    (earlier in the chain too); a second turn continuing the first's answer is a run of its
    own."""
    (run,) = _agents("openinference-openai", "responses_loop_tool_call")
    _assert_paris_turn(run)
    assert final_answer(run).startswith(WEATHER_ANSWER)
    first, second = _agents("openinference-openai", "responses_loop_multi_turn")
    _assert_paris_turn(first)
    assert user_text(second) == [SECOND_TURN_USER]
    assert final_answer(second) == SECOND_TURN_ANSWER
    found = linked_capture("openinference-openai", "responses_loop_tool_error")
    (answer,) = [links for links in found.values() if links.steps_from]
    assert len(answer.steps_from) == 3
    (loop,) = answer.runs
    assert user_text(loop) == [TOOL_ERROR_USER]
    atlantis, paris, london = tool_calls(loop)
    assert atlantis.result == "Error: Unknown city: Atlantis"
    assert (paris.result, london.result) == (WEATHER_RESULT, LONDON_RESULT)
