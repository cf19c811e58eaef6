"""Mastra: 1.x AI tracing through ``@mastra/otel-exporter`` and 0.x legacy ``telemetry``
(SPAN_FORMATS §6).

Mastra 1.x spreads one agent call over a tree (``mastra.span.type``)::

    agent_run → model_generation → model_step (one per step) → model_inference (``chat``)
                                                                → model_chunk (×n)
                                                 model_step → tool_call (``execute_tool``)

Only ``chat`` carries usage (by design, to avoid double counting), so it is the LLM span; but
its output holds text only, while the step's input, its tool calls and the generation's
reasoning sit on the ``model_step`` and ``model_generation`` ancestors. :func:`read` keeps
those on the ancestors' ``other`` infos and :func:`refine` hands them to the ``chat`` span.
Chunks stay ``other`` so streamed text is never counted twice.

Mastra 0.x traced methods instead: ``agent.generate``/``agent.stream`` (the agent, named by the
propagated ``componentName``), ``mastra.stream``/``mastra.generate`` (the model loop, AI SDK
style ``stream.*`` keys), ``mastra.stream.aisdk.doStream`` (the tools offered) and
``mastra.stream.toolCall``. Unserializable values were replaced by ``"[Not Serializable]"``.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    build_message,
    decode_arguments,
    decode_result,
    parse_messages,
    parse_system_instructions,
    parse_tool_definitions,
    reasoning_part,
    split_system,
    text_message,
    text_part,
    tool_call_part,
)
from tracescore.extract.model import (
    Message,
    MessagePart,
    SpanInfo,
    SpanKindName,
    TokenUsage,
    ToolDefinition,
    ToolInvocation,
)
from tracescore.spans import LogRecord, Span

NAME = "mastra"

EXPORTER_SCOPE = "@mastra/otel-exporter"
# Placeholders Mastra writes instead of a value it could not serialize.
UNSERIALIZABLE = frozenset({"[Not Serializable]", "[Function]", "[Circular]"})
_TOOL_SPAN_TYPES = frozenset({"tool_call", "mcp_tool_call"})
# A whole model call (all its steps); ``llm_generation`` is its name before Mastra 1.x.
_GENERATION_TYPES = frozenset({"model_generation", "llm_generation"})
_KINDS: dict[str, SpanKindName] = {
    "model_inference": "llm", **dict.fromkeys(_TOOL_SPAN_TYPES, "tool")
}
# Mastra elides tool messages in ``mastra.model_step.input`` to these markers.
_ELIDED_PREFIXES = ("[tool: ", "[tool-result: ", "[tool-call: ")
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


def detect(span: Span) -> bool:
    attributes = span.attributes
    return (
        "mastra.span.type" in attributes
        or span.scope.name == EXPORTER_SCOPE
        or "componentName" in attributes  # 0.x: propagated to every span of an agent call
        or "mastra.operationId" in attributes
    )


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    if "mastra.span.type" in span.attributes or span.scope.name == EXPORTER_SCOPE:
        return _read_ai_tracing(span, logs)
    return _read_legacy(span)


# --- 1.x AI tracing ------------------------------------------------------------------------


def _read_ai_tracing(span: Span, logs: list[LogRecord]) -> SpanInfo:
    attributes = span.attributes
    span_type = first_str(attributes, "mastra.span.type")
    if span_type == "agent_run":
        return _read_agent_run(span)
    info = genai.read(span, logs)  # the GenAI attributes Mastra mirrors (model, usage, output)
    info.convention = NAME
    # A span without a type (not seen so far) keeps the kind its GenAI operation gives.
    if span_type:
        info.kind = _KINDS.get(span_type, "other")
    info.provider = _provider(info.provider)
    warnings = info.warnings
    if info.kind == "tool":
        info.tool_call = genai.tool_call_from(info, attributes)
    elif span_type in _GENERATION_TYPES or span_type == "model_step":
        # Kept on an ``other`` info for :func:`refine`; the assembler never reads them here.
        if f"mastra.{span_type}.input" in attributes:
            info.system, info.input_messages = split_system(
                _messages(span, f"mastra.{span_type}.input", "user", warnings)
            )
        if f"mastra.{span_type}.output" in attributes:
            info.output_messages = _step_output(span, f"mastra.{span_type}.output", warnings)
        metadata = load_json(attributes.get("mastra.metadata.modelMetadata"), [], "")
        if isinstance(metadata, Mapping):
            info.model = info.model or as_str(metadata.get("modelId"))
            info.provider = info.provider or _provider(as_str(metadata.get("modelProvider")))
    elif span_type == "model_chunk":
        info.output_messages = _answer(span, "mastra.model_chunk.output", warnings)
    return info


def _read_agent_run(span: Span) -> SpanInfo:
    """The agent span; its instructions are a plain string, its input the raw argument."""
    attributes = span.attributes
    info = new_info(span, NAME)
    warnings = info.warnings
    info.kind = "agent"
    info.agent_name = first_str(attributes, "gen_ai.agent.name", "gen_ai.agent.id") or (
        span.name.removeprefix("invoke_agent ") or None
    )
    info.system = _instructions(attributes.get("gen_ai.system_instructions"), warnings)
    info.input_messages = _messages(span, "mastra.agent_run.input", "user", warnings)
    info.output_messages = _answer(span, "mastra.agent_run.output", warnings)
    if attributes.get("gen_ai.tool.definitions") is not None:
        info.tools = parse_tool_definitions(
            attributes["gen_ai.tool.definitions"], warnings, "gen_ai.tool.definitions"
        )
    return info


def _instructions(value: Any, warnings: list[str]) -> list[str]:
    """Mastra sends instructions as a plain string; only a JSON part list is parsed."""
    if isinstance(value, str) and not value.lstrip().startswith(("[{", '["')):
        return [value] if value.strip() else []
    return parse_system_instructions(value, warnings, "gen_ai.system_instructions")


def _messages(span: Span, key: str, default_role: str, warnings: list[str]) -> list[Message]:
    """A raw input (a string, a message list, or ``{messages}``) as messages.

    Tool messages Mastra elided to ``"[tool: name]"`` are dropped, with a warning: the marker is
    neither the tool's real result nor text the model wrote (the tool spans hold the calls).
    """
    value = span.attributes.get(key)
    if value is None:
        return []
    if _unserializable(value, key, warnings):
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
        normalised, f"{span.span_id}-in", warnings, key,
        default_role=default_role, created_at=timestamp(span.start_time_ns),
    )


def _answer(span: Span, key: str, warnings: list[str]) -> list[Message]:
    """``{text, …}`` outputs (agent run, chunk) as one assistant message, when they hold text."""
    value = span.attributes.get(key)
    if value is None or _unserializable(value, key, warnings):
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


def _step_output(span: Span, key: str, warnings: list[str]) -> list[Message]:
    """``{text, toolCalls, reasoning}`` of a generation or step: reasoning, calls, then text."""
    value = span.attributes.get(key)
    if value is None or _unserializable(value, key, warnings):
        return []
    value = load_json(value, warnings, key)
    if not isinstance(value, Mapping):
        return _answer(span, key, warnings)
    return _output_message(span, value, warnings, key)


def _output_message(
    span: Span, value: Mapping[str, Any], warnings: list[str], key: str
) -> list[Message]:
    """An output object ``{text, toolCalls, reasoning}`` as one assistant message, when any."""
    reasoning = value.get("reasoning")
    if isinstance(reasoning, str):  # 0.x steps: the text itself (also ``reasoningText``)
        reasoning = [reasoning]
    parts: list[MessagePart] = [
        reasoning_part(text)
        for text in _reasoning_texts(reasoning or [value.get("reasoningText")])
    ]
    parts.extend(_tool_call_parts(value.get("toolCalls"), warnings, key))
    if isinstance(value.get("text"), str) and value["text"]:
        parts.append(text_part(value["text"]))
    if not parts:
        return []
    return [build_message(f"{span.span_id}-out-0", "assistant", parts, timestamp(span.end_time_ns))]


def _reasoning_texts(value: Any) -> list[str]:
    """Reasoning chunks ``[{type: "reasoning", payload: {text}}]`` (or plain texts) as texts."""
    texts: list[str] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, Mapping):
            payload = given if isinstance(given := item.get("payload"), Mapping) else item
            item = payload.get("text")
        if isinstance(item, str) and item:
            texts.append(item)
    return texts


def _tool_call_parts(value: Any, warnings: list[str], what: str) -> list[MessagePart]:
    """Tool calls as ``{toolCallId, toolName, args|input}`` (also nested in a chunk ``payload``)."""
    parts: list[MessagePart] = []
    for call in value if isinstance(value, list) else []:
        if not isinstance(call, Mapping):
            continue
        if isinstance(call.get("payload"), Mapping):
            call = call["payload"]
        parts.append(tool_call_part(
            str(first(call, "toolCallId", "id") or ""),
            str(first(call, "toolName", "name") or ""),
            decode_arguments(first(call, "args", "input"), warnings, what),
        ))
    return parts


def _unserializable(value: Any, key: str, warnings: list[str]) -> bool:
    if isinstance(value, str) and value in UNSERIALIZABLE:
        warnings.append(f"{key}: Mastra recorded {value!r}; skipped")
        return True
    return False


def _provider(value: str | None) -> str | None:
    """``openai.chat`` / ``openai.responses`` → ``openai``."""
    return value.split(".", 1)[0] if value else None


# --- 0.x legacy telemetry ------------------------------------------------------------------


def _read_legacy(span: Span) -> SpanInfo:
    attributes = span.attributes
    info = new_info(span, NAME)
    operation = first_str(attributes, "mastra.operationId") or span.name
    prefix, _, method = span.name.partition(".")
    if prefix == "agent" and method in _LEGACY_AGENT_METHODS:
        info.kind = "agent"
        info.agent_name = first_str(attributes, "componentName")
        info.input_messages = _messages(span, f"{span.name}.argument.0", "user", info.warnings)
        info.output_messages = _answer(span, f"{span.name}.result", info.warnings)
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
    info.provider = _provider(as_str(model.get("modelProvider"))) if isinstance(model, Mapping) \
        else None
    request = metadata.get("request")
    body = request.get("body") if isinstance(request, Mapping) else None
    sent = body.get("messages") if isinstance(body, Mapping) else None
    if isinstance(sent, list):
        info.system, info.input_messages = split_system(parse_messages(
            _with_elided_calls(sent), f"{span.span_id}-in", info.warnings, key,
            created_at=timestamp(span.start_time_ns),
        ))
    info.output_messages = _output_message(span, output, info.warnings, key)
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
            for later in messages[index + 1:]:
                if not isinstance(later, Mapping) or later.get("role") != "tool":
                    break
                ids.append(later.get("tool_call_id"))
            message = {**message, "tool_calls": [
                {"id": i, "function": {"name": "", "arguments": None}} for i in ids if i
            ]}
        rebuilt.append(message)
    return rebuilt


def _read_legacy_model_call(span: Span, info: SpanInfo) -> None:
    """``stream.*`` keys: the messages sent (without the system prompt), reply and usage."""
    attributes = span.attributes
    warnings = info.warnings
    info.agent_name = first_str(attributes, "componentName")
    info.model = first_str(attributes, "stream.response.model", "aisdk.model.id")
    info.provider = _provider(first_str(attributes, "aisdk.model.provider"))
    info.system, info.input_messages = split_system(
        _messages(span, "stream.prompt.messages", "user", warnings)
    )
    if attributes.get("stream.prompt.tools") is not None:
        info.tools = parse_tool_definitions(
            attributes["stream.prompt.tools"], warnings, "stream.prompt.tools"
        )
    parts = _tool_call_parts(
        load_json(
            attributes.get("stream.response.toolCalls"), warnings, "stream.response.toolCalls"
        ),
        warnings, "stream.response.toolCalls",
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
    if _unserializable(raw_result, "stream.toolCall.result", info.warnings):
        raw_result = None
    result, is_error = decode_result(raw_result)
    failed = is_error or info.status == "error"
    return ToolInvocation(
        tool_call_id=first_str(attributes, "stream.toolCall.toolCallId") or "",
        tool_name=first_str(attributes, "stream.toolCall.toolName") or "",
        args=decode_arguments(attributes.get("stream.toolCall.args"), info.warnings,
                              "stream.toolCall"),
        result=result,
        state="output-error" if failed else ("result" if raw_result is not None else "call"),
        is_error=failed or None,
        error_text=info.error if failed else None,
    )


# --- facts spread over several spans -------------------------------------------------------


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Move facts Mastra records on one span to the span the run model expects them on.

    * 1.x: a ``chat`` span gets its step's input messages and tool calls (its own output shows
      text only), then the reasoning of its generation, placed on the ``chat`` span whose
      chunks streamed that text. A generation with no ``chat`` span below (versions before
      ``model_inference``) is itself the LLM call.
    * 0.x: an agent method that delegates to another (``generate`` → ``generateVNext``) is one
      run, not two; the tools offered (on ``…aisdk.doStream``) go to the model call; when the
      loop's steps were traced (``….step.llm-execution``) they are the LLM calls, not the loop;
      the thread title memory generates is no step of the agent.
    """
    types = {span.span_id: _span_type(span) for span, _ in read}
    infos = {info.span_id: info for _, info in read}
    children: dict[str, list[SpanInfo]] = {}
    for info in infos.values():
        children.setdefault(info.parent_span_id or "", []).append(info)
    _drop_title_generation(read, children)
    for info in infos.values():
        parent = infos.get(info.parent_span_id or "")
        if info.kind == "llm" and parent is not None and types[parent.span_id] == "model_step":
            _take_step_facts(info, parent)
        elif info.kind == "agent" and types[info.span_id] is None:
            _merge_delegated_agent(info, infos)
        elif info.kind == "other" and info.tools and types[info.span_id] is None:
            _give_tools_to_model_call(info, infos, children)
    _refine_legacy_steps(read, infos)
    for info in infos.values():
        if types[info.span_id] in _GENERATION_TYPES:
            if any(d.kind == "llm" for d in _descendants(info, children)):
                _place_reasoning(info, children)
            else:
                info.kind = "llm"


