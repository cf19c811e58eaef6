"""Chat request and response bodies recorded whole, read into the run model.

Several conventions record the raw body of a model call instead of (or besides) flattened
messages: OpenInference's ``input.value`` / ``output.value``, MLflow's ``mlflow.spanInputs`` /
``mlflow.spanOutputs``; declared conventions point at such values and the generic fallback finds
them in libraries without a convention of their own. One reader serves them all, so a body reads
the same whichever library recorded it: OpenAI Chat Completions (a request ``{model, messages,
tools}``, a response with ``choices``), the OpenAI Responses API (``instructions`` + ``input``,
``output``) and Anthropic Messages (``system`` beside ``messages``; a response
``{type: message, role: assistant, content: [blocks]}``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tracescore.extract.base import as_str, json_text, load_json, usage_from
from tracescore.extract.genai_messages import (
    is_message,
    parse_message,
    parse_messages,
    parse_part,
    parse_system_instructions,
    parse_tool_definitions,
)
from tracescore.extract.langchain import langchain_message_values
from tracescore.extract.messages import build_message, split_system, text_message
from tracescore.extract.model import Message, SpanInfo, TokenUsage
from tracescore.extract.object_reprs import pydantic_fields


def body_messages(
    value: Any,
    what: str,
    span_id: str,
    direction: str,
    info: SpanInfo,
    created_at: datetime | None,
) -> list[Message | None]:
    """Messages from a raw body attribute ``what``: an OpenAI request or response body (Chat
    Completions or Responses), LangChain's envelopes (:mod:`tracescore.extract.langchain`), a
    message list, or plain text. ``direction`` is ``in`` for what
    was sent (a Responses ``instructions`` goes to ``info.system``), ``out`` for the reply."""
    role = "user" if direction == "in" else "assistant"
    prefix = f"{span_id}-{direction}"
    body = load_json(value, info.warnings, what)
    if (found := langchain_message_values(body)) is not None:  # LangChain's envelopes
        return list(parse_messages(found, prefix, info.warnings, what, created_at=created_at))
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        sent = [typed_message(m) if isinstance(m, str) else m for m in body["messages"]]
        return list(parse_messages(sent, prefix, info.warnings, what, created_at=created_at))
    if isinstance(body, dict) and isinstance(body.get("choices"), list):
        return choice_messages(body["choices"], prefix, info.warnings, what, role, created_at)
    if isinstance(body, dict) and ("input" in body or "output" in body):
        return responses_messages(body, prefix, info, what, role, created_at)
    if isinstance(body, list) and all(isinstance(m, dict) and "role" in m for m in body):
        return list(parse_messages(body, prefix, info.warnings, what, created_at=created_at))
    text = json_text(body)
    return [text_message(f"{prefix}-0", role, text, created_at)] if text else []


def typed_message(text: str) -> dict[str, Any] | str:
    """A message recorded as its typed model's ``str()`` (``content='Hi' role='user'``: Mistral's
    ``UserMessage`` … under OpenInference's Mistral instrumentation) as the message it is;
    other text as is."""
    fields = pydantic_fields(text)
    if fields is None or not isinstance(fields.get("role"), str):
        return text
    calls = fields.get("tool_calls")
    if isinstance(calls, list):
        fields["tool_calls"] = [
            {
                "id": call.get("id") or "",
                "type": "function",
                "function": {k: v for k, v in function.items() if k != "__class__"},
            }
            for call in calls
            if isinstance(call, dict) and isinstance(function := call.get("function"), dict)
        ]
    return fields


def responses_messages(
    body: dict[str, Any],
    prefix: str,
    info: SpanInfo,
    what: str,
    role: str,
    created_at: datetime | None,
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
            messages.append(
                parse_message(
                    item,
                    f"{prefix}-{len(messages)}",
                    info.warnings,
                    what,
                    default_role=role,
                    created_at=created_at,
                )
            )
        elif part := parse_part(item, info.warnings, what):
            loose.append(part)
    if loose:
        messages.append(build_message(f"{prefix}-{len(messages)}", role, loose, created_at))
    return messages


def choice_messages(
    choices: list[Any],
    prefix: str,
    warnings: list[str],
    what: str,
    role: str,
    created_at: datetime | None,
) -> list[Message | None]:
    """The messages of a chat completion's ``choices``, each with its finish reason."""
    return [
        parse_message(
            {**c["message"], "finish_reason": c.get("finish_reason")},
            f"{prefix}-{i}",
            warnings,
            what,
            default_role=role,
            created_at=created_at,
        )
        for i, c in enumerate(choices)
        if isinstance(c, dict) and isinstance(c.get("message"), dict)
    ]


def is_request(body: Any) -> bool:
    """A chat request: an object whose ``messages`` is a list of ``{role, …}`` objects, or
    LangChain's ``{"messages": [[message, …]]}``."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not messages or not isinstance(messages, list):
        return False
    if all(isinstance(m, dict) and "role" in m for m in messages):
        return True
    return isinstance(messages[0], list) and langchain_message_values(messages) is not None


def is_response(body: Any) -> bool:
    """A chat completion (``choices`` holding messages), an Anthropic message response or
    LangChain's ``{"generations": [[…]]}``."""
    if not isinstance(body, dict):
        return False
    if isinstance(body.get("generations"), list):  # LangChain's LLMResult
        return langchain_message_values(body) is not None
    choices = body.get("choices")
    if isinstance(choices, list) and choices:
        return all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices)
    return (
        body.get("type") == "message"
        and body.get("role") == "assistant"
        and isinstance(body.get("content"), list)
    )


def read_request(
    body: Any, info: SpanInfo, prefix: str, what: str, created_at: datetime | None
) -> None:
    """System prompt, conversation and offered tools of a request body into ``info``.

    A message array or a single message (LangChain's envelopes too) is read as the
    conversation, anything else as the user's text."""
    warnings = info.warnings
    body = langchain_message_values(body) or body
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        if body.get("system") is not None:  # Anthropic keeps the system prompt beside messages
            info.system.extend(parse_system_instructions(body["system"], warnings, what))
        if body.get("tools"):
            info.tools = parse_tool_definitions(body["tools"], warnings, f"{what} tools")
        info.model = info.model or as_str(body.get("model"))
        body = body["messages"]
    if is_message(body):  # one message, of any dialect, as the output side reads it
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
    body = langchain_message_values(body) or body
    if isinstance(body, dict) and is_response(body):
        info.model = info.model or as_str(body.get("model"))
        info.usage = info.usage or response_usage(body.get("usage"))
        if isinstance(body.get("choices"), list):
            found = choice_messages(
                body["choices"], prefix, warnings, what, "assistant", created_at
            )
            return [m for m in found if m is not None]
        body = {
            "role": "assistant",
            "content": body["content"],
            "finish_reason": body.get("stop_reason"),
        }
    if is_message(body):  # one message, of any dialect, as the input side reads it
        body = [body]
    if isinstance(body, list):
        return parse_messages(
            body, prefix, warnings, what, default_role="assistant", created_at=created_at
        )
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
