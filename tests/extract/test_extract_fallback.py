"""The generic fallback (issue 31, item 4): a library no convention knows still gives its model
calls when its spans kept OpenAI- or Anthropic-shaped chat JSON, and ordinary spans stay
unclaimed."""

from __future__ import annotations

import json

from tests.support.extract_support import (
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    span,
    system_text,
    trace,
    user_text,
)
from tracescore.extract import extract_runs, read_spans
from tracescore.extract.fallback import MAX_FALLBACK_CHARS
from tracescore.extract.model import AgentRun

CALL = {
    "id": "call_f1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
OPENAI_REQUEST = {
    "model": "gpt-4o-mini",
    "tools": TOOLS,
    "messages": [
        {"role": "system", "content": WEATHER_SYSTEM},
        {"role": "user", "content": WEATHER_USER},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_f1", "content": json.dumps(WEATHER_RESULT)},
    ],
}
OPENAI_RESPONSE = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": f"{WEATHER_ANSWER}."},
        }
    ],
    "usage": {"prompt_tokens": 185, "completion_tokens": 35, "total_tokens": 220},
}


def _only_run(*spans: object) -> AgentRun:
    (run,) = extract_runs(trace(*spans))  # type: ignore[arg-type]
    return run


def test_an_openai_request_and_completion_on_unknown_attributes_read_as_an_llm_run() -> None:
    run = _only_run(
        span(
            "acme.llm",
            {
                "acme.request": json.dumps(OPENAI_REQUEST),
                "acme.response": json.dumps(OPENAI_RESPONSE),
            },
            scope="acme.sdk",
        )
    )
    assert (run.kind, run.primary, run.convention) == ("llm", True, "fallback")
    assert run.model == "gpt-4o-mini"  # the request's model, as the GenAI request model is
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [WEATHER_USER]
    # The turn's tool call, joined with the result sent back, opens the trajectory.
    (call,) = [p.tool_invocation for p in run.output[0].content.parts if p.tool_invocation]
    assert (call.tool_name, call.args, call.result) == (
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert run.output[0].content.content == f"{WEATHER_ANSWER}."
    assert [t.name for t in run.tools] == ["get_weather"]
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.total_tokens) == (
        185,
        35,
        220,
    )
    (warning,) = run.warnings
    assert "read by the generic fallback" in warning and "'acme.sdk'" in warning
    assert "acme.request and acme.response" in warning and "conventions:" in warning


def test_an_anthropic_request_and_message_read_as_an_llm_run() -> None:
    request = {
        "model": "claude-haiku-4-5",
        "system": WEATHER_SYSTEM,
        "max_tokens": 512,
        "messages": [{"role": "user", "content": [{"type": "text", "text": WEATHER_USER}]}],
    }
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": "Let me check."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
        "usage": {"input_tokens": 120, "output_tokens": 40},
    }
    run = _only_run(
        span("llm call", {"payload.in": json.dumps(request), "payload.out": json.dumps(response)})
    )
    assert (run.kind, run.convention, run.model) == ("llm", "fallback", "claude-haiku-4-5")
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [WEATHER_USER]
    parts = run.output[0].content.parts
    assert [p.type for p in parts] == ["text", "tool-invocation"]
    call = parts[1].tool_invocation
    assert call is not None
    assert (call.tool_call_id, call.tool_name, call.args, call.state) == (
        "toolu_1",
        "get_weather",
        {"city": "Paris"},
        "call",
    )
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.total_tokens) == (
        120,
        40,
        160,
    )


def test_a_response_alone_is_still_a_model_call() -> None:
    run = _only_run(span("completion", {"http.response.body": json.dumps(OPENAI_RESPONSE)}))
    assert (run.kind, run.convention) == ("llm", "fallback")
    assert run.input.input_messages == []
    assert run.output[0].content.content == f"{WEATHER_ANSWER}."


