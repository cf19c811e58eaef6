"""OpenTelemetry GenAI semantic conventions (SPAN_FORMATS §2): spans, plus their log events.

Content sits in one of three places depending on the instrumentation's version and settings:
JSON-string span attributes (``gen_ai.input.messages`` …), the same keys as structured values on
a ``gen_ai.client.inference.operation.details`` log event, or (semconv ≤ 1.36) one log event
per message (``gen_ai.user.message``, ``gen_ai.choice`` …, read by :mod:`genai_events`) while
the span carries none. This module reads all three, so a span is read the same however its
content travelled.

Frameworks that build on these attributes (Pydantic AI, Mastra, ai@7, OpenLLMetry 0.55+) reuse
:func:`fill_from_attributes` and add their own extras.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.extract import genai_events
from tracescore.extract.base import (
    as_str,
    first,
    first_str,
    load_json,
    new_info,
    timestamp,
    usage_from,
)
from tracescore.extract.genai_messages import (
    decode_arguments,
    decode_result,
    parse_messages,
    parse_system_instructions,
    parse_tool_definitions,
)
from tracescore.extract.messages import executed_call, split_system
from tracescore.extract.model import (
    ContextDocument,
    SpanInfo,
    SpanKindName,
    TokenUsage,
    ToolInvocation,
)
from tracescore.spans import LogRecord, Span

NAME = "otel-genai"

DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_LLM_OPERATIONS = frozenset(
    {
        "chat",
        "text_completion",
        "generate_content",
        "completion",
        "responses",
        "generate",
        # Semantic Kernel's names before the semconv settled
        "chat.completions",
        "text.completions",
        "chat.streaming_completions",
        "text.streaming_completions",
    }
)
_KINDS: dict[str, SpanKindName] = {
    **dict.fromkeys(_LLM_OPERATIONS, "llm"),
    "invoke_agent": "agent",
    "execute_tool": "tool",
    "retrieval": "retrieval",
}
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")


def detect(span: Span) -> bool:
    attributes = span.attributes
    return (
        "gen_ai.operation.name" in attributes
        or "gen_ai.provider.name" in attributes
        or "gen_ai.system" in attributes
        or "gen_ai.input.messages" in attributes
    )


def operation_kind(operation: str | None, attributes: Mapping[str, Any]) -> SpanKindName:
    """The neutral span kind for a ``gen_ai.operation.name`` value.

    Spans without a known operation are LLM calls when they carry a model or messages (older
    instrumentations omit the operation); anything else (``embeddings``, ``invoke_workflow``,
    framework-specific steps) stays ``other`` and only keeps the tree together.
    """
    if operation in _KINDS:
        return _KINDS[operation]
    if operation is None and any(
        key in attributes
        for key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.request.model")
    ):
        return "llm"
    return "other"


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = new_info(span, NAME)
    attributes: Mapping[str, Any] = span.attributes
    details = [r for r in logs if genai_events.event_name(r) == DETAILS_EVENT]
    details_attributes = [e.attributes for e in span.events if e.name == DETAILS_EVENT]
    details_attributes += [r.attributes for r in details]
    if details_attributes:
        # Structured values on the event are never truncated JSON: prefer them for content.
        merged = dict(attributes)
        for extra in details_attributes:
            merged.update({k: v for k, v in extra.items() if v is not None})
        attributes = merged
    fill_from_attributes(info, attributes)
    if not any(key in attributes for key in CONTENT_KEYS):
        genai_events.fill_from_events(info, logs, span)
    return info


def fill_from_attributes(info: SpanInfo, attributes: Mapping[str, Any]) -> None:
    """Read the GenAI attributes of one span (or log event) into ``info``."""
    warnings = info.warnings
    operation = as_str(attributes.get("gen_ai.operation.name"))
    info.kind = operation_kind(operation, attributes)
    info.agent_name = as_str(attributes.get("gen_ai.agent.name")) or info.agent_name
    info.model = (
        first_str(attributes, "gen_ai.response.model", "gen_ai.request.model") or info.model
    )
    info.provider = first_str(attributes, "gen_ai.provider.name", "gen_ai.system") or info.provider

    if "gen_ai.system_instructions" in attributes:
        info.system = parse_system_instructions(
            attributes["gen_ai.system_instructions"], warnings, "gen_ai.system_instructions"
        )
    if "gen_ai.input.messages" in attributes:
        messages = parse_messages(
            attributes["gen_ai.input.messages"],
            f"{info.span_id}-in",
            warnings,
            "gen_ai.input.messages",
            created_at=timestamp(info.start_time_ns),
        )
        system, info.input_messages = split_system(messages)
        # OpenLIT sends the prompt both as system instructions and as a system message.
        info.system.extend(text for text in system if text not in info.system)
    if "gen_ai.output.messages" in attributes:
        info.output_messages = parse_messages(
            attributes["gen_ai.output.messages"],
            f"{info.span_id}-out",
            warnings,
            "gen_ai.output.messages",
            default_role="assistant",
            created_at=timestamp(info.end_time_ns),
        )
    if "gen_ai.tool.definitions" in attributes:
        info.tools = parse_tool_definitions(
            attributes["gen_ai.tool.definitions"], warnings, "gen_ai.tool.definitions"
        )
    info.usage = genai_usage(attributes) or info.usage
    if info.kind == "tool":
        info.tool_call = tool_call_from(info, attributes)
    if info.kind == "retrieval":
        info.documents = retrieval_documents(attributes, warnings)


def genai_usage(attributes: Mapping[str, Any]) -> TokenUsage | None:
    """Token usage under the current GenAI keys and the renamed older ones."""
    return usage_from(
        attributes,
        input_tokens=("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        output_tokens=("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        total_tokens=("gen_ai.usage.total_tokens",),
        reasoning_tokens=(
            "gen_ai.usage.reasoning.output_tokens",
            "gen_ai.usage.reasoning_tokens",
            "gen_ai.usage.details.reasoning_tokens",
        ),
        cached_input_tokens=(
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_read_input_tokens",
        ),
    )


def tool_call_from(info: SpanInfo, attributes: Mapping[str, Any]) -> ToolInvocation:
    """The tool call an ``execute_tool`` span made: id, name, arguments, result or error."""
    name = first_str(attributes, "gen_ai.tool.name") or info.name.removeprefix("execute_tool ")
    args = decode_arguments(
        first(attributes, "gen_ai.tool.call.arguments"), info.warnings, "gen_ai.tool.call"
    )
    result, is_error = decode_result(first(attributes, "gen_ai.tool.call.result"))
    failed = is_error or info.status == "error" or "error.type" in attributes
    return executed_call(
        first_str(attributes, "gen_ai.tool.call.id") or "",
        name,
        args,
        result,
        failed=failed,
        error=info.error or as_str(attributes.get("error.type")),
    )


def retrieval_documents(
    attributes: Mapping[str, Any], warnings: list[str]
) -> list[ContextDocument]:
    """Documents of a GenAI ``retrieval`` span (``gen_ai.retrieval.documents``) that hold text."""
    value = load_json(
        first(attributes, "gen_ai.retrieval.documents"), warnings, "gen_ai.retrieval.documents"
    )
    documents: list[ContextDocument] = []
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, dict):
            continue
        content = item.get("content") or item.get("text")
        if not isinstance(content, str) or not content:
            continue
        score = item.get("score")
        documents.append(
            ContextDocument(
                content=content,
                source=as_str(item.get("id")),
                kind="retrieval",
                score=float(score) if isinstance(score, (int, float)) else None,
            )
        )
    return documents
