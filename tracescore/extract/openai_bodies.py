"""OpenAI request and response bodies recorded whole, read as messages.

Several conventions record the raw Chat Completions or Responses API body instead of (or besides)
flattened messages: OpenInference's ``input.value`` / ``output.value``, MLflow's
``mlflow.spanInputs`` / ``mlflow.spanOutputs``. One reader serves them all, so a body reads the
same whichever library recorded it.
"""

from __future__ import annotations

from typing import Any

from tracescore.extract.base import json_text, load_json
from tracescore.extract.genai_messages import (
    build_message,
    parse_message,
    parse_messages,
    parse_part,
    text_message,
)
from tracescore.extract.model import Message, SpanInfo


def body_messages(
    value: Any, what: str, span_id: str, direction: str, info: SpanInfo, created_at: Any
) -> list[Message | None]:
    """Messages from a raw body attribute ``what``: an OpenAI request or response body (Chat
    Completions or Responses), a message list, or plain text. ``direction`` is ``in`` for what
    was sent (a Responses ``instructions`` goes to ``info.system``), ``out`` for the reply."""
    role = "user" if direction == "in" else "assistant"
    prefix = f"{span_id}-{direction}"
    body = load_json(value, info.warnings, what)
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        return list(parse_messages(body["messages"], prefix, info.warnings, what,
                                   created_at=created_at))
    if isinstance(body, dict) and isinstance(body.get("choices"), list):
        return [
            parse_message({**c["message"], "finish_reason": c.get("finish_reason")},
                          f"{prefix}-{i}", info.warnings, what, default_role=role,
                          created_at=created_at)
            for i, c in enumerate(body["choices"])
            if isinstance(c, dict) and isinstance(c.get("message"), dict)
        ]
    if isinstance(body, dict) and ("input" in body or "output" in body):
        return responses_messages(body, prefix, info, what, role, created_at)
    if isinstance(body, list) and all(isinstance(m, dict) and "role" in m for m in body):
        return list(parse_messages(body, prefix, info.warnings, what, created_at=created_at))
    text = json_text(body)
    return [text_message(f"{prefix}-0", role, text, created_at)] if text else []


def responses_messages(
    body: dict[str, Any], prefix: str, info: SpanInfo, what: str, role: str, created_at: Any
) -> list[Message | None]:
    """An OpenAI Responses API request (``instructions`` + ``input``) or response (``output``)."""
    if role == "user":
        if isinstance(body.get("instructions"), str):
            info.system.append(body["instructions"])
        items = body.get("input")
    else:
        items = body.get("output")
    if isinstance(items, str):
        return [text_message(f"{prefix}-0", role, items, created_at)]
    messages: list[Message | None] = []
    loose = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and "role" in item:
            messages.append(parse_message(item, f"{prefix}-{len(messages)}", info.warnings, what,
                                          default_role=role, created_at=created_at))
        elif part := parse_part(item, info.warnings, what):
            loose.append(part)
    if loose:
        messages.append(build_message(f"{prefix}-{len(messages)}", role, loose, created_at))
    return messages