def test_ordinary_spans_are_not_claimed() -> None:
    spans = [
        span("GET /weather", {"http.method": "GET", "http.response.body": '{"city": "Paris"}'}),
        span("load settings", {"settings": json.dumps({"role": "admin", "messages": "on"})}),
        span("memory", {"memory": json.dumps({"messages": [{"role": "user"}, "text"]})}),
        span("batch", {"items": json.dumps([{"role": "user", "content": "hi"}])}),
        span("db", {"db.statement": "SELECT role FROM users", "rows": 3}),
    ]
    read = read_spans(trace(*spans))
    assert [(i.convention, i.kind) for i in read] == [("unknown", "other")] * len(spans)
    assert extract_runs(trace(*spans)) == []


def test_a_value_beyond_the_bound_is_not_looked_into() -> None:
    padded = {**OPENAI_REQUEST, "padding": "x" * MAX_FALLBACK_CHARS}
    assert extract_runs(trace(span("big", {"acme.request": json.dumps(padded)}))) == []


def test_it_never_takes_a_span_a_convention_claims() -> None:
    """An OpenInference LLM span carries the same JSON in ``input.value``: OpenInference reads it."""
    run = _only_run(
        span(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "input.value": json.dumps(OPENAI_REQUEST),
                "output.value": json.dumps(OPENAI_RESPONSE),
                "llm.model_name": "gpt-4o-mini",
            },
        )
    )
    assert run.convention == "openinference" and run.warnings == []


def test_a_wrapper_handed_the_conversation_is_not_a_model_call() -> None:
    """MLflow's ``@mlflow.trace`` agent function records its argument, the conversation, as
    ``{"messages": [...]}`` like the model calls below it: those calls are the runs, one loop
    whose agent run the wrapper anchors (the second call was sent the first one's tool call)."""
    request = {"messages": OPENAI_REQUEST["messages"][:2]}
    wrapper = span(
        "WeatherBot", {"fn.inputs": json.dumps(request), "fn.output": f"{WEATHER_ANSWER}."}
    )
    first = span(
        "Completions",
        {
            "fn.inputs": json.dumps({**request, "model": "gpt-4o-mini"}),
            "fn.output": json.dumps(
                {
                    **OPENAI_RESPONSE,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls",
                            "message": {"role": "assistant", "content": None, "tool_calls": [CALL]},
                        }
                    ],
                }
            ),
        },
        parent=wrapper.span_id,
    )
    second = span(
        "Completions",
        {"fn.inputs": json.dumps(OPENAI_REQUEST), "fn.output": json.dumps(OPENAI_RESPONSE)},
        parent=wrapper.span_id,
    )
    runs = extract_runs(trace(wrapper, first, second))
    assert [(r.span_id, r.kind, r.primary) for r in runs] == [
        (wrapper.span_id, "agent", True),
        (first.span_id, "llm", False),
        (second.span_id, "llm", False),
    ]
    assert runs[0].output[0].content.content == f"{WEATHER_ANSWER}."
    assert (
        runs[0].input.input_messages[0].content.content == OPENAI_REQUEST["messages"][1]["content"]
    )
    assert runs[2].output[0].content.content == f"{WEATHER_ANSWER}."


def test_langchain_serialized_values_in_a_library_no_convention_knows() -> None:
    """A user's own span holding LangChain's ``{"messages": [[…]]}`` and ``{"generations":
    [[…]]}`` (serialized with ``dumpd``): read by the shared LangChain reader."""

    def serialized(kind: str, **kwargs: object) -> dict:
        return {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", kind],
            "kwargs": kwargs,
        }

    llm = span(
        "my_llm_call",
        {
            "app.input": json.dumps(
                {
                    "messages": [
                        [
                            serialized("SystemMessage", content=WEATHER_SYSTEM, type="system"),
                            serialized("HumanMessage", content=WEATHER_USER, type="human"),
                        ]
                    ]
                }
            ),
            "app.output": json.dumps(
                {
                    "generations": [
                        [
                            {
                                "text": f"{WEATHER_ANSWER}.",
                                "message": serialized(
                                    "AIMessage", content=f"{WEATHER_ANSWER}.", type="ai"
                                ),
                            }
                        ]
                    ]
                }
            ),
        },
        scope="my.app",
    )
    (run,) = extract_runs(trace(llm))
    assert (run.kind, run.convention) == ("llm", "fallback")
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [WEATHER_USER]
    assert run.output[0].content.content == f"{WEATHER_ANSWER}."
