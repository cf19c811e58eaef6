"""A second fresh replay of libraries never tried here (issue 45): Agno and LangGraph under
OpenInference, Microsoft Agent Framework's own telemetry, Groq's client under OpenLLMetry, the
Traceloop SDK round an Anthropic loop, OpenLIT with LangGraph, Mistral under OpenInference,
and Haystack 2.x running several tool calls in one ``ToolInvoker`` span
(``tests/fixtures/captures/README.md``, second replay). One agent run per user turn, each
with its system prompt, input, tool calls (arguments and result), answer and usage.
"""

from __future__ import annotations

import pytest

from tests.support.extract_support import (
    LONDON_RESULT,
    SECOND_TURN_ANSWER,
    SECOND_TURN_USER,
    TOOL_ERROR_USER,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    assert_second_turn,
    capture_runs,
    final_answer,
    linked_capture,
    system_text,
    tool_calls,
    user_text,
)
from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs
from tracescore.extract.content_switches import content_switch
from tracescore.extract.model import AgentRun, ToolInvocation
from tracescore.extract.runs.llm import UNRECORDED_CALLS
from tracescore.extract.sources import NO_RUNS, read_sources
from tracescore.ingest.files import load_traces

PARIS = {"city": "Paris"}
ROME_RESULT = {"city": "Rome", "forecast": "rainy", "temperature_c": 14}


def _primary(library: str, scenario: str) -> list[AgentRun]:
    """The primary runs of every trace of a capture, linked as the scoring worker links them,
    in time order."""
    found = linked_capture(library, scenario)
    runs = [run for links in found.values() for run in links.runs]
    return sorted(runs, key=lambda run: run.start_time or 0)


def _turns(library: str, scenario: str) -> list[AgentRun]:
    """The agent runs among them: one per user turn."""
    return [run for run in _primary(library, scenario) if run.kind == "agent"]


def _only_turn(library: str, scenario: str) -> AgentRun:
    (run,) = _turns(library, scenario)
    return run


def _assert_paris_turn(run: AgentRun, result: object = WEATHER_RESULT) -> ToolInvocation:
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [WEATHER_USER]
    (call,) = tool_calls(run)
    assert (call.tool_name, call.args, call.result, call.state) == (
        "get_weather",
        PARIS,
        result,
        "result",
    )
    assert final_answer(run).startswith(WEATHER_ANSWER)
    assert run.usage.input_tokens and run.usage.output_tokens
    return call


def _assert_three_cities(run: AgentRun, as_sent: bool = False) -> ToolInvocation:
    """The tool-error turn: Atlantis, Paris and London called in that order, the answer after;
    returns the Atlantis call (each library says its failure its own way). ``as_sent``: the
    results are the dicts' ``str()``, as the library sent them to the model."""
    assert user_text(run) == [TOOL_ERROR_USER]
    atlantis, paris, london = tool_calls(run)
    assert [c.args for c in (atlantis, paris, london)] == [
        {"city": "Atlantis"},
        PARIS,
        {"city": "London"},
    ]
    results = (WEATHER_RESULT, LONDON_RESULT)
    assert (paris.result, london.result) == (tuple(map(str, results)) if as_sent else results)
    assert final_answer(run).startswith("I could not find Atlantis.")
    return atlantis


@pytest.mark.parametrize(
    ("library", "result"),
    [
        ("openinference-agno", str(WEATHER_RESULT)),  # Agno sends the model the dict's str()
        ("agent-framework", WEATHER_RESULT),
        ("openinference-langgraph", WEATHER_RESULT),
        ("openllmetry-groq", WEATHER_RESULT),
        ("openinference-mistral", WEATHER_RESULT),
        ("openlit-langgraph", WEATHER_RESULT),
        ("traceloop-anthropic", WEATHER_RESULT),
    ],
)
def test_each_turn_is_one_agent_run(library: str, result: object) -> None:
    """The standard turn, whatever the library: one agent run, no other content-less primary
    run (a per-call loop's step stays a run of its own only as a step, never an answer)."""
    primary = _primary(library, "tool_call")
    (run,) = [r for r in primary if r.kind == "agent"]
    call = _assert_paris_turn(run, result)
    assert call.tool_call_id.startswith(("call_", "toolu_"))
    others = [r for r in primary if r is not run]
    assert all(r.kind == "llm" and r.input.input_messages for r in others)
    assert all(not final_answer(r) for r in others)