def _drop_title_generation(
    read: list[tuple[Span, SpanInfo]], children: dict[str, list[SpanInfo]]
) -> None:
    """0.x: the model loop memory runs to title a new thread (``agent.genTitle``, after the
    answer, under the agent span) is bookkeeping, not the agent's work. Read as steps, its reply
    became the agent's final answer (the title judged as the answer) and its tokens doubled the
    turn's usage (232/46 where ``agent.stream.result`` says 116/23)."""
    for span, info in read:
        if span.name not in _LEGACY_TITLE:
            continue
        calls = [d for d in _descendants(info, children) if d.kind in ("llm", "tool")]
        for call in calls:
            call.kind = "other"
        if calls:
            info.warnings.append("Mastra memory's thread title: its model calls are no steps "
                                 "of the agent")


def _legacy_operation(span: Span) -> str:
    return first_str(span.attributes, "mastra.operationId") or span.name


def _refine_legacy_steps(read: list[tuple[Span, SpanInfo]], infos: dict[str, SpanInfo]) -> None:
    """0.x: the traced loop steps replace the loop spans as LLM calls.

    ``mastra.stream`` (and ``….aisdk.doStream``) hold one step's usage and reply, so reading
    them as the LLM call lost the other steps (usage 142/23 of 258/46, one call for two, the
    answer before the tool call it used). The steps take the tools the loop was offered, and
    the tool calls the later steps were sent back get the names and arguments the earlier
    steps' outputs gave them.
    """
    steps = [info for span, info in read
             if info.kind == "llm" and _legacy_operation(span).endswith(_LEGACY_STEP)]
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
        if len(calls) == 1 and whole is not None and (
            calls[0].usage is None or calls[0].usage.total_tokens < whole.total_tokens
        ):
            calls[0].usage = whole.model_copy()
            calls[0].warnings.append("usage of the last step only; the agent result's total used")


