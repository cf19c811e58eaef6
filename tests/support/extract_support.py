"""Helpers for the extractor tests: capture loading, hand-made spans, and the capture scenario.

The scenario constants are what the capture scripts sent (``tests/fixtures/captures/README.md``),
so every convention's test checks the rebuilt runs against the same ground truth.
"""

from __future__ import annotations

import itertools

from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs, read_spans
from tracescore.extract.linked import CallLinks, TraceLinks, read_linked
from tracescore.extract.model import AgentRun, ToolInvocation
from tracescore.ingest.files import load_traces
from tracescore.spans import LogRecord, Resource, Scope, Span, Trace

WEATHER_SYSTEM = (
    "You are WeatherBot, a concise weather assistant. "
    "Always use the get_weather tool for weather questions."
)
WEATHER_USER = "What's the weather like in Paris today?"
WEATHER_RESULT = {"city": "Paris", "forecast": "sunny", "temperature_c": 21}
WEATHER_ANSWER = "It is sunny in Paris today, about 21 degrees Celsius"
# The tool-error scenario: get_weather raises for Atlantis, then answers for Paris and London.
ATLANTIS_USER = "What's the weather in Atlantis, Paris and London today?"
LONDON_RESULT = {"city": "London", "forecast": "rainy", "temperature_c": 14}
CHAT_SYSTEM = "You are a friendly assistant."
CHAT_USER = "Say hello to the tracescore team in one sentence."
CHAT_ANSWER = "Hello, tracescore team! Wishing you clean traces and sharp scores."
REASONING_USER = "Is 17 a prime number? Think it through."
REASONING_TEXT = (
    "17 is odd, so not divisible by 2. sqrt(17) is about 4.1, so I only need to check 3: "
    "17 / 3 is not an integer. Hence 17 is prime."
)
REASONING_ANSWER = "Yes. 17 is a prime number"
TOOL_ERROR_USER = "What's the weather in Atlantis, Paris and London today?"
TOOL_ERROR_ANSWER = "I could not find Atlantis. " + WEATHER_ANSWER
LONDON_RESULT = {"city": "London", "forecast": "rainy", "temperature_c": 14}
SECOND_TURN_USER = "Is it warmer than yesterday?"
SECOND_TURN_ANSWER = "Yes: 21 degrees Celsius in Paris today, warmer than yesterday."
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def capture_runs(library: str, scenario: str) -> list[AgentRun]:
    """Every run of every trace in one capture folder (all its requests, traces and logs)."""
    return [
        run for trace in load_traces([CAPTURES / library / scenario]) for run in extract_runs(trace)
    ]


def linked_capture(
    library: str, scenario: str, *, only_primary: bool = True
) -> dict[str, TraceLinks]:
    """The runs of each trace of one capture folder, linked across its traces as the scoring
    worker links a batch (:mod:`tracescore.extract.linked`), by trace id in arrival order."""
    return linked_traces(load_traces([CAPTURES / library / scenario]), only_primary=only_primary)


def linked_traces(traces: list[Trace], *, only_primary: bool = True) -> dict[str, TraceLinks]:
    """The traces' runs, linked across them (none fetched from elsewhere)."""
    return read_linked(
        {trace.trace_id: trace for trace in traces},
        CallLinks(),
        lambda trace: extract_runs(trace, only_primary=only_primary),
        lambda _: {},
    )


def only(runs: list[AgentRun], kind: str, *, primary: bool | None = None) -> list[AgentRun]:
    return [r for r in runs if r.kind == kind and (primary is None or r.primary == primary)]


def user_text(run: AgentRun) -> list[str]:
    return [m.content.content or "" for m in run.input.input_messages]


def system_text(run: AgentRun) -> list[str]:
    return [s.content for s in run.input.system_messages]  # type: ignore[misc]


def parts(run: AgentRun, kind: str) -> list:
    assert len(run.output) == 1, run.output
    return [p for p in run.output[0].content.parts if p.type == kind]


def tool_calls(run: AgentRun) -> list[ToolInvocation]:
    return [p.tool_invocation for p in parts(run, "tool-invocation")]


def reasoning(run: AgentRun) -> list[str]:
    return [p.reasoning for p in parts(run, "reasoning")]


def final_answer(run: AgentRun) -> str:
    return run.output[0].content.content or ""


def assert_weather_agent(
    run: AgentRun,
    *,
    convention: str,
    usage: tuple[int, int] = (103 + 185, 33 + 35),
    spans: int = 4,
) -> None:
    """The agent run of the ``tool_call_agent`` scenario, identical for every convention but
    for ``usage`` (input, output tokens: what the fake server counted for that capture) and
    ``spans`` (the agent's, its steps' and its tool's, and any other span of the agent's that
    the run lists: a LangGraph's node spans)."""
    assert run.kind == "agent" and run.primary
    assert run.convention == convention
    assert run.agent_name == "WeatherBot"
    assert run.model == "gpt-4o-mini"
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [WEATHER_USER]
    assert run.input.remembered_messages == []
    (call,) = tool_calls(run)
    assert call.tool_name == "get_weather"
    assert call.tool_call_id.startswith("call_")
    assert call.args == {"city": "Paris"}
    assert call.result == WEATHER_RESULT
    assert call.state == "result"
    assert final_answer(run).startswith(WEATHER_ANSWER)
    # Parts in step order: the first step's tool call, then the second step's answer.
    kinds = [p.type for p in run.output[0].content.parts]
    assert kinds == ["tool-invocation", "text"]
    assert run.output[0].content.tool_invocations == [call]
    # Usage of the two chat calls only, never the agent span's own sum too.
    assert (run.usage.input_tokens, run.usage.output_tokens) == usage
    assert [t.name for t in run.tools] == ["get_weather"]
    assert run.tools[0].description == "Get the current weather for a city."
    assert [c.kind for c in run.context] == ["tool_result"]
    assert '"forecast":"sunny"' in run.context[0].content.replace(" ", "")
    assert len(run.span_ids) == spans and run.span_ids[0] == run.span_id
    assert run.warnings == []


