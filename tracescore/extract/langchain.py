"""LangChain's serialized values, wherever a convention finds them: the messages inside.

LangChain hands its tracers whole objects, and whatever records them (LangSmith's OTel export in
``gen_ai.prompt`` / ``gen_ai.completion``, OpenInference's ``input.value``, MLflow, a user's own
span) writes them in LangChain's envelopes rather than as a message list:

* a chat model's input ``{"messages": [[message, …]]}`` (one list per prompt of the batch);
* its output ``{"generations": [[{"text", "message": message, …}]]}``;
* a graph node's update ``{"output": [{"update": {"messages": […]}, "goto": …}]}`` (a LangGraph
  ``Command``) or ``{"output": message}``;
* a graph's state ``{"messages": […]}``.

Each message is ``dumpd``'s ``{"lc": 1, "type": "constructor", "id": [… "AIMessage"], "kwargs":
{…}}`` or ``model_dump``'s ``{"type": "ai", "content", "tool_calls", …}``; the shared message
parser (:func:`tracescore.extract.genai_messages.parse_message`) reads either. This module only
finds them, so every convention reads LangChain the same way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tracescore.extract.base import load_json
from tracescore.extract.genai_messages import parse_message
from tracescore.extract.model import Message

_MESSAGE_TYPES = frozenset({"human", "ai", "system", "tool", "function", "AIMessageChunk"})
_MAX_DEPTH = 6  # envelopes nest a few levels; a deeper value is not LangChain's


def is_langchain_message(value: Any) -> bool:
    """A serialized (``lc``) or dumped (``type: human|ai|…`` without ``role``) message."""
    if not isinstance(value, dict):
        return False
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        path = value.get("id")
        return (
            isinstance(path, list)
            and bool(path)
            and str(path[-1]).endswith(("Message", "MessageChunk"))
        )
    kind = value.get("type")
    return isinstance(kind, str) and kind in _MESSAGE_TYPES and "role" not in value


def langchain_message_values(value: Any) -> list[Any] | None:
    """The messages a LangChain envelope holds, in order, or None when ``value`` holds none
    in a LangChain shape (so a caller can try its other readers)."""
    found = _find(value, 0)
    return found if found else None


def _find(value: Any, depth: int) -> list[Any]:
    if depth > _MAX_DEPTH:
        return []
    if is_langchain_message(value):
        return [value]
    if isinstance(value, list):
        return [m for item in value for m in _find(item, depth + 1)]
    if not isinstance(value, dict) or "role" in value:
        return []  # an OpenAI-style message holds no LangChain envelope: the common case
    if isinstance(generations := value.get("generations"), list):
        return [m for item in generations for m in _generation(item, depth + 1)]
    for key in ("messages", "output", "update", "outputs", "input"):
        if key in value and (found := _find(value[key], depth + 1)):
            return found
    return []


def _generation(value: Any, depth: int) -> list[Any]:
    """A ``ChatGeneration``'s message (a batch's list of them, flattened); a plain
    ``Generation`` has only its text, read as the assistant's."""
    if isinstance(value, list):
        return [m for item in value for m in _generation(item, depth + 1)]
    if not isinstance(value, dict):
        return []
    if is_langchain_message(message := value.get("message")):
        return [message]
    text = value.get("text")
    return [{"type": "ai", "content": text}] if isinstance(text, str) and text else []


def langchain_messages(
    value: Any,
    id_prefix: str,
    warnings: list[str],
    what: str,
    *,
    created_at: datetime | None = None,
) -> list[Message] | None:
    """The messages of a LangChain value (a JSON string or decoded), parsed; None when it is
    not LangChain's."""
    found = langchain_message_values(load_json(value, warnings, what))
    if found is None:
        return None
    messages = (
        parse_message(raw, f"{id_prefix}-{i}", warnings, what, created_at=created_at)
        for i, raw in enumerate(found)
    )
    return [m for m in messages if m is not None]
