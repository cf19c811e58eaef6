"""OTel GenAI conventions: latest attributes, the operation-details event, legacy message events."""

from __future__ import annotations

import orjson

from tests.support.extract_support import (
    CHAT_ANSWER,
    CHAT_SYSTEM,
    CHAT_USER,
    REASONING_ANSWER,
    REASONING_USER,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    assert_weather_agent,
    capture_runs,
    final_answer,
    log,
    only,
    reasoning,
    span,
    system_text,
    tool_calls,
    trace,
    user_text,
)
from tracescore.extract import extract_runs, primary_runs, read_spans
from tracescore.extract.base import MAX_VALUE_CHARS

LATEST = "otel-genai-openai-v2-latest"
LEGACY = "otel-genai-openai-v2-legacy"


def test_latest_agent_with_tool_call() -> None:
    runs = capture_runs(LATEST, "tool_call_agent")
    (agent,) = only(runs, "agent")
    assert_weather_agent(agent, convention="otel-genai")
    assert agent.provider == "openai"
    assert agent.service_name == "otel-openai-v2-demo"
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    # The chat and tool spans are runs too, not primary ones, and know their agent.
    llms = only(runs, "llm")
    assert [r.primary for r in llms] == [False, False]
    assert {r.agent_name for r in llms} == {"WeatherBot"}
    (tool,) = only(runs, "tool")
    assert tool.agent_name == "WeatherBot"
    assert tool_calls(tool)[0].result == WEATHER_RESULT
    assert primary_runs(runs) == [agent]


def test_latest_plain_chat_and_stream() -> None:
    for scenario in ("plain_chat", "plain_chat_stream"):
        (run,) = capture_runs(LATEST, scenario)
        assert run.kind == "llm" and run.primary
        assert system_text(run) == [CHAT_SYSTEM]
        assert user_text(run) == [CHAT_USER]
        assert final_answer(run) == CHAT_ANSWER
        assert (run.usage.input_tokens, run.usage.output_tokens) == (36, 17)
        assert run.model == "gpt-4o-mini"


def test_latest_reasoning_is_not_recorded_by_openai_v2() -> None:
    # openai-v2 2.4b0 drops reasoning_content (SPAN_FORMATS §2b): only the answer is there.
    (run,) = capture_runs(LATEST, "reasoning")
    assert run.model == "o4-mini"
    assert user_text(run) == [REASONING_USER]
    assert final_answer(run).startswith(REASONING_ANSWER)
    assert reasoning(run) == []


def test_raw_client_tool_loop_gives_one_llm_run_per_trace() -> None:
    first, second = capture_runs(LATEST, "tool_call")
    assert first.trace_id != second.trace_id
    assert first.primary and second.primary
    (call,) = tool_calls(first)
    assert (call.tool_name, call.args, call.state) == ("get_weather", {"city": "Paris"}, "call")
    assert final_answer(second).startswith(WEATHER_ANSWER)
    # The second call's turn holds the tool result it was sent: grounding for the answer.
    assert [c.kind for c in second.context] == ["tool_result"]
    assert orjson.loads(second.context[0].content) == WEATHER_RESULT


def test_operation_details_event_carries_structured_content() -> None:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 5,
    }
    chat = span("chat gpt-4o-mini", attributes)
    details = log(
        chat.span_id,
        "gen_ai.client.inference.operation.details",
        attributes={
            **attributes,
            "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
            "gen_ai.input.messages": [
                {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}
            ],
            "gen_ai.output.messages": [
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "reasoning", "content": "They greet."},
                        {"type": "text", "content": "Hello!"},
                    ],
                    "finish_reason": "stop",
                }
            ],
        },
    )
    (run,) = extract_runs(trace(chat, logs=[details]))
    assert system_text(run) == ["Be brief."]
    assert user_text(run) == ["Hi"]
    assert reasoning(run) == ["They greet."]
    assert final_answer(run) == "Hello!"
    assert run.usage.input_tokens == 5


def test_legacy_events_are_the_only_content() -> None:
    first, second = capture_runs(LEGACY, "tool_call")
    assert first.attributes["gen_ai.system"] == "openai"
    assert system_text(first) == [WEATHER_SYSTEM]
    assert user_text(first) == [WEATHER_USER]
    (call,) = tool_calls(first)
    assert (call.tool_name, call.args) == ("get_weather", {"city": "Paris"})
    assert call.tool_call_id.startswith("call_")
    assert final_answer(second).startswith(WEATHER_ANSWER)
    # gen_ai.tool.message → a tool result joined by id, seen as grounding.
    assert orjson.loads(second.context[0].content) == WEATHER_RESULT
    assert second.context[0].metadata == {"tool_call_id": call.tool_call_id}
    assert (second.usage.input_tokens, second.usage.output_tokens) == (185, 35)