@pytest.mark.parametrize(
    "library",
    [
        "agent-framework",
        "openinference-langgraph",
        "openllmetry-groq",
        "openinference-mistral",
    ],
)
def test_second_turn_carries_the_first_as_history(library: str) -> None:
    first, second = _turns(library, "multi_turn")
    assert user_text(first) == [WEATHER_USER]
    assert_second_turn(second)


def test_agno_second_turn_has_its_session_history() -> None:
    """Agno's ``add_history_to_context`` sends the session's earlier turn: its question, the
    call with its result (the dict's ``str()``, as Agno sent it) and its answer."""
    first, second = _turns("openinference-agno", "multi_turn")
    assert user_text(second) == [SECOND_TURN_USER]
    user, step, answer = second.input.remembered_messages
    assert user.content.content == WEATHER_USER
    (earlier,) = step.content.tool_invocations or []
    assert (earlier.args, earlier.result) == (PARIS, str(WEATHER_RESULT))
    assert earlier.tool_call_id == tool_calls(first)[0].tool_call_id
    assert (answer.content.content or "").startswith(WEATHER_ANSWER)
    assert final_answer(second) == SECOND_TURN_ANSWER


def test_openlit_langgraph_history_keeps_what_openlit_recorded() -> None:
    """OpenLIT's LangChain instrumentation records the earlier turn's tool-call message as an
    empty text and its result without a call id: the history keeps both as they came."""
    first, second = _turns("openlit-langgraph", "multi_turn")
    assert user_text(second) == [SECOND_TURN_USER]
    assert final_answer(second) == SECOND_TURN_ANSWER
    history = second.input.remembered_messages
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert (history[-1].content.content or "").startswith(WEATHER_ANSWER)
    (call,) = tool_calls(second)
    assert (call.args, call.result) == (PARIS, WEATHER_RESULT)
    assert tool_calls(first)[0].tool_call_id != call.tool_call_id


def test_tool_errors_each_library_says_its_own_way() -> None:
    """Atlantis failed: where the library recorded the failure (a failed tool span), the call
    is an error; where it only sent the model ``Error: …`` as the result, that is the result."""
    agno = _assert_three_cities(_only_turn("openinference-agno", "tool_error"), as_sent=True)
    assert (agno.state, agno.result) == ("output-error", "Unknown city: Atlantis")
    framework = _assert_three_cities(_only_turn("agent-framework", "tool_error"))
    assert framework.state == "output-error"
    assert "Unknown city: Atlantis" in (framework.error_text or "")
    langgraph = _assert_three_cities(_only_turn("openinference-langgraph", "tool_error"))
    assert langgraph.is_error and "Unknown city: Atlantis" in (langgraph.error_text or "")
    openlit = _assert_three_cities(_only_turn("openlit-langgraph", "tool_error"))
    assert (openlit.state, openlit.error_text) == ("output-error", "Unknown city: Atlantis")
    for library in ("openllmetry-groq", "openinference-mistral", "traceloop-anthropic"):
        sent = _assert_three_cities(_only_turn(library, "tool_error"))
        assert sent.result == "Error: Unknown city: Atlantis", library


def test_langgraph_node_named_agent_is_a_step_of_its_graph() -> None:
    """OpenInference marks every LangChain run whose name holds "agent" an AGENT: the
    ``agent`` node of a hand-built graph is a step of the graph, not an agent per model call,
    and the node's tool is called with the model's arguments."""
    (run,) = _turns("openinference-langgraph", "tool_error")
    assert run.agent_name == "LangGraph"
    assert len(run.span_ids) == 19  # the graph, its nodes, model calls and tools
    assert [r.kind for r in capture_runs("openinference-langgraph", "tool_call")].count(
        "agent"
    ) == 1


