"""Hand-written loops (issue 45, item 1): model calls no agent span claims rebuild into one agent
run when what each call was sent links them, the same run an agent span around them gives.

The property test writes one loop in every message encoding extraction reads (OTel GenAI
attributes, GenAI span events, OpenLLMetry's indexed attributes, OpenInference flattened or as
raw request and response bodies, the AI SDK's), under an agent span, a user's plain span or
nothing, with tool spans between the calls or without (then the results the next call was sent
are the outcomes), and asks for the same run.
"""

from __future__ import annotations

import json
import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.loop_traces import ENCODINGS, Loop, ToolCall, loop_trace, weather_loop
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.spans import Trace

WORDS = st.text(alphabet=string.ascii_letters, min_size=1, max_size=12)
TOOL_NAMES = st.sampled_from(["get_weather", "get_time", "search"])


@st.composite
def loops(draw: st.DrawFn) -> Loop:
    steps = [
        [
            ToolCall(
                f"call_{step}_{index}",
                draw(TOOL_NAMES),
                {"q": draw(WORDS)},
                {"answer": draw(WORDS)},
            )
            for index in range(draw(st.integers(1, 2)))
        ]
        for step in range(draw(st.integers(0, 3)))
    ]
    usage = [(draw(st.integers(1, 500)), draw(st.integers(1, 100))) for _ in range(len(steps) + 1)]
    return Loop(draw(WORDS), draw(WORDS), steps, draw(WORDS), usage)


def content(run: AgentRun) -> dict[str, Any]:
    """What a scorer reads of a run, whatever encoding it came from."""
    calls = [
        (call.tool_name, call.args, call.result, call.state)
        for message in run.output
        for part in message.content.parts
        if (call := part.tool_invocation) is not None
    ]
    return {
        "system": [m.content for m in run.input.system_messages],
        "input": [m.content.content for m in run.input.input_messages],
        "remembered": len(run.input.remembered_messages),
        "calls": calls,
        "answer": run.output[0].content.content if run.output else None,
        "usage": (run.usage.input_tokens, run.usage.output_tokens),
    }


def expected(loop: Loop) -> dict[str, Any]:
    return {
        "system": [loop.system],
        "input": [loop.question],
        "remembered": 0,
        "calls": [(c.name, c.args, c.result, "result") for step in loop.steps for c in step],
        "answer": loop.answer,
        "usage": (sum(u[0] for u in loop.usage), sum(u[1] for u in loop.usage)),
    }


def primary(trace: Trace) -> AgentRun:
    runs = extract_runs(trace)
    (run,) = [r for r in runs if r.primary]
    fast = extract_runs(trace, only_primary=True)  # the live pipeline's shortcut: the same run
    assert [(r.span_id, r.kind, content(r)) for r in fast] == [
        (run.span_id, run.kind, content(run))
    ]
    return run


@settings(max_examples=80, deadline=None)
@given(
    loop=loops(),
    encoding=st.sampled_from(sorted(ENCODINGS)),
    wrapper=st.sampled_from([None, "plain", "agent"]),
    tool_spans=st.booleans(),
)
def test_any_loop_in_any_encoding_rebuilds_into_one_run_with_the_same_content(
    loop: Loop, encoding: str, wrapper: str | None, tool_spans: bool
) -> None:
    run = primary(loop_trace(loop, encoding, wrapper=wrapper, tool_spans=tool_spans))
    assert content(run) == expected(loop)
    # A single call with no agent span stays the call's own run, as before loops were read.
    assert run.kind == ("agent" if loop.steps or wrapper == "agent" else "llm")
    assert run.warnings == []


LOOP = weather_loop("call_1", "Paris", "sunny")
(WEATHER,) = LOOP.steps[0]


def test_the_loop_s_calls_are_its_steps_not_runs_standing_for_the_agent() -> None:
    runs = extract_runs(loop_trace(LOOP, "otel-genai", wrapper="plain"))
    assert [(r.kind, r.primary, r.agent_name) for r in runs] == [
        ("agent", True, "handle_request"),  # anchored to the user's plain span around the loop
        ("llm", False, None),
        ("llm", False, None),
        ("tool", False, None),
    ]
    loop_run = runs[0]
    assert loop_run.convention == "otel-genai"  # its calls', not the unclaimed span's
    assert loop_run.span_ids == [r.span_id for r in (runs[0], runs[1], runs[3], runs[2])]
    assert loop_run.context[0].content == json.dumps(WEATHER.result, separators=(",", ":"))


