"""Mastra 0.x: legacy ``telemetry``, traced methods rather than a span tree (SPAN_FORMATS §6).

``agent.generate``/``agent.stream`` are the agent (named by the propagated ``componentName``),
``mastra.stream``/``mastra.generate`` the model loop (AI SDK style ``stream.*`` keys),
``mastra.stream.aisdk.doStream`` the tools offered and ``mastra.stream.toolCall`` a tool; the loop's
steps may be traced too (``….step.llm-execution``). :func:`read_legacy` reads one span and the
``refine`` steps here fix what only several spans together say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.extract.base import as_str, first_str, load_json, new_info, timestamp, usage_from
from tracescore.extract.genai_messages import (
    decode_arguments,
    decode_result,
    parse_messages,
    parse_tool_definitions,
)
from tracescore.extract.mastra_values import (
    NAME,
    answer,
    descendants,
    messages,
    output_message,
    provider,
    tool_call_parts,
    unserializable,
)
from tracescore.extract.messages import build_message, split_system, text_part
from tracescore.extract.model import SpanInfo, TokenUsage, ToolDefinition, ToolInvocation
from tracescore.spans import Span

_LEGACY_AGENT_METHODS = frozenset(
    {"generate", "stream", "generateVNext", "streamVNext", "generateLegacy", "streamLegacy"}
)
_LEGACY_LOOPS = frozenset({"mastra.stream", "mastra.generate"})
_LEGACY_TOOL = ".toolCall"
_LEGACY_PROVIDER_CALL = ".aisdk.doStream"
_LEGACY_STEP = ".step.llm-execution"
# Memory naming a new thread after its first message: a model call of its own under the agent.
_LEGACY_TITLE = frozenset({"agent.genTitle", "agent.generateTitleFromUserMessage"})
_LEGACY_REPLY_KEYS = ("stream.response.text", "stream.response.toolCalls", "stream.usage.")


def read_legacy(span: Span) -> SpanInfo:
    attributes = span.attributes
    info = new_info(span, NAME)
    operation = first_str(attributes, "mastra.operationId") or span.name
    prefix, _, method = span.name.partition(".")
    if prefix == "agent" and method in _LEGACY_AGENT_METHODS:
        info.kind = "agent"
        info.agent_name = first_str(attributes, "componentName")
        info.input_messages = messages(span, f"{span.name}.argument.0", "user", info.warnings)
        info.output_messages = answer(span, f"{span.name}.result", info.warnings)
        result = load_json(attributes.get(f"{span.name}.result"), [], "")
        if isinstance(result, Mapping) and isinstance(result.get("usage"), Mapping):
            info.usage = _ai_sdk_usage(result["usage"])  # the whole loop's: every step summed
    elif operation in _LEGACY_LOOPS:
        info.kind = "llm"
        _read_legacy_model_call(span, info)
    elif operation.endswith(_LEGACY_PROVIDER_CALL):
        # A model call when it recorded what came back (not only a timestamp or latency).
        if any(key.startswith(_LEGACY_REPLY_KEYS) for key in attributes):
            info.kind = "llm"
            _read_legacy_model_call(span, info)
        elif attributes.get("stream.prompt.tools") is not None:
            info.tools = parse_tool_definitions(
                attributes["stream.prompt.tools"], info.warnings, "stream.prompt.tools"
            )
    elif operation.endswith(_LEGACY_TOOL):
        info.kind = "tool"
        info.tool_call = _legacy_tool_call(span, info)
    elif operation.endswith(_LEGACY_STEP):
        _read_legacy_step(span, info)
    return info


def _read_legacy_step(span: Span, info: SpanInfo) -> None:
    """One step of the agentic loop (``….step.llm-execution``), from its ``.result``.

    ``mastra.stream`` records only one step (its usage and reply are the last step's), but
    each step's result holds what that model call did: the request body sent (system prompt
    included), ``output.text``/``toolCalls`` and ``output.usage``. Mastra cuts deep values to
    ``"[MaxDepth]"``; the assistant's earlier tool calls are rebuilt from the results that
    answer them (names are filled in by :func:`refine` from earlier steps).
    """
    key = f"{span.name}.result"
    result = load_json(span.attributes.get(key), info.warnings, key)
    output = result.get("output") if isinstance(result, Mapping) else None
    if not isinstance(output, Mapping):
        return
    info.kind = "llm"
    metadata = result.get("metadata") if isinstance(result.get("metadata"), Mapping) else {}
    model = metadata.get("modelMetadata")
    info.model = as_str(metadata.get("modelId"))
    info.provider = (
        provider(as_str(model.get("modelProvider"))) if isinstance(model, Mapping) else None
    )
    request = metadata.get("request")
    body = request.get("body") if isinstance(request, Mapping) else None
    sent = body.get("messages") if isinstance(body, Mapping) else None
    if isinstance(sent, list):
        info.system, info.input_messages = split_system(
            parse_messages(
                _with_elided_calls(sent),
                f"{span.span_id}-in",
                info.warnings,
                key,
                created_at=timestamp(span.start_time_ns),
            )
        )
    info.output_messages = output_message(span, output, info.warnings, key)
    if isinstance(output.get("usage"), Mapping):
        info.usage = _ai_sdk_usage(output["usage"])


def _with_elided_calls(messages: list[Any]) -> list[Any]:
    """OpenAI messages whose cut ``tool_calls`` (``["[MaxDepth]"]``) are rebuilt as calls with
    the ids of the tool messages that follow (name and arguments unknown here)."""
    rebuilt: list[Any] = []
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        if isinstance(calls, list) and calls and not all(isinstance(c, Mapping) for c in calls):
            ids = []
            for later in messages[index + 1 :]:
                if not isinstance(later, Mapping) or later.get("role") != "tool":
                    break
                ids.append(later.get("tool_call_id"))
            message = {
                **message,
                "tool_calls": [
                    {"id": i, "function": {"name": "", "arguments": None}} for i in ids if i
                ],
            }
        rebuilt.append(message)
    return rebuilt


def _read_legacy_model_call(span: Span, info: SpanInfo) -> None:
    """``stream.*`` keys: the messages sent (without the system prompt), reply and usage."""
    attributes = span.attributes
    warnings = info.warnings
    info.agent_name = first_str(attributes, "componentName")
    info.model = first_str(attributes, "stream.response.model", "aisdk.model.id")
    info.provider = provider(first_str(attributes, "aisdk.model.provider"))
    info.system, info.input_messages = split_system(
        messages(span, "stream.prompt.messages", "user", warnings)
    )
    if attributes.get("stream.prompt.tools") is not None:
        info.tools = parse_tool_definitions(
            attributes["stream.prompt.tools"], warnings, "stream.prompt.tools"
        )
    parts = tool_call_parts(
        load_json(
            attributes.get("stream.response.toolCalls"), warnings, "stream.response.toolCalls"
        ),
        warnings,
        "stream.response.toolCalls",
    )
    text = as_str(attributes.get("stream.response.text"))
    if text:
        parts.append(text_part(text))
    if parts:
        info.output_messages = [
            build_message(f"{span.span_id}-out-0", "assistant", parts, timestamp(span.end_time_ns))
        ]
    info.usage = _ai_sdk_usage(attributes, "stream.usage.")


def _ai_sdk_usage(values: Mapping[str, Any], prefix: str = "") -> TokenUsage | None:
    """AI SDK usage keys (v5 ``inputTokens``, v4 ``promptTokens``…) under ``prefix``."""
    return usage_from(
        values,
        input_tokens=(f"{prefix}inputTokens", f"{prefix}promptTokens"),
        output_tokens=(f"{prefix}outputTokens", f"{prefix}completionTokens"),
        total_tokens=(f"{prefix}totalTokens",),
        reasoning_tokens=(f"{prefix}reasoningTokens",),
        cached_input_tokens=(f"{prefix}cachedInputTokens",),
    )


def _legacy_tool_call(span: Span, info: SpanInfo) -> ToolInvocation:
    attributes = span.attributes
    raw_result = attributes.get("stream.toolCall.result")
    if unserializable(raw_result, "stream.toolCall.result", info.warnings):
        raw_result = None
    result, is_error = decode_result(raw_result)
    failed = is_error or info.status == "error"
    return ToolInvocation(
        tool_call_id=first_str(attributes, "stream.toolCall.toolCallId") or "",
        tool_name=first_str(attributes, "stream.toolCall.toolName") or "",
        args=decode_arguments(
            attributes.get("stream.toolCall.args"), info.warnings, "stream.toolCall"
        ),
        result=result,
        state="output-error" if failed else ("result" if raw_result is not None else "call"),
        is_error=failed or None,
        error_text=info.error if failed else None,
    )


def drop_title_generation(
    read: list[tuple[Span, SpanInfo]], children: dict[str, list[SpanInfo]]
) -> None:
    """0.x: the model loop memory runs to title a new thread (``agent.genTitle``, after the
    answer, under the agent span) is bookkeeping, not the agent's work. Read as steps, its reply
    became the agent's final answer (the title judged as the answer) and its tokens doubled the
    turn's usage (232/46 where ``agent.stream.result`` says 116/23)."""
    for span, info in read:
        if span.name not in _LEGACY_TITLE:
            continue
        calls = [d for d in descendants(info, children) if d.kind in ("llm", "tool")]
        for call in calls:
            call.kind = "other"
        if calls:
            info.warnings.append(
                "Mastra memory's thread title: its model calls are no steps of the agent"
            )


