"""Legacy OTel GenAI content events (semconv ≤ 1.36, SPAN_FORMATS §2a).

One log record per message: ``gen_ai.{system,developer,user,assistant,tool}.message`` with the
message as a structured body, and ``gen_ai.choice`` with ``{index, finish_reason, message}``
for each completion choice. The span itself carries no content, so these records ARE the
prompt and the answer. Some SDKs without a logger provider send the same events as span events
with the body fields as attributes; both forms are read. Older still (semconv 1.26–1.27), the
whole prompt and completion were span events ``gen_ai.content.prompt`` / ``.completion`` with a
JSON ``gen_ai.prompt`` / ``gen_ai.completion`` attribute; those are read too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tracescore.extract.base import as_str, load_json, timestamp
from tracescore.extract.genai_messages import parse_message, parse_messages
from tracescore.extract.messages import split_system
from tracescore.extract.model import Message, SpanInfo
from tracescore.spans import LogRecord, Span

_MESSAGE_EVENTS = {
    f"gen_ai.{role}.message": role for role in ("system", "developer", "user", "assistant", "tool")
}
CHOICE_EVENT = "gen_ai.choice"
_CONTENT_EVENTS = {
    "gen_ai.content.prompt": "gen_ai.prompt",
    "gen_ai.content.completion": "gen_ai.completion",
}


def event_name(record: LogRecord) -> str:
    """The event name: OTLP's ``eventName`` field, or the older ``event.name`` attribute."""
    return record.event_name or as_str(record.attributes.get("event.name")) or ""


def _events(logs: list[LogRecord], span: Span) -> Iterator[tuple[str, int, Any]]:
    """(event name, time, payload) of every content event, log records first, in time order."""
    found: list[tuple[str, int, Any]] = []
    for record in logs:
        name = event_name(record)
        if name in _MESSAGE_EVENTS or name == CHOICE_EVENT:
            payload = _body(record)
            found.append((name, record.time_ns, payload))
    if not found:
        for event in span.events:
            if event.name in _MESSAGE_EVENTS or event.name == CHOICE_EVENT:
                found.append((event.name, event.time_ns, _strip(event.attributes)))
    found.sort(key=lambda item: item[1])  # stable: equal timestamps keep emission order
    yield from found


def _body(record: LogRecord) -> dict[str, Any]:
    """The event's fields: its structured body, or (Semantic Kernel) its body as a JSON string,
    or else its attributes."""
    body = record.body
    if isinstance(body, (str, bytes)):
        body = load_json(body, [], "log body")  # a text body that is not JSON is no payload
    return body if isinstance(body, dict) else _strip(record.attributes)


def _strip(attributes: dict[str, Any]) -> dict[str, Any]:
    """The event's fields as a body. As attributes, structured fields can only travel as JSON
    strings (Strands sends ``content`` as a JSON list of blocks), so those are decoded."""
    payload = {k: v for k, v in attributes.items() if k not in ("gen_ai.system", "event.name")}
    for key in ("content", "message", "tool_calls"):
        value = payload.get(key)
        if isinstance(value, str) and value[:1] in ("[", "{"):
            payload[key] = load_json(value, [], key)  # text that merely looks like JSON stays
    return payload


def fill_from_events(info: SpanInfo, logs: list[LogRecord], span: Span) -> None:
    """Fill ``info``'s system prompt, input and output from the span's legacy content events."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    for name, time_ns, payload in _events(logs, span):
        if name == CHOICE_EVENT:
            message = payload.get("message")
            if isinstance(message, dict):
                raw = {"role": "assistant", **message}
            elif isinstance(message, (list, str)):  # Strands: the content blocks themselves
                raw = {"role": "assistant", "content": message}
            else:
                raw = {"role": "assistant", **payload}
            if payload.get("finish_reason"):
                raw["finish_reason"] = payload["finish_reason"]
            message = parse_message(
                raw,
                f"{info.span_id}-out-{len(outputs)}",
                info.warnings,
                name,
                default_role="assistant",
                created_at=timestamp(time_ns),
            )
            if message is not None:
                outputs.append(message)
            continue
        raw = {"role": _MESSAGE_EVENTS[name], **payload}
        message = parse_message(
            raw,
            f"{info.span_id}-in-{len(inputs)}",
            info.warnings,
            name,
            created_at=timestamp(time_ns),
        )
        if message is not None:
            inputs.append(message)
    if not inputs and not outputs:
        inputs, outputs = _content_events(info, span)
    system, conversation = split_system(inputs)
    info.system.extend(system)
    info.input_messages = info.input_messages or conversation
    info.output_messages = info.output_messages or outputs


def _content_events(info: SpanInfo, span: Span) -> tuple[list[Message], list[Message]]:
    """Prompt and completion from semconv 1.26 ``gen_ai.content.*`` span events."""
    found: dict[str, list[Message]] = {"gen_ai.prompt": [], "gen_ai.completion": []}
    for event in span.events:
        key = _CONTENT_EVENTS.get(event.name)
        if key is not None and key in event.attributes:
            direction = "in" if key == "gen_ai.prompt" else "out"
            found[key] += parse_messages(
                event.attributes[key],
                f"{info.span_id}-{direction}",
                info.warnings,
                key,
                default_role="user" if direction == "in" else "assistant",
                created_at=timestamp(event.time_ns),
            )
    return found["gen_ai.prompt"], found["gen_ai.completion"]
