"""Mastra's recorded values read into the run model, for both of its tracing formats.

Raw inputs (a string, a message list, ``{messages}``) become messages; ``{text, toolCalls,
reasoning}`` outputs one assistant message; the placeholders Mastra writes for values it could not
serialize are skipped with a warning. :mod:`tracescore.extract.mastra` (1.x AI tracing) and
:mod:`tracescore.extract.mastra_legacy` (0.x telemetry) both read with these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.extract.base import first, load_json, timestamp
from tracescore.extract.genai_messages import (
    decode_arguments,
    parse_messages,
    parse_system_instructions,
)
from tracescore.extract.messages import (
    build_message,
    reasoning_part,
    text_message,
    text_part,
    tool_call_part,
)
from tracescore.extract.model import Message, MessagePart, SpanInfo
from tracescore.spans import Span

NAME = "mastra"

# Placeholders Mastra writes instead of a value it could not serialize.
UNSERIALIZABLE = frozenset({"[Not Serializable]", "[Function]", "[Circular]"})
# Mastra elides tool messages in ``mastra.model_step.input`` to these markers.
_ELIDED_PREFIXES = ("[tool: ", "[tool-result: ", "[tool-call: ")


def instructions(value: Any, warnings: list[str]) -> list[str]:
    """Mastra sends instructions as a plain string; only a JSON part list is parsed."""
    if isinstance(value, str) and not value.lstrip().startswith(("[{", '["')):
        return [value] if value.strip() else []
    return parse_system_instructions(value, warnings, "gen_ai.system_instructions")


def messages(span: Span, key: str, default_role: str, warnings: list[str]) -> list[Message]:
    """A raw input (a string, a message list, or ``{messages}``) as messages.

    Tool messages Mastra elided to ``"[tool: name]"`` are dropped, with a warning: the marker is
    neither the tool's real result nor text the model wrote (the tool spans hold the calls).
    """
    value = span.attributes.get(key)
    if value is None:
        return []
    if unserializable(value, key, warnings):
        return []
    value = load_json(value, warnings, key)
    if isinstance(value, Mapping) and "messages" in value:
        value = value["messages"]
    items = value if isinstance(value, list) else [value]
    elided = 0
    normalised: list[Any] = []
    for item in items:
        if isinstance(item, Mapping):
            content = item.get("content")
            if isinstance(content, Mapping) and "parts" in content:  # MastraDBMessage
                item = {"role": item.get("role"), "parts": content["parts"]}
            elif isinstance(content, str) and content.startswith(_ELIDED_PREFIXES):
                elided += 1
                continue
        normalised.append(item)
    if elided:
        warnings.append(f"{key}: {elided} tool message(s) elided by Mastra; dropped")
    return parse_messages(
        normalised,
        f"{span.span_id}-in",
        warnings,
        key,
        default_role=default_role,
        created_at=timestamp(span.start_time_ns),
    )


def answer(span: Span, key: str, warnings: list[str]) -> list[Message]:
    """``{text, …}`` outputs (agent run, chunk) as one assistant message, when they hold text."""
    value = span.attributes.get(key)
    if value is None or unserializable(value, key, warnings):
        return []
    decoded = load_json(value, warnings, key)
    if isinstance(decoded, Mapping):
        text = decoded.get("text")
    elif decoded is value and isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        return []  # JSON cut short (load_json warned): its text is not the answer
    else:
        text = decoded
    if not isinstance(text, str) or not text:
        return []
    return [text_message(f"{span.span_id}-out-0", "assistant", text, timestamp(span.end_time_ns))]


def step_output(span: Span, key: str, warnings: list[str]) -> list[Message]:
    """``{text, toolCalls, reasoning}`` of a generation or step: reasoning, calls, then text."""
    value = span.attributes.get(key)
    if value is None or unserializable(value, key, warnings):
        return []
    value = load_json(value, warnings, key)
    if not isinstance(value, Mapping):
        return answer(span, key, warnings)
    return output_message(span, value, warnings, key)


def output_message(
    span: Span, value: Mapping[str, Any], warnings: list[str], key: str
) -> list[Message]:
    """An output object ``{text, toolCalls, reasoning}`` as one assistant message, when any."""
    reasoning = value.get("reasoning")
    if isinstance(reasoning, str):  # 0.x steps: the text itself (also ``reasoningText``)
        reasoning = [reasoning]
    parts: list[MessagePart] = [
        reasoning_part(text) for text in reasoning_texts(reasoning or [value.get("reasoningText")])
    ]
    parts.extend(tool_call_parts(value.get("toolCalls"), warnings, key))
    if isinstance(value.get("text"), str) and value["text"]:
        parts.append(text_part(value["text"]))
    if not parts:
        return []
    return [build_message(f"{span.span_id}-out-0", "assistant", parts, timestamp(span.end_time_ns))]


def reasoning_texts(value: Any) -> list[str]:
    """Reasoning chunks ``[{type: "reasoning", payload: {text}}]`` (or plain texts) as texts."""
    texts: list[str] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, Mapping):
            payload = given if isinstance(given := item.get("payload"), Mapping) else item
            item = payload.get("text")
        if isinstance(item, str) and item:
            texts.append(item)
    return texts


def tool_call_parts(value: Any, warnings: list[str], what: str) -> list[MessagePart]:
    """Tool calls as ``{toolCallId, toolName, args|input}`` (also nested in a chunk ``payload``)."""
    parts: list[MessagePart] = []
    for call in value if isinstance(value, list) else []:
        if not isinstance(call, Mapping):
            continue
        if isinstance(call.get("payload"), Mapping):
            call = call["payload"]
        parts.append(
            tool_call_part(
                str(first(call, "toolCallId", "id") or ""),
                str(first(call, "toolName", "name") or ""),
                decode_arguments(first(call, "args", "input"), warnings, what),
            )
        )
    return parts


def unserializable(value: Any, key: str, warnings: list[str]) -> bool:
    if isinstance(value, str) and value in UNSERIALIZABLE:
        warnings.append(f"{key}: Mastra recorded {value!r}; skipped")
        return True
    return False


def provider(value: str | None) -> str | None:
    """``openai.chat`` / ``openai.responses`` → ``openai``."""
    return value.split(".", 1)[0] if value else None


def descendants(info: SpanInfo, children: dict[str, list[SpanInfo]]) -> list[SpanInfo]:
    found: list[SpanInfo] = []
    stack = list(children.get(info.span_id, []))
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(children.get(node.span_id, []))
    return found
