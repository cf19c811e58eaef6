"""Message content a trace holds in attributes or log events that no run took: what tells
"content capture is off" (nothing to read anywhere) from "content in a shape no reader knows"
(declare it).

LangSmith's OTel export, for one, writes a LangChain agent's whole conversation into
``gen_ai.prompt`` / ``gen_ai.completion`` as LangChain-serialized JSON; a reader that does not
know that shape gives runs without content, and advice to switch content capture on would send
the user looking for a switch that is already on. Attribute keys and value shapes only decide:
a key naming content (``prompt``, ``messages``, ``input``, ``result`` …, not an id, a type, a
model or a count) whose value is text (with a space) or a JSON document with something in it;
and log events (records with an event name) whose body holds text under such a key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tracescore.spans import LogRecord, Span

_CONTENT_WORDS = frozenset(
    {
        "prompt",
        "prompts",
        "completion",
        "completions",
        "message",
        "messages",
        "input",
        "inputs",
        "output",
        "outputs",
        "content",
        "contents",
        "instruction",
        "instructions",
        "response",
        "result",
        "arguments",
        "args",
        "argument",
        "answer",
        "question",
    }
)
_NOT_CONTENT = frozenset(
    {
        "id",
        "type",
        "mime_type",
        "model",
        "name",
        "role",
        "status",
        "finish_reason",
        "finish_reasons",
        "count",
        "size",
        "length",
    }
)
_GENERAL_NAMESPACES = (
    "exception.",
    "error.",
    "http.",
    "url.",
    "db.",
    "rpc.",
    "messaging.",
    "server.",
    "network.",
    "code.",
)
"""OpenTelemetry's general namespaces: an exception's message or a request's URL is no one's
conversation."""
_EMPTY = frozenset({"{}", "[]", '""', "null", "none", "None"})


def content_keys(spans: Iterable[Span]) -> list[str]:
    """The attribute keys (of the spans and their events) holding message content, sorted."""
    found: set[str] = set()
    for span in spans:
        found.update(_keys_with_content(span.attributes))
        for event in span.events:
            found.update(_keys_with_content(event.attributes))
    return sorted(found)


def event_content(logs: Iterable[LogRecord]) -> list[str]:
    """The events (log records with an event name; plain log lines are the application's)
    whose body or attributes hold message content, as ``log event <name>``, sorted."""
    found: set[str] = set()
    for record in logs:
        name = record.event_name or record.attributes.get("event.name")
        if not isinstance(name, str) or not name:
            continue
        body = record.body
        if _holds_text(body) or _is_text(body) or any(_keys_with_content(record.attributes)):
            found.add(f"log event {name}")
    return sorted(found)


def _keys_with_content(attributes: Mapping[str, Any]) -> Iterable[str]:
    return (key for key, value in attributes.items() if _names_content(key) and _is_text(value))


def _holds_text(value: Any, under_content: bool = False) -> bool:
    """Text under a content key anywhere in a structured value (``{"message": {"role":
    "assistant"}}``, what an event sends with capture off, holds none)."""
    if isinstance(value, Mapping):
        return any(
            _holds_text(
                item,
                _names_content(key)
                or (under_content and key.rsplit(".", 1)[-1] not in _NOT_CONTENT),
            )
            for key, item in value.items()
            if isinstance(key, str)
        )
    if isinstance(value, (list, tuple)):
        return any(_holds_text(item, under_content) for item in value)
    return under_content and _is_text(value)


def _names_content(key: str) -> bool:
    if key.startswith(_GENERAL_NAMESPACES):
        return False
    segments = [s for s in key.split(".") if not s.isdigit()]
    if not segments or segments[-1] in _NOT_CONTENT:
        return False
    return any(word in _CONTENT_WORDS for s in segments for word in s.split("_"))


def _is_text(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_is_text(item) for item in value)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return False
    text = value.strip()
    if len(text) < 3 or text in _EMPTY:
        return False
    return text[0] in '{["' or any(c.isspace() for c in text)
