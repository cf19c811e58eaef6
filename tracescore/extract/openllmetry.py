"""OpenLLMetry / Traceloop spans (SPAN_FORMATS §4).

Two generations share the family. Up to 0.54 LLM spans flatten messages into indexed
attributes (``gen_ai.prompt.{i}.role``, ``gen_ai.completion.{i}.tool_calls.{k}.name``,
``gen_ai.completion.{i}.reasoning`` as a JSON summary list, a legacy
``gen_ai.completion.{i}.function_call.*``). From 0.55 they use the GenAI
layout (``gen_ai.input.messages``), read through :func:`genai.fill_from_attributes`. In both,
the Traceloop SDK's decorators add ``@workflow``/``@task``/``@agent``/``@tool`` spans whose
``traceloop.entity.input`` is ``{"args": [...], "kwargs": {...}}`` and whose
``traceloop.entity.output`` is the JSON-encoded return value (a string result is encoded
twice). Neither generation records a tool-call id on ``@tool`` spans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.extract import genai
from tracescore.extract.base import (
    as_str,
    first_str,
    indexed,
    json_text,
    load_json,
    new_info,
    timestamp,
    usage_from,
)
from tracescore.extract.genai_messages import decode_result, parse_message, parse_tool_definition
from tracescore.extract.messages import executed_call, split_system, text_message
from tracescore.extract.model import Message, SpanInfo, SpanKindName
from tracescore.spans import LogRecord, Span

NAME = "openllmetry"

_SCOPES = ("traceloop", "opentelemetry.instrumentation.openai.v1")
_MARKERS = (
    "traceloop.span.kind",
    "llm.request.type",
    "llm.is_streaming",
    "gen_ai.is_streaming",
    "gen_ai.prompt.0.role",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.role",
)
_TOOL_CALL_RESULT = frozenset(("tool_name", "tool_kwargs", "tool_output"))
"""The fields of LlamaIndex's ``ToolCallResult`` (its ``tool_output`` a ``ToolOutput``): a tool
call's record as the agent step that ran it returns it."""
_DECORATOR_KINDS: dict[str, SpanKindName] = {
    "agent": "agent",
    "tool": "tool",
    "workflow": "other",
    "task": "other",
}


def detect(span: Span) -> bool:
    attributes = span.attributes
    return span.scope.name.startswith(_SCOPES) or not attributes.keys().isdisjoint(_MARKERS)


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = new_info(span, NAME)
    attributes = span.attributes
    decorator = as_str(attributes.get("traceloop.span.kind"))
    if any(key in attributes for key in genai.CONTENT_KEYS):
        genai.fill_from_attributes(info, attributes)
    elif decorator is None:
        _read_indexed(span, info)
    if decorator is not None:
        kind = _DECORATOR_KINDS.get(decorator, "other")
        # A task the instrumentation of a framework wrapped round a model call (LlamaIndex's
        # ``OpenAILike.task``) keeps the kind its GenAI operation gives.
        info.kind = info.kind if kind == "other" and info.kind != "other" else kind
        _read_entity(span, info)
    # A ``@workflow`` is named too: when it wraps a hand-written loop, the loop's run is named
    # after it (``weather_turn``, not the span's ``weather_turn.workflow``).
    info.agent_name = first_str(attributes, "gen_ai.agent.name") or (
        first_str(attributes, "traceloop.entity.name")
        if info.kind == "agent" or decorator == "workflow"
        else None
    )
    return info


