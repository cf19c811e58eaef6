"""OpenInference (Arize Phoenix) spans (SPAN_FORMATS §3).

Every span says what it is in ``openinference.span.kind`` and flattens its content into indexed
attributes (``llm.input_messages.{i}.message.*``), which are re-assembled here into the nested
OpenAI-style shape the shared message parser reads. When an instrumentor recorded only the raw
request/response bodies (``input.value``/``output.value``), the messages are read from those.

With ``OPENINFERENCE_ENABLE_GENAI_SEMCONV`` the same spans also carry GenAI attributes; this
module claims those spans first and reads the OpenInference attributes, falling back to the
GenAI mirror only for content the OpenInference ones lack, so nothing is read twice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracescore.extract import genai
from tracescore.extract.base import (
    as_str,
    first,
    first_str,
    indexed,
    load_json,
    new_info,
    timestamp,
    usage_from,
)
from tracescore.extract.chat_bodies import body_messages
from tracescore.extract.genai_messages import (
    decode_arguments,
    decode_result,
    find_reasoning,
    langchain_tool_message,
    parse_message,
    parse_tool_definition,
    parse_tool_definitions,
)
from tracescore.extract.messages import build_message, executed_call, reasoning_part, split_system
from tracescore.extract.model import (
    ContextDocument,
    Message,
    SpanInfo,
    SpanKindName,
    ToolInvocation,
)
from tracescore.spans import LogRecord, Span

NAME = "openinference"

_HANDOFF_PREFIX = "handoff to "  # openai-agents' handoff TOOL spans
_KINDS: dict[str, SpanKindName] = {
    "LLM": "llm",
    "AGENT": "agent",
    "TOOL": "tool",
    "RETRIEVER": "retrieval",
    "RERANKER": "retrieval",
}


def detect(span: Span) -> bool:
    return "openinference.span.kind" in span.attributes


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = new_info(span, NAME)
    attributes = span.attributes
    span_kind = (as_str(attributes.get("openinference.span.kind")) or "").upper()
    info.kind = _KINDS.get(span_kind, "other")
    info.model = first_str(attributes, "llm.model_name")
    info.provider = first_str(attributes, "llm.provider", "llm.system")
    info.usage = usage_from(
        attributes,
        input_tokens=("llm.token_count.prompt",),
        output_tokens=("llm.token_count.completion",),
        total_tokens=("llm.token_count.total",),
        reasoning_tokens=("llm.token_count.completion_details.reasoning",),
        cached_input_tokens=("llm.token_count.prompt_details.cache_read",),
    )
    if info.kind == "agent":
        info.agent_name = first_str(attributes, "agent.name", "graph.node.id") or span.name
    if info.kind in ("llm", "agent", "other"):
        _read_messages(span, info)
    if info.kind == "llm":
        info.tools = [
            tool
            for item in indexed(attributes, "llm.tools.")
            if (
                tool := parse_tool_definition(
                    item.get("tool.json_schema"), info.warnings, "llm.tools.N.tool.json_schema"
                )
            )
        ]
        if not info.tools and "gen_ai.tool.definitions" in attributes:
            info.tools = parse_tool_definitions(
                attributes["gen_ai.tool.definitions"], info.warnings, "gen_ai.tool.definitions"
            )
    if info.kind == "tool":
        info.tool_call = _tool_call(span, info)
    if info.kind == "retrieval":
        prefix = (
            "retrieval.documents." if span_kind == "RETRIEVER" else "reranker.output_documents."
        )
        info.documents = _documents(attributes, prefix, info.warnings, span.name)
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Find LangChain / LangGraph agents, which are CHAIN spans, not AGENT spans (§3).

    ``create_agent(name=…)`` names the graph's root CHAIN after the agent and puts
    ``lc_agent_name`` in the metadata LangChain hands down to the spans below; an unnamed graph
    still marks its nodes with ``langgraph_node``. The top-most CHAIN so named (or, for an
    unnamed graph, the root CHAIN) becomes the agent span.
    """
    names: set[str] = set()
    graph = False
    for span, _ in read:
        metadata = span.attributes.get("metadata")
        if isinstance(metadata, str) and ("lc_agent_name" in metadata or "langgraph" in metadata):
            decoded = load_json(metadata, [], "metadata")
            if isinstance(decoded, dict):
                graph = graph or "langgraph_node" in decoded
                if isinstance(decoded.get("lc_agent_name"), str):
                    names.add(decoded["lc_agent_name"])
    if not names and not graph:
        return
    chains = {
        span.span_id: span
        for span, info in read
        if as_str(span.attributes.get("openinference.span.kind")) == "CHAIN"
    }
    infos = {info.span_id: info for _, info in read}
    if graph:
        _demote_named_nodes(read, names)
    for span in chains.values():
        parent = chains.get(span.parent_span_id or "")
        named = span.name in names and (parent is None or parent.name != span.name)
        unnamed_root = not names and span.parent_span_id not in infos
        if named or unnamed_root:
            infos[span.span_id].kind = "agent"
            infos[span.span_id].agent_name = span.name


