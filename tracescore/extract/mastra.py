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

This module reads 1.x and puts the facts of both formats where the run model expects them
(:func:`refine`); 0.x spans are read by :mod:`tracescore.extract.mastra_legacy`, the values both
record by :mod:`tracescore.extract.mastra_values`.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracescore.extract import genai
from tracescore.extract.base import as_str, first_str, load_json, new_info, timestamp
from tracescore.extract.genai_messages import parse_tool_definitions
from tracescore.extract.mastra_legacy import (
    drop_title_generation,
    give_tools_to_model_call,
    merge_delegated_agent,
    read_legacy,
    refine_legacy_steps,
)
from tracescore.extract.mastra_values import (
    NAME as NAME,  # the convention's name, read by the registry as mastra.NAME
)
from tracescore.extract.mastra_values import (
    answer,
    descendants,
    instructions,
    messages,
    provider,
    step_output,
)
from tracescore.extract.messages import build_message, reasoning_part, split_system
from tracescore.extract.model import Message, MessagePart, SpanInfo, SpanKindName
from tracescore.spans import LogRecord, Span

EXPORTER_SCOPE = "@mastra/otel-exporter"
_TOOL_SPAN_TYPES = frozenset({"tool_call", "mcp_tool_call"})
# A whole model call (all its steps); ``llm_generation`` is its name before Mastra 1.x.
_GENERATION_TYPES = frozenset({"model_generation", "llm_generation"})
_KINDS: dict[str, SpanKindName] = {
    "model_inference": "llm",
    **dict.fromkeys(_TOOL_SPAN_TYPES, "tool"),
}


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
    return read_legacy(span)


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
    info.provider = provider(info.provider)
    warnings = info.warnings
    if info.kind == "tool":
        info.tool_call = genai.tool_call_from(info, attributes)
    elif span_type in _GENERATION_TYPES or span_type == "model_step":
        # Kept on an ``other`` info for :func:`refine`; the assembler never reads them here.
        if f"mastra.{span_type}.input" in attributes:
            info.system, info.input_messages = split_system(
                messages(span, f"mastra.{span_type}.input", "user", warnings)
            )
        if f"mastra.{span_type}.output" in attributes:
            info.output_messages = step_output(span, f"mastra.{span_type}.output", warnings)
        metadata = load_json(attributes.get("mastra.metadata.modelMetadata"), [], "")
        if isinstance(metadata, Mapping):
            info.model = info.model or as_str(metadata.get("modelId"))
            info.provider = info.provider or provider(as_str(metadata.get("modelProvider")))
    elif span_type == "model_chunk":
        info.output_messages = answer(span, "mastra.model_chunk.output", warnings)
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
    info.system = instructions(attributes.get("gen_ai.system_instructions"), warnings)
    info.input_messages = messages(span, "mastra.agent_run.input", "user", warnings)
    info.output_messages = answer(span, "mastra.agent_run.output", warnings)
    if attributes.get("gen_ai.tool.definitions") is not None:
        info.tools = parse_tool_definitions(
            attributes["gen_ai.tool.definitions"], warnings, "gen_ai.tool.definitions"
        )
    return info


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
    drop_title_generation(read, children)
    for info in infos.values():
        parent = infos.get(info.parent_span_id or "")
        if info.kind == "llm" and parent is not None and types[parent.span_id] == "model_step":
            _take_step_facts(info, parent)
        elif info.kind == "agent" and types[info.span_id] is None:
            merge_delegated_agent(info, infos)
        elif info.kind == "other" and info.tools and types[info.span_id] is None:
            give_tools_to_model_call(info, infos, children)
    refine_legacy_steps(read, infos)
    for info in infos.values():
        if types[info.span_id] in _GENERATION_TYPES:
            if any(d.kind == "llm" for d in descendants(info, children)):
                _place_reasoning(info, children)
            else:
                info.kind = "llm"


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


def _place_reasoning(generation: SpanInfo, children: dict[str, list[SpanInfo]]) -> None:
    """Reasoning of a generation onto the ``chat`` span that streamed it (else the first)."""
    texts = [
        part.reasoning
        for message in generation.output_messages
        for part in message.content.parts
        if part.type == "reasoning" and part.reasoning
    ]
    chats = [chat for chat in descendants(generation, children) if chat.kind == "llm"]
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
                build_message(
                    f"{target.span_id}-out-0", "assistant", [], timestamp(target.end_time_ns)
                )
            ]
        first_message = target.output_messages[0]
        target.output_messages[0] = _with_parts(
            first_message, [reasoning_part(text), *first_message.content.parts]
        )


def _with_parts(message: Message, parts: list[MessagePart]) -> Message:
    return build_message(message.id, message.role, parts, message.created_at)