def assert_tool_error_agent(run: AgentRun, *, error: str) -> None:
    """The agent run of a ``tool_error`` capture (issue 31): Atlantis failed with ``error``,
    Paris and London answered, each call with its own id, then the answer."""
    assert user_text(run) == [TOOL_ERROR_USER]
    _, paris, london = calls = tool_calls(run)
    assert_atlantis_calls(calls, error=error)
    assert all(c.tool_call_id.startswith("call_") for c in calls)
    assert final_answer(run).startswith(TOOL_ERROR_ANSWER)
    assert [c.metadata for c in run.context] == [
        {"tool_call_id": paris.tool_call_id},
        {"tool_call_id": london.tool_call_id},
    ]


def assert_second_turn(run: AgentRun) -> ToolInvocation:
    """The second run of a ``multi_turn`` capture (issue 31): the first run's question, call
    (joined to its result) and answer as history, then this turn's own call and answer. Returns
    the earlier call."""
    assert user_text(run) == [SECOND_TURN_USER]
    history = run.input.remembered_messages
    assert [m.role for m in history] == ["user", "assistant", "assistant"]
    assert history[0].content.content == WEATHER_USER
    (earlier,) = history[1].content.tool_invocations or []
    assert (earlier.tool_name, earlier.args, earlier.state) == (
        "get_weather",
        {"city": "Paris"},
        "result",
    )
    assert (history[2].content.content or "").startswith(WEATHER_ANSWER)
    (call,) = tool_calls(run)
    assert (call.tool_name, call.args, call.result) == (
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert call.tool_call_id != earlier.tool_call_id
    assert final_answer(run) == SECOND_TURN_ANSWER
    return earlier


def assert_atlantis_calls(
    calls: list[ToolInvocation], error: str = "ValueError: Unknown city: Atlantis"
) -> None:
    """The tool-error scenario's three calls: Atlantis failed with ``error``, Paris and London
    answered, each its own call id."""
    atlantis, paris, london = calls
    assert (atlantis.args, atlantis.state, atlantis.is_error) == (
        {"city": "Atlantis"},
        "output-error",
        True,
    )
    assert atlantis.error_text == error
    assert (paris.args, paris.result, paris.state) == ({"city": "Paris"}, WEATHER_RESULT, "result")
    assert (london.args, london.result, london.state) == (
        {"city": "London"},
        LONDON_RESULT,
        "result",
    )
    assert len({call.tool_call_id for call in calls}) == 3


# --- hand-made spans -------------------------------------------------------------------------

_ids = itertools.count(1)


def span(
    name: str,
    attributes: dict,
    *,
    span_id: str | None = None,
    parent: str | None = None,
    start: int | None = None,
    status: int = 0,
    status_message: str = "",
    scope: str = "handmade",
) -> Span:
    """A span as the decoder would produce it; start times increase with creation order."""
    number = next(_ids)
    begin = start if start is not None else 1_700_000_000_000_000_000 + number * 1_000_000
    return Span(
        trace_id=TRACE_ID,
        span_id=span_id or f"{number:016x}",
        parent_span_id=parent,
        name=name,
        kind=1,
        start_time_ns=begin,
        end_time_ns=begin + 500_000,
        attributes=attributes,
        resource=Resource({"service.name": "handmade-service"}),
        scope=Scope(scope),
        status_code=status,
        status_message=status_message,
    )


def log(
    span_id: str,
    event_name: str,
    body: object = None,
    attributes: dict | None = None,
    time_ns: int = 0,
) -> LogRecord:
    return LogRecord(
        time_ns=time_ns,
        observed_time_ns=time_ns,
        trace_id=TRACE_ID,
        span_id=span_id,
        event_name=event_name,
        severity_number=9,
        severity_text="INFO",
        body=body,
        attributes=attributes or {},
        resource=Resource({"service.name": "handmade-service"}),
        scope=Scope("handmade"),
    )


def trace(*spans: Span, logs: list[LogRecord] | None = None) -> Trace:
    return Trace(TRACE_ID, list(spans), list(logs or []))


def assert_read_without_crash(hostile: Span, convention: str) -> None:
    """The span is claimed by ``convention`` and read, then built into runs, without a crash
    (a convention's crash is caught and left as a ``could not read`` warning)."""
    one = trace(hostile)
    (info,) = read_spans(one)
    assert info.convention == convention
    assert not any("could not" in w for w in info.warnings), info.warnings
    extract_runs(one)