def _legacy_operation(span: Span) -> str:
    return first_str(span.attributes, "mastra.operationId") or span.name


def refine_legacy_steps(read: list[tuple[Span, SpanInfo]], infos: dict[str, SpanInfo]) -> None:
    """0.x: the traced loop steps replace the loop spans as LLM calls.

    ``mastra.stream`` (and ``….aisdk.doStream``) hold one step's usage and reply, so reading
    them as the LLM call lost the other steps (usage 142/23 of 258/46, one call for two, the
    answer before the tool call it used). The steps take the tools the loop was offered, and
    the tool calls the later steps were sent back get the names and arguments the earlier
    steps' outputs gave them.
    """
    steps = [
        info
        for span, info in read
        if info.kind == "llm" and _legacy_operation(span).endswith(_LEGACY_STEP)
    ]
    if not steps:
        _loop_usage_from_agent(infos)
        return
    tools: list[ToolDefinition] = []
    for span, info in read:
        operation = _legacy_operation(span)
        if operation in _LEGACY_LOOPS or operation.endswith(_LEGACY_PROVIDER_CALL):
            tools = tools or list(info.tools)
            info.kind = "other"
    steps.sort(key=lambda i: i.start_time_ns)
    made: dict[str, ToolInvocation] = {}
    for step in steps:
        step.tools = step.tools or list(tools)
        for message in step.input_messages:
            for part in message.content.parts:
                call = part.tool_invocation
                known = made.get(call.tool_call_id) if call is not None else None
                if call is not None and known is not None and not call.tool_name:
                    call.tool_name, call.args = known.tool_name, known.args
        for message in step.output_messages:
            for part in message.content.parts:
                if part.tool_invocation is not None and part.tool_invocation.tool_call_id:
                    made[part.tool_invocation.tool_call_id] = part.tool_invocation


