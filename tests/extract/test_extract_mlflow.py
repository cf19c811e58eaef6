"""MLflow Tracing, native format: captures of mlflow-tracing 3.17.2 exporting over OTLP.

A hand-written agent (``@mlflow.trace(span_type="AGENT")``) runs a raw ``openai`` tool loop
traced by ``mlflow.openai.autolog()`` with a ``span_type="TOOL"`` tool; ``raw_tool_loop`` is the
same loop with autolog only, and ``tool_call_genai_semconv`` the same agent with
``MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true`` (``tests/fixtures/captures/_make/capture_mlflow.py``).
"""

from __future__ import annotations

import orjson
import pytest

from tests.support.extract_support import (
    ATLANTIS_USER,
    LONDON_RESULT,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    assert_atlantis_calls,
    assert_read_without_crash,
    assert_weather_agent,
    capture_runs,
    final_answer,
    only,
    span,
    system_text,
    tool_calls,
    trace,
    user_text,
)
from tracescore.extract import extract_runs, primary_runs
from tracescore.extract.model import AgentRun
from tracescore.spans import Span, SpanEvent

LIBRARY = "mlflow"
CONVENTION = "mlflow"
SECOND_USER = "Is it warmer than yesterday?"
SECOND_ANSWER = "Yes: 21 degrees Celsius in Paris today, warmer than yesterday."


def _assert_tool_run(run: AgentRun, call_id: str, args: dict, result: object) -> None:
    """A TOOL span's run, named after the model's call it ran (MLflow records no id)."""
    assert run.kind == "tool" and not run.primary and run.convention == CONVENTION
    assert run.agent_name == "WeatherBot"
    (call,) = tool_calls(run)
    assert (call.tool_call_id, call.tool_name, call.args, call.result) == (
        call_id,
        "get_weather",
        args,
        result,
    )


def test_agent_with_tool_call() -> None:
    runs = capture_runs(LIBRARY, "tool_call")
    (agent,) = only(runs, "agent")
    assert primary_runs(runs) == [agent]
    # mlflow.chat.tokenUsage of the two chat calls (116+23, 142+23), summed.
    assert_weather_agent(agent, convention=CONVENTION, usage=(258, 46))
    assert (agent.status, agent.usage.total_tokens) == ("ok", 304)
    (tool,) = agent.tools
    assert tool.parameters == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    (call,) = tool_calls(agent)
    first, second = only(runs, "llm")
    assert not first.primary and not second.primary
    assert (first.model, first.usage.input_tokens, first.usage.output_tokens) == (
        "gpt-4o-mini",
        116,
        23,
    )
    assert tool_calls(first)[0].state == "call"
    assert final_answer(second).startswith(WEATHER_ANSWER)
    (tool_run,) = only(runs, "tool")
    _assert_tool_run(tool_run, call.tool_call_id, {"city": "Paris"}, WEATHER_RESULT)


def test_genai_semconv_variant_reads_the_same() -> None:
    """``MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true``: GenAI attributes, no ``mlflow.*`` ones, on
    the same ``mlflow.tracing.provider`` scope; the GenAI module reads it to the same run."""
    runs = capture_runs(LIBRARY, "tool_call_genai_semconv")
    (agent,) = primary_runs(runs)
    assert_weather_agent(agent, convention="otel-genai", usage=(258, 46))


def test_streamed_calls_are_rebuilt_from_their_chunks() -> None:
    """Streamed, MLflow records the first call's output as an empty message: its tool call is
    only in the ``mlflow.chunk.item.N`` events, and is read from there."""
    runs = capture_runs(LIBRARY, "tool_call_stream")
    (agent,) = primary_runs(runs)
    assert_weather_agent(agent, convention=CONVENTION, usage=(258, 46))
    first, _ = only(runs, "llm")
    (call,) = tool_calls(first)
    assert (call.tool_call_id, call.args, call.state) == (
        tool_calls(agent)[0].tool_call_id,
        {"city": "Paris"},
        "call",
    )
    (tool_run,) = only(runs, "tool")
    assert tool_calls(tool_run)[0].tool_call_id == call.tool_call_id