def _span_type(span: Span) -> str | None:
    return as_str(span.attributes.get("mastra.span.type"))


def _take_step_facts(chat: SpanInfo, step: SpanInfo) -> None:
    if not chat.input_messages:
        chat.input_messages = list(step.input_messages)
        chat.system = chat.system or list(step.system)
    step_calls = [p for m in step.output_messages for p in m.content.parts if p.tool_invocation]
    if not chat.output_messages:
        chat.output_messages = list(step.output_messages)
    elif step_calls and not any(
        p.tool_invocation for m in chat.output_messages for p in m.content.parts
    ):
        last = chat.output_messages[-1]
        chat.output_messages[-1] = _with_parts(last, [*last.content.parts, *step_calls])


def _descendants(info: SpanInfo, children: dict[str, list[SpanInfo]]) -> list[SpanInfo]:
    found: list[SpanInfo] = []
    stack = list(children.get(info.span_id, []))
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(children.get(node.span_id, []))
    return found


def _place_reasoning(generation: SpanInfo, children: dict[str, list[SpanInfo]]) -> None:
    """Reasoning of a generation onto the ``chat`` span that streamed it (else the first)."""
    texts = [
        part.reasoning
        for message in generation.output_messages
        for part in message.content.parts
        if part.type == "reasoning" and part.reasoning
    ]
    chats = [chat for chat in _descendants(generation, children) if chat.kind == "llm"]
    if not texts or not chats:
        return
    chats.sort(key=lambda c: c.start_time_ns)
    for text in texts:
        target = next(
            (
                chat
                for chat in chats
                if any(
                    text.strip() == (m.content.content or "").strip()
                    for chunk in children.get(chat.span_id, [])
                    for m in chunk.output_messages
                )
            ),
            chats[0],
        )
        if any(p.reasoning == text for m in target.output_messages for p in m.content.parts):
            continue
        if not target.output_messages:
            target.output_messages = [
                build_message(f"{target.span_id}-out-0", "assistant", [],
                              timestamp(target.end_time_ns))
            ]
        first_message = target.output_messages[0]
        target.output_messages[0] = _with_parts(
            first_message, [reasoning_part(text), *first_message.content.parts]
        )


def _with_parts(message: Message, parts: list[MessagePart]) -> Message:
    return build_message(message.id, message.role, parts, message.created_at)


def _merge_delegated_agent(agent: SpanInfo, infos: dict[str, SpanInfo]) -> None:
    parent = infos.get(agent.parent_span_id or "")
    while parent is not None:
        if parent.kind == "agent" and parent.agent_name == agent.agent_name:
            agent.kind = "other"
            if not parent.output_messages:
                parent.output_messages = agent.output_messages
            return
        parent = infos.get(parent.parent_span_id or "")


def _give_tools_to_model_call(
    holder: SpanInfo, infos: dict[str, SpanInfo], children: dict[str, list[SpanInfo]]
) -> None:
    parent = infos.get(holder.parent_span_id or "")
    candidates = [parent] if parent is not None else []
    candidates += children.get(holder.parent_span_id or "", [])
    model_call = next((c for c in candidates if c is not None and c.kind == "llm"), None)
    if model_call is not None and not model_call.tools:
        model_call.tools = list(holder.tools)