def _loop_usage_from_agent(infos: dict[str, SpanInfo]) -> None:
    """Without traced steps, an agent's one model loop gets the agent result's usage when
    that is larger: ``mastra.stream`` counts the last step only, the result every step."""
    loops: dict[str, list[SpanInfo]] = {}
    for info in infos.values():
        if info.kind != "llm":
            continue
        parent = infos.get(info.parent_span_id or "")
        while parent is not None and parent.kind != "agent":
            parent = infos.get(parent.parent_span_id or "")
        if parent is not None:
            loops.setdefault(parent.span_id, []).append(info)
    for agent_id, calls in loops.items():
        whole = infos[agent_id].usage
        if (
            len(calls) == 1
            and whole is not None
            and (calls[0].usage is None or calls[0].usage.total_tokens < whole.total_tokens)
        ):
            calls[0].usage = whole.model_copy()
            calls[0].warnings.append("usage of the last step only; the agent result's total used")


def merge_delegated_agent(agent: SpanInfo, infos: dict[str, SpanInfo]) -> None:
    parent = infos.get(agent.parent_span_id or "")
    while parent is not None:
        if parent.kind == "agent" and parent.agent_name == agent.agent_name:
            agent.kind = "other"
            if not parent.output_messages:
                parent.output_messages = agent.output_messages
            return
        parent = infos.get(parent.parent_span_id or "")


def give_tools_to_model_call(
    holder: SpanInfo, infos: dict[str, SpanInfo], children: dict[str, list[SpanInfo]]
) -> None:
    parent = infos.get(holder.parent_span_id or "")
    candidates = [parent] if parent is not None else []
    candidates += children.get(holder.parent_span_id or "", [])
    model_call = next((c for c in candidates if c is not None and c.kind == "llm"), None)
    if model_call is not None and not model_call.tools:
        model_call.tools = list(holder.tools)