def test_without_a_span_around_the_loop_its_first_call_anchors_the_run() -> None:
    trace = loop_trace(LOOP, "openinference", tool_spans=False)
    agent, first, second = extract_runs(trace)
    assert (agent.kind, agent.span_id, agent.agent_name) == ("agent", first.span_id, None)
    assert (agent.start_time, agent.end_time) == (first.start_time, second.end_time)
    assert agent.model == "gpt-4o-mini"


def test_unrelated_calls_in_one_trace_stay_runs_of_their_own() -> None:
    """Two questions answered by one request handler: neither call was sent the other's output."""
    other = Loop("Be kind.", "Say hello.", [], "Hello!", [(5, 1)])
    first = loop_trace(Loop("Be brief.", "Weather?", [], "Sunny.", [(10, 2)]), "otel-genai")
    second = loop_trace(other, "otel-genai")
    (span_b,) = second.spans
    span_b.span_id, span_b.start_time_ns = "00000000000000ff", first.spans[0].end_time_ns + 1
    runs = extract_runs(Trace(first.trace_id, [*first.spans, span_b]))
    assert [(r.kind, r.primary, r.output[0].content.content) for r in runs] == [
        ("llm", True, "Sunny."),
        ("llm", True, "Hello!"),
    ]


def test_the_next_user_turn_in_one_trace_is_a_run_of_its_own() -> None:
    """A chat app answering two user messages in one trace: the second turn's call holds the
    first turn as history, before the new question. One loop run for the first turn (its two
    calls), the second turn's call on its own."""
    trace = loop_trace(LOOP, "otel-genai", tool_spans=False)
    turn_two = loop_trace(
        Loop("Be brief.", "And tomorrow?", [], "Rain.", [(40, 2)]), "otel-genai"
    ).spans[0]
    history = json.loads(trace.spans[1].attributes["gen_ai.input.messages"])
    history.append(json.loads(trace.spans[1].attributes["gen_ai.output.messages"])[0])
    history.append({"role": "user", "parts": [{"type": "text", "content": "And tomorrow?"}]})
    turn_two.attributes["gen_ai.input.messages"] = json.dumps(history)
    turn_two.span_id, turn_two.start_time_ns = "00000000000000ff", trace.spans[1].end_time_ns + 1
    turn_two.end_time_ns = turn_two.start_time_ns + 1000
    runs = [r for r in extract_runs(Trace(trace.trace_id, [*trace.spans, turn_two])) if r.primary]
    assert [(r.kind, r.output[0].content.content) for r in runs] == [
        ("agent", "Sunny."),
        ("llm", "Rain."),
    ]
    assert [m.content.content for m in runs[1].input.input_messages] == ["And tomorrow?"]
    assert len(runs[1].input.remembered_messages) == 3  # the first turn, its result joined


def test_two_loops_under_one_span_are_two_runs_each_with_its_own_tool() -> None:
    """A request handler running two questions at once: the calls interleave in time, each
    loop's tool span runs while both loops do; call ids tell which loop each belongs to. The
    handler's span holds both loops, so each run is anchored to its own first call."""
    paris, rome = weather_loop("p1", "Paris", "sun"), weather_loop("r1", "Rome", "rain")
    one, two = (loop_trace(loop, "otel-genai", wrapper="plain") for loop in (paris, rome))
    # handler, paris call 1, paris tool, paris call 2 / the same for rome, interleaved:
    handler, *paris_spans = one.spans
    rome_spans = two.spans[1:]
    spans = [handler]
    for index, (p, r) in enumerate(zip(paris_spans, rome_spans, strict=True)):
        p.start_time_ns, p.end_time_ns = (
            handler.start_time_ns + (2 * index + 1) * 1000,
            handler.start_time_ns + (2 * index + 1) * 1000 + 900,
        )
        r.start_time_ns, r.end_time_ns = p.start_time_ns + 1000, p.end_time_ns + 1000
        r.span_id = f"{int(r.span_id, 16) + 0x100:016x}"
        r.parent_span_id = handler.span_id
        spans += [p, r]
    handler.end_time_ns = spans[-1].end_time_ns + 1
    runs = [r for r in extract_runs(Trace(one.trace_id, spans)) if r.primary]
    assert [(r.kind, r.span_id, content(r)["calls"], content(r)["answer"]) for r in runs] == [
        (
            "agent",
            paris_spans[0].span_id,
            [("get_weather", {"city": "Paris"}, {"sky": "sun"}, "result")],
            "Sun.",
        ),
        (
            "agent",
            rome_spans[0].span_id,
            [("get_weather", {"city": "Rome"}, {"sky": "rain"}, "result")],
            "Rain.",
        ),
    ]
    assert paris_spans[1].span_id in runs[0].span_ids and rome_spans[1].span_id in runs[1].span_ids
    assert rome_spans[1].span_id not in runs[0].span_ids
