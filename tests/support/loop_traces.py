"""One agent loop written as the spans of each message encoding extraction reads.

A :class:`Loop` is what happened (system prompt, question, each model call's tool calls with
their results, the final answer, each call's token usage); :func:`loop_trace` writes it as a
trace in one encoding, with or without an agent span, a user's plain span around the calls and
tool spans between them. Every encoding holds the same content, so every trace must rebuild
into the same run (``tests/extract/test_extract_loop_encodings.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from tracescore.spans import Resource, Scope, Span, SpanEvent, Trace

TRACE_ID = "ef" * 16
START = 1_700_000_000_000_000_000


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    args: dict[str, Any]
    result: dict[str, Any]


@dataclass(frozen=True)
class Loop:
    system: str
    question: str
    steps: list[list[ToolCall]]
    """Per model call before the last, the tool calls it made (each call makes at least one)."""
    answer: str
    usage: list[tuple[int, int]] = field(default_factory=list)
    """Per model call (``len(steps) + 1`` of them), its input and output tokens."""


def weather_loop(call_id: str, city: str, sky: str) -> Loop:
    """The shortest loop with a tool: one ``get_weather`` call, then the answer (``sky``)."""
    call = ToolCall(call_id, "get_weather", {"city": city}, {"sky": sky})
    return Loop(
        "Be brief.", f"Weather in {city}?", [[call]], f"{sky.capitalize()}.", [(10, 2), (20, 3)]
    )


Message = dict[str, Any]


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


@dataclass
class _Writer:
    """Spans a millisecond apart, ids numbered from 1."""

    scope: Scope
    spans: list[Span] = field(default_factory=list)

    def span(
        self,
        name: str,
        attributes: dict[str, Any],
        parent: str | None,
        scope: Scope | None = None,
        **more: Any,
    ) -> str:
        index = len(self.spans)
        begin = START + index * 1_000_000
        span_id = f"{index + 1:016x}"
        self.spans.append(
            Span(
                TRACE_ID,
                span_id,
                parent,
                name,
                1,
                begin,
                begin + 900_000,
                attributes,
                Resource({"service.name": "loop"}),
                scope or self.scope,
                **more,
            )
        )
        return span_id

    def stretch(self, span_id: str) -> None:
        """A parent span written first ends after its last child."""
        index = int(span_id, 16) - 1
        parent = self.spans[index]
        parent.end_time_ns = START + len(self.spans) * 1_000_000


# --- the conversation each call was sent, in each encoding -----------------------------------


def _history(loop: Loop, upto: int) -> list[tuple[str, Any]]:
    """What call ``upto`` was sent after the system prompt: ("user", text), ("calls", [ToolCall]),
    ("result", ToolCall) in order."""
    sent: list[tuple[str, Any]] = [("user", loop.question)]
    for step in loop.steps[:upto]:
        sent.append(("calls", step))
        sent.extend(("result", call) for call in step)
    return sent


def _output(loop: Loop, index: int) -> tuple[str, Any]:
    return ("calls", loop.steps[index]) if index < len(loop.steps) else ("text", loop.answer)


def _genai_message(kind: str, value: Any) -> Message:
    if kind == "user":
        return {"role": "user", "parts": [{"type": "text", "content": value}]}
    if kind == "text":
        return {"role": "assistant", "parts": [{"type": "text", "content": value}]}
    if kind == "calls":
        return {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": c.call_id, "name": c.name, "arguments": c.args}
                for c in value
            ],
        }
    return {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": value.call_id, "response": value.result}],
    }


def _openai_message(kind: str, value: Any) -> Message:
    """A Chat Completions message (the shape OpenLLMetry and OpenInference flatten)."""
    if kind == "user":
        return {"role": "user", "content": value}
    if kind == "text":
        return {"role": "assistant", "content": value}
    if kind == "calls":
        return {
            "role": "assistant",
            "tool_calls": [
                {"id": c.call_id, "name": c.name, "arguments": _json(c.args)} for c in value
            ],
        }
    return {"role": "tool", "tool_call_id": value.call_id, "content": _json(value.result)}


def _vercel_message(kind: str, value: Any) -> Message:
    if kind == "user":
        return {"role": "user", "content": [{"type": "text", "text": value}]}
    if kind == "text":
        return {"role": "assistant", "content": [{"type": "text", "text": value}]}
    if kind == "calls":
        return {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "toolCallId": c.call_id, "toolName": c.name, "input": c.args}
                for c in value
            ],
        }
    return {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": value.call_id,
                "toolName": value.name,
                "output": {"type": "json", "value": value.result},
            }
        ],
    }


# --- one model call, one tool span, one agent span, per encoding ------------------------------


def _genai_call(loop: Loop, index: int) -> tuple[str, dict[str, Any], list[SpanEvent]]:
    tokens_in, tokens_out = loop.usage[index]
    return (
        "chat gpt-4o-mini",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.system_instructions": _json([{"type": "text", "content": loop.system}]),
            "gen_ai.input.messages": _json([_genai_message(*m) for m in _history(loop, index)]),
            "gen_ai.output.messages": _json([_genai_message(*_output(loop, index))]),
            "gen_ai.usage.input_tokens": tokens_in,
            "gen_ai.usage.output_tokens": tokens_out,
        },
        [],
    )


def _events_call(loop: Loop, index: int) -> tuple[str, dict[str, Any], list[SpanEvent]]:
    """Semconv ≤ 1.36: no content attribute; one span event per message."""
    tokens_in, tokens_out = loop.usage[index]
    events = [SpanEvent("gen_ai.system.message", START, {"content": loop.system})]
    for kind, value in _history(loop, index):
        message = _openai_message(kind, value)
        if kind == "calls":
            calls = [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _json(c.args)},
                }
                for c in value
            ]
            events.append(
                SpanEvent("gen_ai.assistant.message", START, {"tool_calls": _json(calls)})
            )
        elif kind == "result":
            events.append(
                SpanEvent(
                    "gen_ai.tool.message",
                    START,
                    {"id": value.call_id, "content": message["content"]},
                )
            )
        else:
            events.append(SpanEvent("gen_ai.user.message", START, {"content": value}))
    kind, value = _output(loop, index)
    if kind == "calls":
        answer: Message = {
            "tool_calls": [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _json(c.args)},
                }
                for c in value
            ]
        }
    else:
        answer = {"content": value}
    events.append(
        SpanEvent(
            "gen_ai.choice", START, {"index": 0, "finish_reason": "stop", "message": _json(answer)}
        )
    )
    return (
        "chat gpt-4o-mini",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": tokens_in,
            "gen_ai.usage.output_tokens": tokens_out,
        },
        events,
    )


def _flattened(prefix: str, message: Message, call_keys: tuple[str, str, str]) -> dict[str, Any]:
    flat = {f"{prefix}.role": message["role"]}
    if "content" in message:
        flat[f"{prefix}.content"] = message["content"]
    if "tool_call_id" in message:
        flat[f"{prefix}.tool_call_id"] = message["tool_call_id"]
    id_key, name_key, args_key = call_keys
    for i, call in enumerate(message.get("tool_calls", [])):
        flat[f"{prefix}.tool_calls.{i}.{id_key}"] = call["id"]
        flat[f"{prefix}.tool_calls.{i}.{name_key}"] = call["name"]
        flat[f"{prefix}.tool_calls.{i}.{args_key}"] = call["arguments"]
    return flat


def _openllmetry_call(loop: Loop, index: int) -> tuple[str, dict[str, Any], list[SpanEvent]]:
    """OpenLLMetry ≤ 0.54: indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``."""
    tokens_in, tokens_out = loop.usage[index]
    keys = ("id", "name", "arguments")
    attributes: dict[str, Any] = {
        "llm.request.type": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": tokens_in,
        "gen_ai.usage.output_tokens": tokens_out,
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": loop.system,
    }
    for i, sent in enumerate(_history(loop, index), start=1):
        attributes.update(_flattened(f"gen_ai.prompt.{i}", _openai_message(*sent), keys))
    attributes.update(
        _flattened("gen_ai.completion.0", _openai_message(*_output(loop, index)), keys)
    )
    return "openai.chat", attributes, []


def _openinference_call(loop: Loop, index: int) -> tuple[str, dict[str, Any], list[SpanEvent]]:
    tokens_in, tokens_out = loop.usage[index]
    keys = ("tool_call.id", "tool_call.function.name", "tool_call.function.arguments")
    attributes: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": tokens_in,
        "llm.token_count.completion": tokens_out,
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": loop.system,
    }
    for i, sent in enumerate(_history(loop, index), start=1):
        attributes.update(
            _flattened(f"llm.input_messages.{i}.message", _openai_message(*sent), keys)
        )
    attributes.update(
        _flattened("llm.output_messages.0.message", _openai_message(*_output(loop, index)), keys)
    )
    return "ChatCompletion", attributes, []


def _openinference_body_call(loop: Loop, index: int) -> tuple[str, dict[str, Any], list[SpanEvent]]:
    """OpenInference with only the raw request and response bodies (``input.value`` /
    ``output.value``), as instrumentors that do not flatten messages record them."""
    tokens_in, tokens_out = loop.usage[index]

    def wire(kind: str, value: Any) -> Message:
        message = _openai_message(kind, value)
        if kind == "calls":  # the wire format: each call's function under ``function``
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in message["tool_calls"]
            ]
        return message

    request = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": loop.system}]
        + [wire(*m) for m in _history(loop, index)],
    }
    response = {
        "choices": [{"index": 0, "message": wire(*_output(loop, index))}],
        "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out},
    }
    return (
        "ChatCompletion",
        {
            "openinference.span.kind": "LLM",
            "input.value": _json(request),
            "input.mime_type": "application/json",
            "output.value": _json(response),
            "output.mime_type": "application/json",
            "llm.token_count.prompt": tokens_in,
            "llm.token_count.completion": tokens_out,
        },
        [],
    )


def _vercel_call(loop: Loop, index: int) -> tuple[str, dict[str, Any], list[SpanEvent]]:
    tokens_in, tokens_out = loop.usage[index]
    sent = [{"role": "system", "content": loop.system}]
    sent.extend(_vercel_message(*m) for m in _history(loop, index))
    attributes: dict[str, Any] = {
        "ai.operationId": "ai.generateText.doGenerate",
        "ai.model.id": "gpt-4o-mini",
        "ai.prompt.messages": _json(sent),
        "ai.usage.inputTokens": tokens_in,
        "ai.usage.outputTokens": tokens_out,
    }
    kind, value = _output(loop, index)
    if kind == "calls":
        attributes["ai.response.toolCalls"] = _json(
            [{"toolCallId": c.call_id, "toolName": c.name, "input": _json(c.args)} for c in value]
        )
    else:
        attributes["ai.response.text"] = value
    return "ai.generateText.doGenerate", attributes, []


def _genai_tool(call: ToolCall) -> tuple[str, dict[str, Any]]:
    return f"execute_tool {call.name}", {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.call_id,
        "gen_ai.tool.call.arguments": _json(call.args),
        "gen_ai.tool.call.result": _json(call.result),
    }


def _openllmetry_tool(call: ToolCall) -> tuple[str, dict[str, Any]]:
    return f"{call.name}.tool", {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": call.name,
        "traceloop.entity.input": _json({"args": [], "kwargs": call.args}),
        "traceloop.entity.output": _json(_json(call.result)),
    }


def _openinference_tool(call: ToolCall) -> tuple[str, dict[str, Any]]:
    return call.name, {
        "openinference.span.kind": "TOOL",
        "tool.name": call.name,
        "input.value": _json(call.args),
        "output.value": _json(call.result),
    }


def _vercel_tool(call: ToolCall) -> tuple[str, dict[str, Any]]:
    return "ai.toolCall", {
        "ai.operationId": "ai.toolCall",
        "ai.toolCall.id": call.call_id,
        "ai.toolCall.name": call.name,
        "ai.toolCall.args": _json(call.args),
        "ai.toolCall.result": _json(call.result),
    }


@dataclass(frozen=True)
class Encoding:
    scope: str
    call: Callable[[Loop, int], tuple[str, dict[str, Any], list[SpanEvent]]]
    tool: Callable[[ToolCall], tuple[str, dict[str, Any]]]
    agent: tuple[str, dict[str, Any]]


ENCODINGS = {
    "otel-genai": Encoding(
        "opentelemetry.instrumentation.openai_v2",
        _genai_call,
        _genai_tool,
        (
            "invoke_agent Weather",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Weather"},
        ),
    ),
    "otel-genai-events": Encoding(
        "opentelemetry.instrumentation.openai_v2",
        _events_call,
        _genai_tool,
        (
            "invoke_agent Weather",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Weather"},
        ),
    ),
    "openllmetry-indexed": Encoding(
        "opentelemetry.instrumentation.openai.v1",
        _openllmetry_call,
        _openllmetry_tool,
        ("Weather.agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": "Weather"}),
    ),
    "openinference": Encoding(
        "openinference.instrumentation.openai",
        _openinference_call,
        _openinference_tool,
        ("Weather", {"openinference.span.kind": "AGENT", "agent.name": "Weather"}),
    ),
    "openinference-bodies": Encoding(
        "openinference.instrumentation.openai",
        _openinference_body_call,
        _openinference_tool,
        ("Weather", {"openinference.span.kind": "AGENT", "agent.name": "Weather"}),
    ),
    "vercel": Encoding(
        "ai",
        _vercel_call,
        _vercel_tool,
        (
            "ai.generateText",
            {"ai.operationId": "ai.generateText", "ai.telemetry.functionId": "Weather"},
        ),
    ),
}


def loop_trace(
    loop: Loop, encoding: str, *, wrapper: str | None = None, tool_spans: bool = True
) -> Trace:
    """The loop as one trace: under an agent span (``wrapper="agent"``), a user's plain span
    (``"plain"``) or nothing; a tool span for each call between the model calls when
    ``tool_spans``."""
    codec = ENCODINGS[encoding]
    writer = _Writer(Scope(codec.scope))
    parent = None
    if wrapper == "agent":
        parent = writer.span(*codec.agent, None)
    elif wrapper == "plain":
        parent = writer.span("handle_request", {"app.user": "u1"}, None, Scope("app"))
    for index in range(len(loop.steps) + 1):
        name, attributes, events = codec.call(loop, index)
        writer.span(name, attributes, parent, events=events)
        if tool_spans and index < len(loop.steps):
            for call in loop.steps[index]:
                writer.span(*codec.tool(call), parent)
    if parent is not None:
        writer.stretch(parent)
    return Trace(TRACE_ID, writer.spans)