def test_legacy_plain_chat_and_reasoning() -> None:
    for scenario in ("plain_chat", "plain_chat_stream"):
        (run,) = capture_runs(LEGACY, scenario)
        assert (system_text(run), user_text(run)) == ([CHAT_SYSTEM], [CHAT_USER])
        assert final_answer(run) == CHAT_ANSWER
    (run,) = capture_runs(LEGACY, "reasoning")
    assert system_text(run) == [CHAT_SYSTEM]  # sent as a `developer` message
    assert final_answer(run).startswith(REASONING_ANSWER)
    assert reasoning(run) == []  # 2.3b0 records no reasoning either


def test_legacy_events_sent_as_span_events() -> None:
    from tracescore.spans import SpanEvent

    chat = span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"})
    chat.events = [
        SpanEvent("gen_ai.user.message", 1, {"gen_ai.system": "openai", "content": "Hi"}),
        SpanEvent(
            "gen_ai.choice",
            2,
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Hey"},
            },
        ),
    ]
    strands = span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.system": "strands-agents"})
    strands.events = [
        SpanEvent("gen_ai.user.message", 1, {"content": '[{"text": "Weather?"}]'}),
        SpanEvent(
            "gen_ai.choice",
            2,
            {
                "finish_reason": "tool_use",
                "message": orjson.dumps(
                    [
                        {
                            "toolUse": {
                                "toolUseId": "t1",
                                "name": "get_weather",
                                "input": {"city": "Paris"},
                            }
                        }
                    ]
                ).decode(),
            },
        ),
    ]
    first, second = extract_runs(trace(chat, strands))
    assert user_text(first) == ["Hi"]
    assert final_answer(first) == "Hey"
    assert user_text(second) == ["Weather?"]
    (call,) = tool_calls(second)
    assert (call.tool_call_id, call.tool_name) == ("t1", "get_weather")
    assert call.args == {"city": "Paris"}


def test_semconv_1_26_content_span_events() -> None:
    from tracescore.spans import SpanEvent

    chat = span("chat m", {"gen_ai.system": "openai", "gen_ai.request.model": "m"})
    chat.events = [
        SpanEvent(
            "gen_ai.content.prompt",
            1,
            {
                "gen_ai.prompt": orjson.dumps(
                    [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]
                ).decode()
            },
        ),
        SpanEvent(
            "gen_ai.content.completion",
            2,
            {"gen_ai.completion": orjson.dumps([{"role": "assistant", "content": "A"}]).decode()},
        ),
    ]
    (run,) = extract_runs(trace(chat))
    assert (system_text(run), user_text(run), final_answer(run)) == (["S"], ["Q"], "A")


def test_truncated_json_attribute_is_kept_as_text_with_a_warning() -> None:
    cut = '[{"role":"user","parts":[{"type":"text","content":"What is the wea'
    chat = span(
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": cut,
            "gen_ai.output.messages": "plain answer, not JSON",
        },
    )
    (run,) = extract_runs(trace(chat))
    assert user_text(run) == [cut]
    assert final_answer(run) == "plain answer, not JSON"
    (warning,) = run.warnings
    assert "gen_ai.input.messages: invalid JSON" in warning and chat.span_id in warning


def test_missing_attributes_and_unknown_spans() -> None:
    root = span("HTTP POST /chat", {"http.method": "POST"})
    bare = span("chat", {"gen_ai.operation.name": "chat"}, parent=root.span_id)
    (run,) = extract_runs(trace(root, bare))
    assert run.kind == "llm" and run.primary
    assert run.output == [] and run.input.input_messages == []
    assert run.usage.total_tokens == 0 and run.model is None
    infos = read_spans(trace(root, bare))
    assert [(i.convention, i.kind) for i in infos] == [("unknown", "other"), ("otel-genai", "llm")]


def test_five_megabyte_value_is_not_parsed() -> None:
    huge = orjson.dumps(
        [{"role": "assistant", "parts": [{"type": "text", "content": "x" * 5_000_000}]}]
    ).decode()
    chat = span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": huge})
    (run,) = extract_runs(trace(chat))
    (warning,) = run.warnings
    assert "gen_ai.output.messages" in warning and "not parsed" in warning
    assert len(final_answer(run)) == MAX_VALUE_CHARS