def test_openlit_graph_workflow_is_the_agent_and_node_spans_its_steps() -> None:
    """OpenLIT traces the graph as ``invoke_workflow`` and each node run twice as
    ``invoke_agent agent``: the workflow is the agent; the graph's compile-time
    ``create_agent`` span, a trace of its own, says why it holds no run."""
    traces = load_traces([CAPTURES / "openlit-langgraph" / "tool_call"])
    (setup,) = [t for t in traces if len(t.spans) == 1]
    reading = read_sources(setup, extract_runs(setup, only_primary=True))
    assert reading.reason == NO_RUNS
    (run,) = _turns("openlit-langgraph", "tool_call")
    assert run.agent_name == "LangGraph" and run.warnings == []
    assert [r.kind for r in capture_runs("openlit-langgraph", "tool_call")].count("agent") == 1


def test_a_request_traced_twice_in_one_trace_is_one_model_call() -> None:
    """Under a Traceloop ``@workflow``, the Anthropic SDK's own content-less span of each
    request sits beside OpenLLMetry's: same response id, so it is no run of its own, its
    tokens are counted once and the trace's sources say its spans became no run."""
    (trace,) = load_traces([CAPTURES / "traceloop-anthropic" / "tool_call"])
    runs = extract_runs(trace)
    assert [r.kind for r in runs].count("llm") == 2  # OpenLLMetry's two calls, not four
    (run,) = [r for r in runs if r.primary]
    assert run.agent_name == "weather_turn"  # the @workflow's name, not its span's
    assert (run.usage.input_tokens, run.usage.output_tokens) == (103 + 129, 23 + 23)
    reading = read_sources(trace, [run])
    (sdk,) = [s for s in reading.sources if s.scope.startswith("com.anthropic.sdk")]
    assert sdk.reason == NO_RUNS and "anthropic.messages.create" in (sdk.detail or "")


def test_haystack_tool_invoker_running_several_calls_reads_each() -> None:
    """haystack-ai 2.x runs one reply's several calls in one ``ToolInvoker.run`` span: each
    call has its own arguments, id and result, in the agent run and in the span's tool run;
    with an exit condition no later model call is sent the results, the span alone has them."""
    for scenario in ("parallel_tools_haystack2", "parallel_tools_exit_haystack2"):
        (agent,) = _turns("openinference-haystack", scenario)
        paris, rome = tool_calls(agent)
        assert (paris.args, paris.result) == (PARIS, WEATHER_RESULT)
        assert (rome.args, rome.result) == ({"city": "Rome"}, ROME_RESULT)
        assert paris.tool_call_id != rome.tool_call_id and rome.tool_call_id.startswith("call_")
        (tool,) = [r for r in capture_runs("openinference-haystack", scenario) if r.kind == "tool"]
        assert [(c.args, c.result) for c in tool_calls(tool)] == [
            (PARIS, WEATHER_RESULT),
            ({"city": "Rome"}, ROME_RESULT),
        ]
        assert [c.metadata for c in tool.context] == [
            {"tool_call_id": paris.tool_call_id},
            {"tool_call_id": rome.tool_call_id},
        ]
        assert user_text(tool) == ['[{"city":"Paris"},{"city":"Rome"}]']


def test_mistral_under_openllmetry_says_what_it_never_records_and_what_does() -> None:
    """OpenLLMetry's Mistral instrumentation records no tool call of a reply and no call id of
    a tool message (read from its source, any mode): its step says its calls are missing, the
    answering call reads the result it was sent as context, and the advice names the
    instrumentation that records them, whose capture (``openinference-mistral``) joins them."""
    runs = [
        run
        for trace in load_traces([CAPTURES / "openllmetry-mistral" / "tool_call"])
        for run in extract_runs(trace, only_primary=True)
        if run.convention == "openllmetry"  # not the SDK's own content-less twins
    ]
    step, answer = sorted(runs, key=lambda run: run.start_time or 0)
    assert step.output == [] and step.warnings == [UNRECORDED_CALLS]
    assert answer.warnings == [] and final_answer(answer).startswith(WEATHER_ANSWER)
    assert [c.kind for c in answer.context] == ["tool_result"]
    advice = content_switch("opentelemetry.instrumentation.mistralai")
    assert "tool message's call id" in advice
    assert "openinference-instrumentation-mistralai" in advice
    (joined,) = _turns("openinference-mistral", "tool_call_dict_messages")
    _assert_paris_turn(joined)