def test_multi_turn_reads_the_history_as_remembered() -> None:
    """Turn 2 sends turn 1's messages: they are the run's history, not its input. MLflow's
    session metadata stays in its tracking store, so no conversation id reaches OTLP."""
    runs = capture_runs(LIBRARY, "multi_turn")
    first, second = primary_runs(runs)
    assert first.trace_id != second.trace_id
    assert user_text(first) == [WEATHER_USER]
    assert final_answer(first).startswith(WEATHER_ANSWER)
    assert (second.kind, second.agent_name, second.convention) == (
        "agent",
        "WeatherBot",
        CONVENTION,
    )
    assert system_text(second) == [WEATHER_SYSTEM]
    assert user_text(second) == [SECOND_USER]
    user, call_message, answer = second.input.remembered_messages
    assert (user.role, user.content.content) == ("user", WEATHER_USER)
    (remembered_call,) = [p.tool_invocation for p in call_message.content.parts]
    assert remembered_call is not None and remembered_call.state == "result"
    assert remembered_call.result == WEATHER_RESULT
    assert (answer.role, answer.content.content) == ("assistant", final_answer(first))
    (call,) = tool_calls(second)
    assert (call.args, call.result) == ({"city": "Paris"}, WEATHER_RESULT)
    assert call.tool_call_id != remembered_call.tool_call_id
    assert final_answer(second) == SECOND_ANSWER
    assert (second.usage.input_tokens, second.usage.output_tokens) == (362, 46)
    assert first.conversation_id is None and second.conversation_id is None


def test_tool_error_is_a_failed_call_and_grounds_nothing() -> None:
    runs = capture_runs(LIBRARY, "tool_error")
    (agent,) = primary_runs(runs)
    assert user_text(agent) == [ATLANTIS_USER]
    assert_atlantis_calls(tool_calls(agent))
    atlantis, paris, london = tool_calls(agent)
    assert [orjson.loads(c.content) for c in agent.context] == [WEATHER_RESULT, LONDON_RESULT]
    assert final_answer(agent).startswith("I could not find Atlantis.")
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (620, 95)
    assert agent.status == "ok"  # the agent handled the error
    failed, *answered = only(runs, "tool")
    assert failed.status == "error" and tool_calls(failed)[0].state == "output-error"
    assert tool_calls(failed)[0].tool_call_id == atlantis.tool_call_id
    _assert_tool_run(answered[0], paris.tool_call_id, {"city": "Paris"}, WEATHER_RESULT)
    _assert_tool_run(answered[1], london.tool_call_id, {"city": "London"}, LONDON_RESULT)