def _demote_named_nodes(read: list[tuple[Span, SpanInfo]], names: set[str]) -> None:
    """A graph node that is an AGENT span only by its name is a step of its graph.

    OpenInference's LangChain tracer marks every run whose name contains "agent" an AGENT,
    so the ``agent`` node of a hand-built LangGraph (the model-calling node of LangGraph's own
    tutorials) would be an agent per step, and the graph a caller of them. A span that is
    the node itself (its ``langgraph_node`` metadata is its own name) below another span, and
    no agent named by ``create_agent``, is read as the chain it is."""
    ids = {span.span_id for span, _ in read}
    for span, info in read:
        metadata = span.attributes.get("metadata")
        if (
            info.kind != "agent"
            or span.name in names
            or span.parent_span_id not in ids
            or not isinstance(metadata, str)
            or "langgraph_node" not in metadata
        ):
            continue
        decoded = load_json(metadata, [], "metadata")
        if isinstance(decoded, dict) and decoded.get("langgraph_node") == span.name:
            info.kind = "other"
            info.agent_name = None


def _read_messages(span: Span, info: SpanInfo) -> None:
    attributes = span.attributes
    warnings = info.warnings
    started, ended = timestamp(span.start_time_ns), timestamp(span.end_time_ns)
    inputs = [
        _message(raw, f"{span.span_id}-in-{i}", warnings, "llm.input_messages", "user", started)
        for i, raw in enumerate(indexed(attributes, "llm.input_messages.", warnings))
    ]
    outputs = [
        _message(
            raw, f"{span.span_id}-out-{i}", warnings, "llm.output_messages", "assistant", ended
        )
        for i, raw in enumerate(indexed(attributes, "llm.output_messages.", warnings))
    ]
    if (
        info.kind == "llm"
        and not (inputs or outputs)
        and any(key in attributes for key in genai.CONTENT_KEYS)
    ):
        genai.fill_from_attributes(info, attributes)  # the GenAI mirror, read once instead
        info.kind = "llm"
        return
    if not inputs and "input.value" in attributes:
        inputs = body_messages(
            attributes["input.value"], "input.value", span.span_id, "in", info, started
        )
    if not outputs and "output.value" in attributes:
        outputs = body_messages(
            attributes["output.value"], "output.value", span.span_id, "out", info, ended
        )
    system, info.input_messages = split_system(m for m in inputs if m is not None)
    info.system.extend(system)  # after Responses ``instructions``, when the body had them
    info.output_messages = [m for m in outputs if m is not None]
    if info.kind == "llm":
        info.output_messages = _with_body_reasoning(info.output_messages, attributes)


def _with_body_reasoning(outputs: list[Message], attributes: Mapping[str, Any]) -> list[Message]:
    """Put back reasoning the flattened attributes dropped but ``output.value`` kept (§3)."""
    body = attributes.get("output.value")
    if (
        not outputs
        or not isinstance(body, str)
        or "reasoning" not in body
        or any(p.type == "reasoning" for m in outputs for p in m.content.parts)
    ):
        return outputs
    texts = find_reasoning(load_json(body, [], "output.value"))
    if not texts:
        return outputs
    head = outputs[0]
    parts = [reasoning_part(t) for t in texts] + head.content.parts
    rebuilt = build_message(head.id, head.role, parts, head.created_at, head.content.metadata)
    return [rebuilt, *outputs[1:]]