def test_tool_error_and_result_from_next_call_without_tool_span() -> None:
    agent = span(
        "invoke_agent A",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "A",
            "gen_ai.usage.input_tokens": 999,
        },
    )
    calls = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": '{"q": "x"}'},
                {"type": "tool_call", "id": "c2", "name": "fetch", "arguments": {"u": 1}},
            ],
        }
    ]
    question = [{"role": "user", "parts": [{"type": "text", "content": "Go"}]}]
    chat1 = span(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 10,
            "gen_ai.input.messages": orjson.dumps(question).decode(),
            "gen_ai.output.messages": orjson.dumps(calls).decode(),
        },
        parent=agent.span_id,
    )
    failed = span(
        "execute_tool lookup",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": "c1",
            "error.type": "TimeoutError",
        },
        parent=agent.span_id,
        status=2,
        status_message="lookup timed out",
    )
    # Pydantic AI format 5 sends tool results with role "user": not a new user turn.
    replies = (
        question
        + calls
        + [
            {
                "role": "user",
                "parts": [
                    {
                        "type": "tool_call_response",
                        "id": "c2",
                        "name": "fetch",
                        "result": {"ok": True},
                    }
                ],
            }
        ]
    )
    chat2 = span(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 20,
            "gen_ai.input.messages": orjson.dumps(replies).decode(),
            "gen_ai.output.messages": '[{"role":"assistant","parts":'
            '[{"type":"text","content":"Done"}]}]',
        },
        parent=agent.span_id,
    )
    runs = extract_runs(trace(agent, chat1, failed, chat2))
    (run,) = only(runs, "agent")
    lookup, fetch = tool_calls(run)
    assert (lookup.state, lookup.is_error, lookup.error_text) == (
        "output-error",
        True,
        "lookup timed out",
    )
    assert lookup.args == {"q": "x"}
    assert (fetch.state, fetch.result) == ("result", {"ok": True})
    assert [c.source for c in run.context] == ["fetch"]  # a failure is no grounding
    assert final_answer(run) == "Done"
    assert user_text(run) == ["Go"]
    assert run.usage.input_tokens == 30  # leaves only, not the agent's 999
    (tool_run,) = only(runs, "tool")
    assert tool_run.status == "error" and tool_run.error == "lookup timed out"
    # The second chat run's turn starts at "Go"; the tool result is not a user turn: the step
    # before this call opens its trajectory, each call with its outcome (as its agent has it:
    # the failed tool span for the call the chat was sent no result of).
    second = only(runs, "llm")[1]
    assert user_text(second) == ["Go"]
    assert [(c.tool_name, c.state, c.result) for c in tool_calls(second)] == [
        ("lookup", "output-error", None),
        ("fetch", "result", {"ok": True}),
    ]
    assert final_answer(second) == "Done"


def test_history_goes_to_remembered_messages() -> None:
    conversation = [
        {"role": "system", "parts": [{"type": "text", "content": "S"}]},
        {"role": "user", "parts": [{"type": "text", "content": "first question"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "first answer"}]},
        {"role": "user", "parts": [{"type": "text", "content": "second question"}]},
    ]
    chat = span(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": orjson.dumps(conversation).decode(),
        },
    )
    (run,) = extract_runs(trace(chat))
    assert user_text(run) == ["second question"]
    assert [m.content.content for m in run.input.remembered_messages] == [
        "first question",
        "first answer",
    ]
    assert system_text(run) == ["S"]