def _read_indexed(span: Span, info: SpanInfo) -> None:
    """An LLM span of OpenLLMetry ≤ 0.54: indexed prompts, completions and functions."""
    attributes = span.attributes
    warnings = info.warnings
    request_type = as_str(attributes.get("llm.request.type"))
    info.kind = "llm" if request_type in (None, "chat", "completion") else "other"
    info.model = first_str(attributes, "gen_ai.response.model", "gen_ai.request.model")
    info.provider = first_str(attributes, "gen_ai.provider.name", "gen_ai.system")
    prompts = [
        _message(
            raw,
            f"{span.span_id}-in-{i}",
            info,
            "gen_ai.prompt",
            "user",
            timestamp(span.start_time_ns),
        )
        for i, raw in enumerate(indexed(attributes, "gen_ai.prompt.", warnings))
    ]
    system, info.input_messages = split_system(m for m in prompts if m is not None)
    info.system = system
    info.output_messages = indexed_completions(span, info)
    info.tools = [
        tool
        for raw in indexed(attributes, "llm.request.functions.", warnings)
        if (tool := parse_tool_definition(raw, warnings, "llm.request.functions.N"))
    ]
    info.usage = usage_from(
        attributes,
        input_tokens=("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        output_tokens=("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        total_tokens=("llm.usage.total_tokens", "gen_ai.usage.total_tokens"),
        reasoning_tokens=("llm.usage.reasoning_tokens", "gen_ai.usage.reasoning_tokens"),
        cached_input_tokens=(
            "gen_ai.usage.cache_read_input_tokens",
            "gen_ai.usage.cache_read.input_tokens",
        ),
    )


def indexed_completions(span: Span, info: SpanInfo) -> list[Message]:
    """The ``gen_ai.completion.{i}.*`` attributes as the span's output messages."""
    completions = [
        _message(
            raw,
            f"{span.span_id}-out-{i}",
            info,
            "gen_ai.completion",
            "assistant",
            timestamp(span.end_time_ns),
        )
        for i, raw in enumerate(indexed(span.attributes, "gen_ai.completion.", info.warnings))
    ]
    return [m for m in completions if m is not None]


def _message(
    raw: Mapping[str, Any], message_id: str, info: SpanInfo, what: str, role: str, created_at: Any
) -> Message | None:
    content = raw.get("content")
    if isinstance(content, str) and content.startswith("[{"):
        # Multimodal content lists are stored as a JSON string; plain text stays text.
        decoded = load_json(content, [], what)
        content = decoded if isinstance(decoded, list) else content
    message = {
        "role": raw.get("role") or role,
        "content": content,
        "tool_call_id": raw.get("tool_call_id"),
        "finish_reason": raw.get("finish_reason"),
        "reasoning": raw.get("reasoning"),
        "tool_calls": [
            {
                "id": c.get("id"),
                "function": {"name": c.get("name"), "arguments": c.get("arguments")},
            }
            for c in [*indexed(raw, "tool_calls.", info.warnings), *_function_call(raw)]
        ],
    }
    return parse_message(
        message, message_id, info.warnings, what, default_role=role, created_at=created_at
    )


def _function_call(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The legacy single ``function_call.{name,arguments}`` of a completion (the deprecated
    OpenAI ``function_call`` field, and what LiteLLM's ``otel`` callback writes for a tool
    call), as a tool call without an id."""
    name = raw.get("function_call.name")
    if name is None:
        return []
    return [
        {
            "id": raw.get("function_call.id"),
            "name": name,
            "arguments": raw.get("function_call.arguments"),
        }
    ]


def _read_entity(span: Span, info: SpanInfo) -> None:
    """A decorator span: its function's arguments and return value as input and output."""
    attributes = span.attributes
    warnings = info.warnings
    arguments = load_json(
        attributes.get("traceloop.entity.input"), warnings, "traceloop.entity.input"
    )
    returned = attributes.get("traceloop.entity.output")
    output = load_json(returned, warnings, "traceloop.entity.output")
    output, failed = decode_result(output)  # string results are JSON-encoded once more
    args = _call_arguments(arguments)
    tool_name = first_str(attributes, "gen_ai.tool.name", "traceloop.entity.name")
    call_id = ""
    if info.kind == "other" and isinstance(output, dict) and output.keys() >= _TOOL_CALL_RESULT:
        # A framework's step that ran a tool, recorded as a plain task returning the
        # framework's record of the call (LlamaIndex's ``ToolCallResult``): a tool call.
        info.kind = "tool"
        tool_name = as_str(output["tool_name"]) or tool_name
        call_id = as_str(output.get("tool_id")) or ""
        args = output["tool_kwargs"]
        record = output["tool_output"] if isinstance(output["tool_output"], dict) else {}
        failed = failed or record.get("is_error") is True
        output, _ = decode_result(record.get("raw_output"))
    if info.kind == "tool":
        if not call_id:
            args, call_id = _tool_start(args)
        info.tool_call = executed_call(
            first_str(attributes, "gen_ai.tool.call.id") or call_id,
            tool_name or span.name.removesuffix(".tool"),
            args,
            output,
            failed=failed or info.status == "error",
            error=info.error,
            answered=returned is not None,
        )
        return
    if info.kind == "agent" and not info.input_messages and args not in (None, {}, []):
        text = args if isinstance(args, str) else json_text(args)
        info.input_messages = [
            text_message(f"{span.span_id}-in-0", "user", text, timestamp(span.start_time_ns))
        ]
    if info.kind == "agent" and not info.output_messages and returned is not None:
        text = output if isinstance(output, str) else json_text(output)
        info.output_messages = [
            text_message(f"{span.span_id}-out-0", "assistant", text, timestamp(span.end_time_ns))
        ]


def _tool_start(value: Any) -> tuple[Any, str]:
    """A tool's arguments and call id from LangChain's ``on_tool_start`` payload, which the
    LangChain instrumentation records whole (``{"input_str": "{'city': …}", "tags", "metadata",
    "inputs": {…}, "kwargs": {"tool_call_id": …}}``): the structured ``inputs`` are the call's
    arguments (``input_str`` is their Python repr). Other arguments are returned as they are."""
    if not isinstance(value, dict) or "input_str" not in value:
        return value, ""
    inputs = value.get("inputs")
    keywords = value.get("kwargs")
    call_id = keywords.get("tool_call_id") if isinstance(keywords, dict) else None
    arguments = inputs if isinstance(inputs, dict) else value["input_str"]
    return arguments, call_id if isinstance(call_id, str) else ""


def _call_arguments(value: Any) -> Any:
    """The call's arguments from ``{"args": [...], "kwargs": {...}}``.

    Keyword arguments are the named object a tool schema describes; a lone positional argument
    is the value itself (an agent's prompt); several positionals stay a list.
    """
    if not isinstance(value, dict) or not ({"args", "kwargs"} >= set(value)):
        return value
    positional = value.get("args") or []
    keywords = value.get("kwargs") or {}
    if not positional:
        return keywords
    if not keywords:
        return positional[0] if len(positional) == 1 else positional
    return {"args": positional, **keywords}
