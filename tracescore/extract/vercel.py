"""Vercel AI SDK telemetry: the ``ai.*`` spans (ai@3–6, ai@7 ``LegacyOpenTelemetry``) and the
GenAI-semconv spans of ai@7's ``@ai-sdk/otel`` (SPAN_FORMATS §5).

The SDK has no agent span: ``ai.generateText`` / ``ai.streamText`` wrap the whole tool loop, so
they are read as the agent of the run, named after ``ai.telemetry.functionId`` (the only name
the SDK records). Their ``doGenerate`` / ``doStream`` children are the LLM calls and
``ai.toolCall`` the tool executions. Keys moved across majors, so every fact is read from its
newest key first: ``ai.response.*`` (ai@4+) before ``ai.result.*`` (ai@3), ``input``/``output``
before ``args``/``result``, ``inputTokens`` before ``promptTokens``.

ai@7's ``OpenTelemetry`` class writes GenAI attributes instead (scope ``gen_ai``):
``invoke_agent`` → ``step N`` (non-standard ``agent_step``) → ``chat`` / ``execute_tool``. Those
are plain GenAI spans once claimed, so the GenAI module reads them; ``step`` spans stay ``other``.
"""

from __future__ import annotations

from typing import Any

from tracescore.extract import genai
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
from tracescore.extract.messages import (
    build_message,
    reasoning_part,
    split_system,
    text_message,
    text_part,
    tool_call_part,
)
from tracescore.extract.model import Message, MessagePart, SpanInfo, ToolInvocation
from tracescore.spans import LogRecord, Span

NAME = "vercel-ai-sdk"

AI_SCOPE = "ai"
GENAI_SCOPE = "gen_ai"  # ai@7 ``@ai-sdk/otel``
# ``ai.operationId`` values: the call that wraps a whole tool loop, and one provider call.
_CALL_OPERATIONS = frozenset(
    {"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"}
)
_PROVIDER_CALL_SUFFIXES = (".doGenerate", ".doStream")
_TOOL_OPERATION = "ai.toolCall"


def detect(span: Span) -> bool:
    return "ai.operationId" in span.attributes or span.scope.name in (AI_SCOPE, GENAI_SCOPE)


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    if "ai.operationId" in span.attributes or span.scope.name == AI_SCOPE:
        return _read_ai_span(span)
    return _read_genai_span(span, logs)


# --- ai.* spans --------------------------------------------------------------------------


def _read_ai_span(span: Span) -> SpanInfo:
    attrs = span.attributes
    info = new_info(span, NAME)
    operation = first_str(attrs, "ai.operationId") or span.name
    if operation == _TOOL_OPERATION:
        info.kind = "tool"
        info.tool_call = _tool_call(span, info)
        return info
    if operation in _CALL_OPERATIONS:
        info.kind = "agent"
        info.agent_name = first_str(attrs, "ai.telemetry.functionId", "resource.name")
        info.system, info.input_messages = _call_prompt(span, info.warnings)
    elif operation.endswith(_PROVIDER_CALL_SUFFIXES):
        info.kind = "llm"
        info.system, info.input_messages = split_system(
            parse_messages(
                attrs.get("ai.prompt.messages"),
                f"{span.span_id}-in",
                info.warnings,
                "ai.prompt.messages",
                created_at=timestamp(span.start_time_ns),
            )
        )
        if attrs.get("ai.prompt.tools") is not None:
            info.tools = parse_tool_definitions(
                attrs["ai.prompt.tools"], info.warnings, "ai.prompt.tools"
            )
    else:
        return info  # embeddings and other helpers carry nothing a run needs
    info.model = first_str(attrs, "ai.response.model", "ai.model.id", "gen_ai.request.model")
    info.provider = _provider(first_str(attrs, "ai.model.provider", "gen_ai.system"))
    output = _response_message(span, info.warnings)
    info.output_messages = [output] if output is not None else []
    info.usage = usage_from(
        attrs,
        input_tokens=("ai.usage.inputTokens", "ai.usage.promptTokens", "gen_ai.usage.input_tokens"),
        output_tokens=(
            "ai.usage.outputTokens",
            "ai.usage.completionTokens",
            "gen_ai.usage.output_tokens",
        ),
        total_tokens=("ai.usage.totalTokens",),
        reasoning_tokens=(
            "ai.usage.reasoningTokens",
            "ai.usage.outputTokenDetails.reasoningTokens",
        ),
        cached_input_tokens=(
            "ai.usage.cachedInputTokens",
            "ai.usage.inputTokenDetails.cacheReadTokens",
        ),
    )
    return info


