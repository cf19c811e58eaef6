"""OTLP/JSON agent traces carrying hostile text, and what a browser would show of a page."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import orjson

HOSTILE_SYSTEM = 'You are <script>window.__pwned = "system"</script> <b>WeatherBot</b>.'
HOSTILE_USER = "<img src=x onerror=\"window.__pwned = 'user'\">Weather in Paris?"
HOSTILE_RESULT = '{"forecast": "</pre><script>window.__pwned = \'tool\'</script>sunny"}'
HOSTILE_ANSWER = 'It is sunny in Paris. <iframe src="https://example.com/"></iframe>'
HOSTILE_AGENT = "<svg onload=alert(1)>Bot"


def json_attr(key: str, value: Any) -> dict[str, Any]:
    return {
        "key": key,
        "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)},
    }


def json_span(
    trace_id: str,
    span_id: str,
    parent: str | None,
    name: str,
    start: int,
    attrs: dict[str, Any],
    end: int | None = None,
) -> dict:
    """An OTLP/JSON span that lasts ``end - start`` (a millisecond unless ``end`` is given)."""
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent or "",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1_000_000 if end is None else end),
        "attributes": [json_attr(k, v) for k, v in attrs.items()],
        "status": {},
    }


AGENT_SECONDS = 3_600
"""How long a wide trace's agent lasts: longer than its parts take to send, so every step,
sent in parts seconds apart, falls within it, as a real agent's do."""


def wide_trace_json(trace_id: str, spans: int, first: int, text: int = 0) -> bytes:
    """Part of one huge agent trace: an agent root (in the first part) and ``spans`` chat
    and tool children numbered from ``first``, each child's answer or result ``text``
    characters longer (a long prompt's worth of text per span)."""
    filler = " lorem ipsum" * (text // 12) + "." * (text % 12)
    start = time.time_ns()
    root = f"{trace_id[:12]}0000"
    found = []
    if first == 0:
        found.append(
            json_span(
                trace_id,
                root,
                None,
                "invoke_agent",
                start,
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "Wide",
                    "gen_ai.input.messages": [
                        {"role": "user", "parts": [{"type": "text", "content": "go"}]}
                    ],
                },
                end=start + AGENT_SECONDS * 1_000_000_000,  # it lasts as long as its steps
            )
        )
    for n in range(first + 1, first + spans + 1):
        tool = n % 2 == 0
        attrs = (
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.result": f"sunny {n}{filler}",
            }
            if tool
            else {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.output.messages": [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": f"step {n}{filler}"}],
                    }
                ],
            }
        )
        found.append(json_span(trace_id, f"{trace_id[:4]}{n:012x}", root, "step", start + n, attrs))
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "wide"}}]}
    return orjson.dumps(
        {
            "resourceSpans": [
                {"resource": resource, "scopeSpans": [{"scope": {"name": "bench"}, "spans": found}]}
            ]
        }
    )


def agent_trace_json(
    trace_id: str,
    *,
    system: str = HOSTILE_SYSTEM,
    user: str = HOSTILE_USER,
    tool_result: str = HOSTILE_RESULT,
    answer: str = HOSTILE_ANSWER,
    agent: str = HOSTILE_AGENT,
) -> bytes:
    """An OTLP/JSON export of a GenAI-semconv agent turn (agent → chat → tool → chat).

    Defaults put HTML and script everywhere a trace can carry text; the browser tests reuse it
    to send new traces to a running server.
    """
    start = int(datetime.now(UTC).timestamp() * 1e9)
    user_message = {"role": "user", "parts": [{"type": "text", "content": user}]}
    call = {
        "type": "tool_call",
        "id": "call_1",
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }
    final = {"role": "assistant", "parts": [{"type": "text", "content": answer}]}
    agent_id, chat1, tool, chat2 = (f"{trace_id[:12]}{n:04x}" for n in range(1, 5))
    model = {"gen_ai.request.model": "gpt-4o-mini"}
    spans = [
        json_span(
            trace_id,
            agent_id,
            None,
            "invoke_agent",
            start,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                **model,
                "gen_ai.system_instructions": [{"type": "text", "content": system}],
                "gen_ai.input.messages": [user_message],
                "gen_ai.output.messages": [final],
            },
        ),
        json_span(
            trace_id,
            chat1,
            agent_id,
            "chat",
            start + 10,
            {
                "gen_ai.operation.name": "chat",
                **model,
                "gen_ai.input.messages": [user_message],
                "gen_ai.output.messages": [{"role": "assistant", "parts": [call]}],
            },
        ),
        json_span(
            trace_id,
            tool,
            agent_id,
            "execute_tool get_weather",
            start + 20,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                "gen_ai.tool.call.result": tool_result,
            },
        ),
        json_span(
            trace_id,
            chat2,
            agent_id,
            "chat",
            start + 30,
            {"gen_ai.operation.name": "chat", **model, "gen_ai.output.messages": [final]},
        ),
    ]
    resource = {"attributes": [json_attr("service.name", "web-tests")]}
    return orjson.dumps(
        {
            "resourceSpans": [
                {
                    "resource": resource,
                    "scopeSpans": [{"scope": {"name": "web-tests"}, "spans": spans}],
                }
            ]
        }
    )


class _Text(HTMLParser):
    """The text a browser would show (entities decoded), ignoring markup."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)


def visible_text(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    return "".join(parser.chunks)