def test_nested_agents_become_their_own_runs() -> None:
    outer = span(
        "invoke_agent Planner",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Planner"},
    )
    ask = [{"role": "user", "parts": [{"type": "text", "content": "Plan a trip"}]}]
    delegate = [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "t1",
                    "name": "Researcher",
                    "arguments": {"topic": "Rome"},
                }
            ],
        }
    ]
    step1 = span(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.output_tokens": 1,
            "gen_ai.input.messages": orjson.dumps(ask).decode(),
            "gen_ai.output.messages": orjson.dumps(delegate).decode(),
        },
        parent=outer.span_id,
    )
    inner = span(
        "invoke_agent Researcher",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "Researcher",
            "gen_ai.input.messages": '[{"role":"user","parts":[{"type":"text","content":"Rome"}]}]',
            "gen_ai.output.messages": '[{"role":"assistant","parts":'
            '[{"type":"text","content":"Rome is warm"}]}]',
        },
        parent=outer.span_id,
    )
    warm = '[{"role":"assistant","parts":[{"type":"text","content":"Rome is warm"}]}]'
    inner_chat = span(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.output_tokens": 2,
            "gen_ai.output.messages": warm,
        },
        parent=inner.span_id,
    )
    step2 = span(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.output_tokens": 4,
            "gen_ai.output.messages": '[{"role":"assistant","parts":'
            '[{"type":"text","content":"Go to Rome"}]}]',
        },
        parent=outer.span_id,
    )
    runs = extract_runs(trace(outer, step1, inner, inner_chat, step2))
    planner, researcher = only(runs, "agent")
    assert (planner.agent_name, researcher.agent_name) == ("Planner", "Researcher")
    (call,) = tool_calls(planner)
    assert (call.tool_name, call.state, call.result) == ("Researcher", "result", "Rome is warm")
    assert inner.span_id in planner.span_ids and inner_chat.span_id not in planner.span_ids
    assert final_answer(planner) == "Go to Rome"
    assert final_answer(researcher) == "Rome is warm"
    assert planner.usage.output_tokens == 7  # its own steps and the sub-agent's
    assert researcher.usage.output_tokens == 2
    assert only(runs, "llm", primary=True) == []


def test_duplicate_spans_and_broken_convention_never_raise() -> None:
    chat = span("chat", {"gen_ai.operation.name": "chat"})
    runs = extract_runs(trace(chat, chat))
    assert len(runs) == 1

    class Broken:
        NAME = "broken"

        @staticmethod
        def detect(span) -> bool:
            return True

        @staticmethod
        def read(span, logs):
            raise KeyError("boom")

    from tracescore.extract.runs import build_runs

    (info,) = read_spans(trace(chat), [Broken()])  # type: ignore[list-item]
    assert info.kind == "other" and "could not read" in info.warnings[0]
    assert build_runs(trace(chat), [Broken()]) == []  # type: ignore[list-item]


def test_parent_cycle_is_cut_not_followed_forever() -> None:
    a = span(
        "invoke_agent A",
        {"gen_ai.operation.name": "invoke_agent"},
        span_id="a" * 16,
        parent="c" * 16,
    )
    b = span("chat", {"gen_ai.operation.name": "chat"}, span_id="b" * 16, parent="a" * 16)
    c = span(
        "execute_tool t",
        {"gen_ai.operation.name": "execute_tool"},
        span_id="c" * 16,
        parent="b" * 16,
    )
    runs = extract_runs(trace(a, b, c))
    assert sorted(r.kind for r in runs) == ["agent", "llm", "tool"]
    assert any("cycle" in w for r in runs for w in r.warnings)


def test_failure_from_error_type_or_exception_event() -> None:
    from tracescore.spans import SpanEvent

    unset = span("chat", {"gen_ai.operation.name": "chat", "error.type": "RateLimitError"})
    raised = span("chat", {"gen_ai.operation.name": "chat"}, status=2)
    raised.events = [
        SpanEvent(
            "exception", 1, {"exception.type": "ValueError", "exception.message": "bad input"}
        )
    ]
    first, second = extract_runs(trace(unset, raised))
    assert (first.status, first.error) == ("error", "RateLimitError")
    assert (second.status, second.error) == ("error", "ValueError: bad input")


def test_agent_that_only_delegates_takes_its_agents_question_and_answer() -> None:
    boss = span(
        "invoke_agent Boss", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Boss"}
    )
    answers = []
    for name, text in (("Finder", "Found 3 flights"), ("Booker", "Booked the 9am flight")):
        worker = span(
            f"invoke_agent {name}",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
            parent=boss.span_id,
        )
        chat = span(
            "chat",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": 5,
                "gen_ai.input.messages": '[{"role":"user","parts":[{"type":"text",'
                '"content":"Book me a flight"}]}]',
                "gen_ai.output.messages": orjson.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
                ).decode(),
            },
            parent=worker.span_id,
        )
        answers += [worker, chat]
    runs = extract_runs(trace(boss, *answers))
    boss_run, finder, booker = only(runs, "agent")
    assert user_text(boss_run) == ["Book me a flight"]
    assert [(c.tool_name, c.result) for c in tool_calls(boss_run)] == [
        ("Finder", "Found 3 flights"),
        ("Booker", "Booked the 9am flight"),
    ]
    assert final_answer(boss_run) == "Booked the 9am flight"
    assert boss_run.usage.input_tokens == 10 and finder.usage.input_tokens == 5
    assert final_answer(booker) == "Booked the 9am flight"