def _message(
    raw: dict[str, Any], message_id: str, warnings: list[str], what: str, role: str, created_at: Any
) -> Message | None:
    """One flattened ``message.*`` group as an OpenAI-style dict, then parsed."""
    indexed_contents = indexed(raw, "message.contents.", warnings)
    contents = [
        {
            "type": c.get("message_content.type") or "text",
            "text": c.get("message_content.text"),
            "image_url": c.get("message_content.image.image.url"),
        }
        for c in indexed_contents
    ]
    # BeeAI writes a tool message's call id beside its content, not on the message.
    call_id = raw.get("message.tool_call_id") or next(
        (c["message.tool_call_id"] for c in indexed_contents if "message.tool_call_id" in c), None
    )
    calls = [
        {
            "id": c.get("tool_call.id"),
            "function": {
                "name": c.get("tool_call.function.name"),
                "arguments": c.get("tool_call.function.arguments"),
            },
        }
        for c in indexed(raw, "message.tool_calls.", warnings)
    ]
    message = {
        "role": raw.get("message.role") or role,
        "content": contents or raw.get("message.content"),
        "tool_calls": calls,
        "tool_call_id": call_id,
        "name": raw.get("message.name"),
    }
    return parse_message(
        message, message_id, warnings, what, default_role=role, created_at=created_at
    )


def _tool_call(span: Span, info: SpanInfo) -> ToolInvocation:
    """A TOOL span: name, arguments (``input.value``), result (``output.value``), no id usually.

    LangChain records the call id only inside the serialized ``ToolMessage`` it returns.
    """
    attributes = span.attributes
    handoff = None if "tool.name" in attributes else _handoff_tool_name(span.name)
    args: Any = decode_arguments(first(attributes, "input.value"), info.warnings, "input.value")
    if handoff:
        args = {}  # a handoff's input.value names the agent handing off, not arguments
    elif (
        args == {}
        and "gen_ai.tool.call.arguments" in attributes
        and (attributes["gen_ai.tool.call.arguments"] != attributes.get("tool.parameters"))
    ):  # the GenAI mirror writes the schema here (§3): only trust it when it differs
        args = decode_arguments(
            attributes["gen_ai.tool.call.arguments"], info.warnings, "gen_ai.tool.call"
        )
    raw = load_json(first(attributes, "output.value"), [], "output.value")
    result, is_error = decode_result(raw)
    call_id = first_str(attributes, "tool_call.id", "tool.id", "gen_ai.tool.call.id") or ""
    message = langchain_tool_message(raw)
    if message is not None and not call_id:
        call_id = as_str(message.get("tool_call_id")) or ""
    return executed_call(
        call_id,
        first_str(attributes, "tool.name") or handoff or span.name,
        args,
        result,
        failed=is_error or info.status == "error",
        error=info.error,
    )


def _handoff_tool_name(span_name: str) -> str | None:
    """The tool an openai-agents handoff span (``handoff to WeatherBot``, no ``tool.name``)
    answers: the SDK's default ``transfer_to_weatherbot``. Without it the handoff reads as a
    call the LLM never made, and the LLM's real call as one never answered."""
    if not span_name.startswith(_HANDOFF_PREFIX):
        return None
    agent = span_name[len(_HANDOFF_PREFIX) :]
    return re.sub(r"[^a-zA-Z0-9_]", "_", re.sub(r"\s", "_", f"transfer_to_{agent}")).lower()


def _documents(
    attributes: Mapping[str, Any], prefix: str, warnings: list[str], source: str
) -> list[ContextDocument]:
    documents = []
    for raw in indexed(attributes, prefix, warnings):
        content = raw.get("document.content")
        if not isinstance(content, str) or not content:
            continue
        metadata = load_json(raw.get("document.metadata"), warnings, f"{prefix}N.document.metadata")
        score = raw.get("document.score")
        documents.append(
            ContextDocument(
                content=content,
                source=as_str(raw.get("document.id")) or source,
                kind="retrieval",
                score=float(score) if isinstance(score, (int, float)) else None,
                metadata=metadata if isinstance(metadata, dict) else {},
            )
        )
    return documents
