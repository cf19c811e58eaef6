"""Chat request and response bodies of the OpenAI and Anthropic APIs, read into the run model.

Libraries without a convention of their own still record what went over the wire: a request
``{model, messages, tools, system?}`` and a chat completion (``choices``) or an Anthropic message
(``{type: message, role: assistant, content: [blocks]}``). Declared conventions point at such
values and the generic fallback finds them; both read them here, with the shared message parser.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tracescore.extract.base import as_str, json_text, usage_from
from tracescore.extract.genai_messages import (
    parse_message,
    parse_messages,
    parse_system_instructions,
    parse_tool_definitions,
    split_system,
    text_message,
)
from tracescore.extract.model import Message, SpanInfo, TokenUsage


def is_request(body: Any) -> bool:
    """A chat request: an object whose ``messages`` is a list of ``{role, …}`` objects."""
    messages = body.get("messages") if isinstance(body, dict) else None
    return bool(messages) and isinstance(messages, list) and all(
        isinstance(m, dict) and "role" in m for m in messages
    )


def is_response(body: Any) -> bool:
    """A chat completion (``choices`` holding messages) or an Anthropic message response."""
    if not isinstance(body, dict):
        return False
    choices = body.get("choices")
    if isinstance(choices, list) and choices:
        return all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices)
    return body.get("type") == "message" and body.get("role") == "assistant" and isinstance(
        body.get("content"), list
    )


def read_request(
    body: Any, info: SpanInfo, prefix: str, what: str, created_at: datetime | None
) -> None:
    """System prompt, conversation and offered tools of a request body into ``info``.

    A message array or a single message is read as the conversation, anything else as the
    user's text."""
    warnings = info.warnings
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        if body.get("system") is not None:  # Anthropic keeps the system prompt beside messages
            info.system.extend(parse_system_instructions(body["system"], warnings, what))
        if body.get("tools"):
            info.tools = parse_tool_definitions(body["tools"], warnings, f"{what} tools")
        info.model = info.model or as_str(body.get("model"))
        body = body["messages"]
    if isinstance(body, dict) and "role" in body:
        body = [body]
    if isinstance(body, list):
        messages = parse_messages(body, prefix, warnings, what, created_at=created_at)
    else:
        text = json_text(body) if body is not None else ""
        messages = [text_message(f"{prefix}-0", "user", text, created_at)] if text else []
    system, info.input_messages = split_system(messages)
    info.system.extend(system)


def response_messages(
    body: Any, info: SpanInfo, prefix: str, what: str, created_at: datetime | None
) -> list[Message]:
    """The assistant messages of a response body, a message (list) or text; the response's
    model and usage go into ``info`` when it has them."""
    warnings = info.warnings
    if isinstance(body, dict) and is_response(body):
        info.model = info.model or as_str(body.get("model"))
        info.usage = info.usage or response_usage(body.get("usage"))
        if isinstance(body.get("choices"), list):
            found = [
                parse_message({**c["message"], "finish_reason": c.get("finish_reason")},
                              f"{prefix}-{i}", warnings, what, default_role="assistant",
                              created_at=created_at)
                for i, c in enumerate(body["choices"])
            ]
            return [m for m in found if m is not None]
        body = {"role": "assistant", "content": body["content"],
                "finish_reason": body.get("stop_reason")}
    if isinstance(body, dict) and ("role" in body or "content" in body):
        body = [body]
    if isinstance(body, list):
        return parse_messages(body, prefix, warnings, what, default_role="assistant",
                              created_at=created_at)
    text = json_text(body) if body is not None else ""
    return [text_message(f"{prefix}-0", "assistant", text, created_at)] if text else []


def response_usage(usage: Any) -> TokenUsage | None:
    """Token usage of an OpenAI (``prompt_tokens``…) or Anthropic (``input_tokens``…) response."""
    if not isinstance(usage, dict):
        return None
    return usage_from(
        usage,
        input_tokens=("prompt_tokens", "input_tokens"),
        output_tokens=("completion_tokens", "output_tokens"),
        total_tokens=("total_tokens",),
    )