def _call_prompt(span: Span, warnings: list[str]) -> tuple[list[str], list[Message]]:
    """``ai.prompt``: ``{system?, prompt}`` or ``{system?, messages}`` as given to the call.

    ``prompt`` is a string or a message list; ai@7 renamed ``system`` to ``instructions``.
    """
    prompt = load_json(span.attributes.get("ai.prompt"), warnings, "ai.prompt")
    created_at = timestamp(span.start_time_ns)
    if prompt is None:
        return [], []
    if isinstance(prompt, str):  # cut or not JSON: the text is still the user's prompt
        return [], [text_message(f"{span.span_id}-in-0", "user", prompt, created_at)]
    if not isinstance(prompt, dict):
        warnings.append("ai.prompt: neither {system, prompt} nor {system, messages}; skipped")
        return [], []
    system = parse_system_instructions(
        first(prompt, "system", "instructions"), warnings, "ai.prompt system"
    )
    body = first(prompt, "messages", "prompt")
    messages = (
        parse_messages(body, f"{span.span_id}-in", warnings, "ai.prompt", created_at=created_at)
        if body is not None
        else []
    )
    inline_system, messages = split_system(messages)
    return system + inline_system, messages


def _response_message(span: Span, warnings: list[str]) -> Message | None:
    """The reply of a call or provider call: reasoning, tool calls, then text."""
    attrs = span.attributes
    parts: list[MessagePart] = []
    reasoning = _reasoning_text(attrs.get("ai.response.reasoning"), warnings)
    if reasoning:
        parts.append(reasoning_part(reasoning))
    calls = load_json(
        first(attrs, "ai.response.toolCalls", "ai.result.toolCalls"),
        warnings,
        "ai.response.toolCalls",
    )
    if isinstance(calls, list):
        parts.extend(
            tool_call_part(
                str(first(call, "toolCallId", "id") or ""),
                str(first(call, "toolName", "name") or ""),
                decode_arguments(first(call, "input", "args"), warnings, "ai.response.toolCalls"),
            )
            for call in calls
            if isinstance(call, dict)
        )
    elif calls is not None and not (isinstance(calls, str) and calls.lstrip()[:1] in "[{"):
        # (JSON cut short was reported by ``load_json`` already.)
        warnings.append("ai.response.toolCalls: not a JSON list of tool calls; skipped")
    # generateObject answers with a JSON object instead of text.
    text = as_str(
        first(attrs, "ai.response.text", "ai.result.text", "ai.response.object", "ai.result.object")
    )
    if text:
        parts.append(text_part(text))
    if not parts:
        return None
    return build_message(f"{span.span_id}-out-0", "assistant", parts, timestamp(span.end_time_ns))


def _reasoning_text(value: Any, warnings: list[str]) -> str:
    """``ai.response.reasoning``: a string, or a JSON list of reasoning parts."""
    value = load_json(value, warnings, "ai.response.reasoning")
    if isinstance(value, list):
        texts = (item.get("text") if isinstance(item, dict) else item for item in value)
        return "\n".join(t for t in texts if isinstance(t, str) and t)
    return value if isinstance(value, str) else ""


def _tool_call(span: Span, info: SpanInfo) -> ToolInvocation:
    """An ``ai.toolCall`` span: a thrown tool leaves an error status and no result."""
    attrs = span.attributes
    args = decode_arguments(
        first(attrs, "ai.toolCall.input", "ai.toolCall.args"), info.warnings, "ai.toolCall"
    )
    raw_result = first(attrs, "ai.toolCall.output", "ai.toolCall.result")
    result, is_error = decode_result(raw_result)
    failed = is_error or info.status == "error"
    if raw_result is None and not failed:
        info.warnings.append("ai.toolCall: no result recorded (ai.toolCall.result/output)")
    return ToolInvocation(
        tool_call_id=first_str(attrs, "ai.toolCall.id") or "",
        tool_name=first_str(attrs, "ai.toolCall.name") or "",
        args=args,
        result=result,
        state="output-error" if failed else ("result" if raw_result is not None else "call"),
        is_error=failed or None,
        error_text=(_exception_message(span) or info.error or as_str(result)) if failed else None,
    )


def _exception_message(span: Span) -> str | None:
    for event in span.events:
        if event.name == "exception":
            return as_str(event.attributes.get("exception.message"))
    return None


def _provider(value: str | None) -> str | None:
    """``openai.chat`` / ``openai.responses`` → ``openai``: the API flavour is not the provider."""
    return value.split(".", 1)[0] if value else None


# --- ai@7 GenAI-semconv spans ------------------------------------------------------------


def _read_genai_span(span: Span, logs: list[LogRecord]) -> SpanInfo:
    """ai@7 spans are plain GenAI spans once claimed; ``step N`` (``agent_step``) stays other."""
    info = genai.read(span, logs)
    info.convention = NAME
    info.provider = _provider(info.provider)
    return info
