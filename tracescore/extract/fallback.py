"""The generic fallback: model calls of a library no convention knows, from the chat JSON it kept.

Asked last, for spans no convention claimed. Many instrumentations, whatever their attribute
names, record the request they sent (``{model, messages, …}``) or the response they got (a chat
completion with ``choices``, an Anthropic message with ``content`` blocks) as JSON strings. Such
a span is read as an LLM call, with a warning saying so: an unknown library then gives at least
its model calls (raw client traces are scored on their outermost LLM call), and the warning
points at the ``conventions:`` section that reads it fully.

``detect`` runs for every unclaimed span of every trace, so it only looks at the first
character of string attributes and for a ``"role"`` key in the few that open a JSON document;
values beyond :data:`MAX_FALLBACK_CHARS` are not looked at.
"""

from __future__ import annotations

from typing import Any

from tracescore.extract.base import load_json, new_info, timestamp
from tracescore.extract.chat_bodies import is_request, is_response, read_request, response_messages
from tracescore.extract.model import SpanInfo
from tracescore.spans import LogRecord, Span

NAME = "fallback"

MAX_FALLBACK_CHARS = 256 * 1024
"""Longest attribute value the fallback looks into (a longer one is not read as chat JSON)."""

_MARKS = ('"role"', '"lc"', '"generations"')
"""One of these in a value: a message's role, a LangChain-serialized message, an LLMResult."""


def _candidates(span: Span) -> list[tuple[str, str]]:
    """The span's string attributes that may hold chat JSON: an object carrying a role (or
    LangChain's serialized messages)."""
    return [
        (key, value)
        for key, value in span.attributes.items()
        if isinstance(value, str)
        and value.startswith("{")
        and len(value) <= MAX_FALLBACK_CHARS
        and any(mark in value for mark in _MARKS)
    ]


def detect(span: Span) -> bool:
    return bool(_candidates(span))


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    """An LLM call when an attribute holds a chat request or response; else the span is left
    as one no convention knows (``unknown``)."""
    request: tuple[str, Any] | None = None
    response: tuple[str, Any] | None = None
    for key, value in _candidates(span):
        body = load_json(value, [], key)
        if request is None and is_request(body):
            request = key, body
        elif response is None and is_response(body):
            response = key, body
    if request is None and response is None:
        return new_info(span, "unknown")
    info = new_info(span, NAME)
    info.kind = "llm"
    if request is not None:
        read_request(
            request[1], info, f"{span.span_id}-in", request[0], timestamp(span.start_time_ns)
        )
    if response is not None:
        info.output_messages = response_messages(
            response[1], info, f"{span.span_id}-out", response[0], timestamp(span.end_time_ns)
        )
    read_from = " and ".join(found[0] for found in (request, response) if found is not None)
    info.warnings.append(
        f"read by the generic fallback: no convention claims this span (scope "
        f"{span.scope.name!r}); the chat JSON in {read_from} was read as an LLM call. "
        "A conventions: entry in the configuration can read this library's agents and tools too"
    )
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """A span read as a model call that has model calls below it is the code around them (an
    agent function whose argument was the conversation, a retry wrapper): not a call itself.

    Left as an LLM call it would stand for the trace (the outermost call is primary) with the
    conversation it was handed and no answer of its own, its calls below not scored.
    """
    infos = {info.span_id: info for _, info in read}
    for span, info in read:
        if info.kind != "llm":
            continue
        parent = infos.get(span.parent_span_id or "")
        seen = {info.span_id}
        while parent is not None and parent.span_id not in seen:
            seen.add(parent.span_id)
            if parent.kind == "llm" and parent.convention == NAME:
                parent.kind = "other"
            parent = infos.get(parent.parent_span_id or "")
