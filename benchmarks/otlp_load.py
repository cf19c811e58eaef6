"""Realistic OTLP trace batches for load tests: agent runs with LLM and tool spans.

Each trace is one agent run of 10 spans (an ``invoke_agent`` root, 5 LLM calls, 4 tool calls),
each span with ~15 attributes of mixed types; every LLM span carries a ~2 KB
``gen_ai.input.messages`` JSON string, as real GenAI instrumentations send. A batch is built
once as a template; :func:`fresh_ids` then rewrites its trace ids per request (a byte
replacement), so every request stores new traces without the client paying to rebuild it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

SPANS_PER_TRACE = 10
# Ids of a template batch start with a marker followed by four zero bytes, which fresh_ids
# replaces by the request number: trace ids = marker + number + trace index, span ids (unique
# across the whole load, as collectors like Phoenix require) = marker + number + span index.
_TRACE_MARKER = bytes.fromhex("7a5c0de5")
_SPAN_MARKER = bytes.fromhex("5b1d")
_START_NS = 1_795_000_000_000_000_000

_MESSAGES = json.dumps(
    [
        {
            "role": "system",
            "parts": [
                {
                    "type": "text",
                    "content": "You are WeatherBot, a concise "
                    "weather assistant. Always use the get_weather tool for weather questions. "
                    * 6,
                }
            ],
        }
    ]
    + [
        {
            "role": "user",
            "parts": [
                {
                    "type": "text",
                    "content": f"Turn {n}: what's the weather like "
                    "in Paris today, and should I bring an umbrella to the museum this afternoon?",
                }
            ],
        }
        for n in range(8)
    ]
)
assert 1800 <= len(_MESSAGES) <= 2600, len(_MESSAGES)

_RESOURCE = {
    "service.name": "bench-agent",
    "service.version": "1.4.2",
    "deployment.environment": "prod",
    "telemetry.sdk.name": "opentelemetry",
    "telemetry.sdk.language": "python",
    "telemetry.sdk.version": "1.38.0",
}


def _agent_attributes(n: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "WeatherBot",
        "gen_ai.agent.id": "agent-7",
        "gen_ai.conversation.id": f"conv-{n}",
        "session.id": f"session-{n % 97}",
        "user.id": f"user-{n % 13}",
        "app.version": "2.0.1",
        "gen_ai.usage.input_tokens": 4210,
        "gen_ai.usage.output_tokens": 388,
        "agent.steps": 9,
        "agent.success": True,
        "agent.cost_usd": 0.0123,
        "http.route": "/chat",
        "tags": ["weather", "prod"],
        "retry.count": 0,
    }


def _llm_attributes(n: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 512,
        "gen_ai.usage.input_tokens": 812 + n,
        "gen_ai.usage.output_tokens": 64,
        "gen_ai.response.id": f"chatcmpl-{n:012d}",
        "gen_ai.response.finish_reasons": ["stop"],
        "server.address": "api.openai.com",
        "server.port": 443,
        "gen_ai.input.messages": _MESSAGES,
        "gen_ai.output.messages": '[{"role":"assistant","parts":[{"type":"text","content":'
        '"It is sunny in Paris today, about 21 degrees Celsius."}]}]',
        "gen_ai.request.stream": False,
    }


def _tool_attributes(n: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": f"call_{n:08d}",
        "gen_ai.tool.description": "Get the current weather for a city.",
        "gen_ai.tool.call.arguments": '{"city": "Paris"}',
        "gen_ai.tool.call.result": '{"city": "Paris", "forecast": "sunny", "temperature_c": 21}',
        "tool.duration_ms": 41.5,
        "tool.cache_hit": False,
        "tool.attempt": 1,
        "http.method": "GET",
        "http.status_code": 200,
        "url.full": "https://weather.example/v1",
        "net.peer.name": "weather.example",
        "tool.tags": ["external", "weather"],
    }


def _spans(trace_index: int) -> list[dict[str, Any]]:
    """Spans of one agent run as plain dicts (ids as hex, times in ns)."""
    trace_id = _TRACE_MARKER.hex() + "00000000" + f"{trace_index:016x}"
    root = _SPAN_MARKER.hex() + "00000000" + f"{trace_index * SPANS_PER_TRACE:04x}"
    start = _START_NS + trace_index * 1_000_000
    spans = [
        {
            "trace_id": trace_id,
            "span_id": root,
            "parent": None,
            "name": "invoke_agent WeatherBot",
            "kind": 1,
            "start": start,
            "end": start + 9_000_000,
            "attributes": _agent_attributes(trace_index),
        }
    ]
    for step in range(1, SPANS_PER_TRACE):
        llm = step % 2 == 1
        spans.append(
            {
                "trace_id": trace_id,
                "span_id": f"{root[:-4]}{trace_index * SPANS_PER_TRACE + step:04x}",
                "parent": root,
                "name": "chat gpt-4o-mini" if llm else "execute_tool get_weather",
                "kind": 3 if llm else 1,
                "start": start + step * 1_000_000,
                "end": start + step * 1_000_000 + 800_000,
                "attributes": (_llm_attributes if llm else _tool_attributes)(
                    trace_index * 10 + step
                ),
            }
        )
    return spans


def _pb_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, list):
        out = AnyValue()
        out.array_value.values.extend(_pb_value(v) for v in value)
        return out
    return AnyValue(string_value=value)


def _json_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_json_value(v) for v in value]}}
    return {"stringValue": value}


def batch_protobuf(span_count: int) -> bytes:
    """An ``ExportTraceServiceRequest`` of ``span_count`` spans (a multiple of 10)."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(
        KeyValue(key=k, value=_pb_value(v)) for k, v in _RESOURCE.items()
    )
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name, scope_spans.scope.version = "bench.instrumentation", "0.9.0"
    for trace_index in range(span_count // SPANS_PER_TRACE):
        for s in _spans(trace_index):
            span = scope_spans.spans.add(
                trace_id=bytes.fromhex(s["trace_id"]),
                span_id=bytes.fromhex(s["span_id"]),
                parent_span_id=bytes.fromhex(s["parent"]) if s["parent"] else b"",
                name=s["name"],
                kind=s["kind"],
                start_time_unix_nano=s["start"],
                end_time_unix_nano=s["end"],
            )
            span.attributes.extend(
                KeyValue(key=k, value=_pb_value(v)) for k, v in s["attributes"].items()
            )
            span.status.code = 1
    return request.SerializeToString()


def batch_json(span_count: int) -> bytes:
    """The same batch as OTLP/JSON (lowerCamelCase keys, hex ids, int64 as strings)."""
    spans = [
        {
            "traceId": s["trace_id"],
            "spanId": s["span_id"],
            "parentSpanId": s["parent"] or "",
            "name": s["name"],
            "kind": s["kind"],
            "startTimeUnixNano": str(s["start"]),
            "endTimeUnixNano": str(s["end"]),
            "status": {"code": 1},
            "attributes": [{"key": k, "value": _json_value(v)} for k, v in s["attributes"].items()],
        }
        for trace_index in range(span_count // SPANS_PER_TRACE)
        for s in _spans(trace_index)
    ]
    resource = {"attributes": [{"key": k, "value": _json_value(v)} for k, v in _RESOURCE.items()]}
    scope = {"name": "bench.instrumentation", "version": "0.9.0"}
    return orjson.dumps(
        {
            "resourceSpans": [
                {"resource": resource, "scopeSpans": [{"scope": scope, "spans": spans}]}
            ]
        }
    )


def fresh_ids(template: bytes, request_number: int, *, json: bool) -> bytes:
    """The template with every trace and span id made unique to ``request_number``."""
    number = request_number.to_bytes(4, "big")
    for marker in (_TRACE_MARKER, _SPAN_MARKER):
        old, new = marker + b"\x00" * 4, marker + number
        template = (
            template.replace(old.hex().encode(), new.hex().encode())
            if json
            else template.replace(old, new)
        )
    return template
