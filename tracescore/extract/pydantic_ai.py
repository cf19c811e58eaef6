"""Pydantic AI instrumentation (data formats 5 and 6), alone or through Logfire
(SPAN_FORMATS §7).

Pydantic AI writes GenAI attributes, so the GenAI module reads most of a span; this module adds
what Pydantic AI does its own way:

* the agent span (``invoke_agent {name}``, formerly ``agent run``) holds the whole conversation
  in ``pydantic_ai.all_messages``, the answer in ``final_result``, and its usage under
  ``gen_ai.aggregated_usage.*`` (a namespace of its own, so nothing counts it twice);
* tool spans were ``running tool`` with ``tool_arguments`` / ``tool_response`` before they
  became ``execute_tool`` with ``gen_ai.tool.call.*``;
* the message drift (``thinking`` parts, ``result`` instead of ``response``, tool results sent
  with role ``user`` in format 5) is handled by the shared GenAI message parser.

Logfire adds ``logfire.*`` attributes and, while a span is open, a *pending span*
(``logfire.span_type = "pending_span"``): a placeholder copy of a span that is still running.
Pending spans are read as ``other`` so a run is never counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.extract import genai
from tracescore.extract.base import (
    first,
    first_str,
    json_text,
    new_info,
    timestamp,
    usage_from,
)
from tracescore.extract.genai_messages import parse_messages
from tracescore.extract.messages import split_system, text_message
from tracescore.extract.model import SpanInfo, SpanKindName, TokenUsage
from tracescore.spans import LogRecord, Span

NAME = "pydantic-ai"

SCOPE = "pydantic-ai"
PENDING_SPAN = "pending_span"
_TOOL_KEYS = {  # GenAI key ← pre-GenAI key (format 1 ``running tool`` spans)
    "gen_ai.tool.call.arguments": "tool_arguments",
    "gen_ai.tool.call.result": "tool_response",
}


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE or "pydantic_ai.all_messages" in span.attributes


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    attributes = span.attributes
    if attributes.get("logfire.span_type") == PENDING_SPAN:
        return new_info(span, NAME)
    kind = _kind(span)
    if kind == "tool":
        attributes = {
            **attributes,
            **{
                new: attributes[old]
                for new, old in _TOOL_KEYS.items()
                if new not in attributes and old in attributes
            },
        }
    info = new_info(span, NAME)
    genai.fill_from_attributes(info, attributes)
    info.kind = kind
    if kind == "tool":
        info.tool_call = genai.tool_call_from(info, attributes)
        if not info.tool_call.tool_name:
            info.tool_call.tool_name = span.name.removeprefix("running tool").strip(": ")
    elif kind == "agent":
        _read_agent(span, info)
    if info.usage is not None:
        info.usage = _with_cache(info.usage, attributes, "gen_ai.usage")
    return info


def _kind(span: Span) -> SpanKindName:
    """The span kind by operation, or by the span names of versions that sent no operation."""
    operation = first_str(span.attributes, "gen_ai.operation.name")
    name = span.name
    if operation == "invoke_agent" or name == "agent run":
        return "agent"
    if operation == "execute_tool" or name == "running tool" or name.startswith("running tool:"):
        return "tool"
    if operation == "chat" or (operation is None and name.startswith("chat ")):
        return "llm"
    return "other"  # ``running N tools`` groups tool spans; Logfire's own spans stay neutral


def _read_agent(span: Span, info: SpanInfo) -> None:
    """The conversation the run had, split into what the agent was sent and what it answered."""
    attributes = span.attributes
    warnings = info.warnings
    info.agent_name = first_str(attributes, "gen_ai.agent.name", "agent_name") or (
        span.name.removeprefix("invoke_agent ") if span.name.startswith("invoke_agent ") else None
    )
    info.model = first_str(attributes, "model_name", "gen_ai.request.model") or info.model
    conversation = (
        parse_messages(
            attributes.get("pydantic_ai.all_messages"),
            f"{span.span_id}-msg",
            warnings,
            "pydantic_ai.all_messages",
            created_at=timestamp(span.start_time_ns),
        )
        if attributes.get("pydantic_ai.all_messages") is not None
        else []
    )
    system, conversation = split_system(conversation)
    info.system.extend(text for text in system if text not in info.system)
    turn_end = _after_last_user_turn(conversation)
    info.input_messages, info.output_messages = conversation[:turn_end], conversation[turn_end:]
    final = attributes.get("final_result")
    if not any(m.role == "assistant" for m in info.output_messages) and final is not None:
        # A structured output (a kvlist or a JSON string) is shown as its JSON text.
        info.output_messages.append(
            text_message(
                f"{span.span_id}-final", "assistant", json_text(final), timestamp(span.end_time_ns)
            )
        )
    info.usage = (
        usage_from(
            attributes,
            input_tokens=("gen_ai.aggregated_usage.input_tokens",),
            output_tokens=("gen_ai.aggregated_usage.output_tokens",),
            total_tokens=("gen_ai.aggregated_usage.total_tokens",),
            reasoning_tokens=("gen_ai.aggregated_usage.details.reasoning_tokens",),
        )
        or info.usage
    )
    if info.usage is not None:
        info.usage = _with_cache(info.usage, attributes, "gen_ai.aggregated_usage")


def _after_last_user_turn(conversation: list[Any]) -> int:
    """Index just past the last message the user typed (tool results sent as ``user`` excluded)."""
    for index in range(len(conversation) - 1, -1, -1):
        message = conversation[index]
        if message.role == "user" and any(
            part.type != "tool-invocation" for part in message.content.parts
        ):
            return index + 1
    return 0


def _with_cache(usage: TokenUsage, attributes: Mapping[str, Any], prefix: str) -> TokenUsage:
    """Cached input tokens, which Pydantic AI reports under ``details`` (``cache_read_tokens``)."""
    if usage.cached_input_tokens:
        return usage
    cached = first(attributes, f"{prefix}.cache_read_tokens", f"{prefix}.details.cache_read_tokens")
    if isinstance(cached, int) and not isinstance(cached, bool):
        usage.cached_input_tokens = cached
    return usage