def test_without_an_agent_span_each_chat_call_is_primary() -> None:
    """Autolog alone: every chat call is a root span, scored as a raw client's would be."""
    runs = capture_runs(LIBRARY, "raw_tool_loop")
    assert only(runs, "agent") == [] and only(runs, "tool") == []
    first, second = primary_runs(runs)
    assert (first.kind, second.kind) == ("llm", "llm")
    assert first.agent_name is None and first.convention == CONVENTION
    assert system_text(second) == [WEATHER_SYSTEM]
    assert user_text(second) == [WEATHER_USER]
    (call,) = tool_calls(second)
    assert (call.tool_call_id, call.args, call.result) == (
        tool_calls(first)[0].tool_call_id,
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert final_answer(second).startswith(WEATHER_ANSWER)
    assert (second.usage.input_tokens, second.usage.output_tokens) == (142, 23)


def _mlflow_span(
    span_type: str, inputs: object, outputs: object, parent: str | None = None
) -> Span:
    """A span as MLflow exports it: every value JSON-encoded; a tool is named get_weather."""
    attributes = {
        "mlflow.spanType": orjson.dumps(span_type).decode(),
        "mlflow.spanInputs": orjson.dumps(inputs).decode(),
        "mlflow.spanOutputs": orjson.dumps(outputs).decode(),
    }
    name = "get_weather" if span_type == "TOOL" else "answer"
    return span(name, attributes, parent=parent, scope="mlflow.tracing.provider")


def test_agent_without_traced_model_calls_reads_its_own_arguments() -> None:
    """A ``@mlflow.trace`` agent taking one text argument and returning text, with no chat span
    below it: its argument is the user's message, its return value the answer."""
    (run,) = extract_runs(trace(_mlflow_span("AGENT", {"question": WEATHER_USER}, WEATHER_ANSWER)))
    assert (run.kind, run.primary, run.agent_name) == ("agent", True, "answer")
    assert user_text(run) == [WEATHER_USER]
    assert final_answer(run) == WEATHER_ANSWER


@pytest.mark.parametrize(
    "attributes",
    [
        {"mlflow.spanType": "CHAT_MODEL", "mlflow.spanInputs": '{"messages": ['},
        {
            "mlflow.spanType": '"CHAT_MODEL"',
            "mlflow.spanInputs": '"\\u0000"' * 3,
            "mlflow.chat.tokenUsage": '{"input_tokens": "many"}',
            "mlflow.chat.tools": "[1, {}]",
        },
        {"mlflow.spanType": "7", "mlflow.spanInputs": "[[[]]]", "mlflow.spanOutputs": "{}"},
        {"mlflow.spanType": '"TOOL"', "mlflow.spanInputs": "null", "mlflow.spanOutputs": "[{"},
        {
            "mlflow.spanType": '"AGENT"',
            "mlflow.spanInputs": '{"a": 1, "b": [2]}',
            "mlflow.spanOutputs": '{"choices": "none"}',
        },
        {"mlflow.spanType": '"RETRIEVER"', "mlflow.spanOutputs": '[{"page_content": 3}, 5]'},
    ],
    ids=["unquoted", "nul-text", "number-type", "cut-json", "odd-agent", "odd-documents"],
)
def test_hostile_values_never_raise(attributes: dict) -> None:
    """Read by this module without a crash (a crash would be caught as 'could not read')."""
    assert_read_without_crash(span("x", attributes, scope="mlflow.tracing.provider"), CONVENTION)


def test_tool_spans_take_the_call_with_their_arguments() -> None:
    """Parallel calls run in another order than the model listed them: each tool span takes
    the call with its arguments, not merely the next of its name."""
    response = {
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{city}",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": orjson.dumps({"city": city}).decode(),
                            },
                        }
                        for city in ("Paris", "London")
                    ],
                },
            }
        ]
    }
    agent = _mlflow_span("AGENT", {"question": WEATHER_USER}, "done")
    chat = _mlflow_span(
        "CHAT_MODEL",
        {"messages": [{"role": "user", "content": WEATHER_USER}]},
        response,
        parent=agent.span_id,
    )
    tools = [
        _mlflow_span("TOOL", {"city": city}, {"city": city}, parent=agent.span_id)
        for city in ("London", "Paris")
    ]
    runs = extract_runs(trace(agent, chat, *tools))
    assert [(tool_calls(r)[0].tool_call_id, tool_calls(r)[0].args) for r in only(runs, "tool")] == [
        ("call_London", {"city": "London"}),
        ("call_Paris", {"city": "Paris"}),
    ]
    (run,) = primary_runs(runs)
    assert [(c.tool_call_id, c.result) for c in tool_calls(run)] == [
        ("call_Paris", {"city": "Paris"}),
        ("call_London", {"city": "London"}),
    ]


@pytest.mark.parametrize(
    "chunks",
    [
        [
            '{"choices": [{"delta": {"tool_calls": [{"index": "0"}, 5, {"index": 1, "function": 3}]}}]}',
            "[",
            '{"choices": {"delta": 1}}',
            '{"choices": [{"delta": {"content": 7}}]}',
        ],
        [
            '{"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c", "function": '
            '{"name": "get_weather", "arguments": "{\\"ci"}}]}}]}',
            '{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": '
            '{"arguments": "ty\\": 1"}}]}}]}',
        ],  # arguments cut short: kept as text
    ],
    ids=["malformed", "truncated-arguments"],
)
def test_hostile_stream_chunks_never_raise(chunks: list[str]) -> None:
    chat = _mlflow_span("CHAT_MODEL", {"messages": []}, {"choices": []})
    chat.events = [
        SpanEvent(f"mlflow.chunk.item.{i}", 0, {"mlflow.chunk.value": value})
        for i, value in enumerate(chunks)
    ]
    assert_read_without_crash(chat, CONVENTION)
