"""LangSmith's OpenTelemetry export (``LANGSMITH_OTEL_ENABLED``, optionally ``_OTEL_ONLY``).

LangSmith turns each LangChain / LangGraph run into a span of instrumentation scope
``langsmith`` with ``langsmith.span.kind`` (``chain``, ``llm``, ``tool``, ``retriever``…) and
GenAI-looking attributes, but its content is LangChain's, not GenAI's: ``gen_ai.prompt`` and
``gen_ai.completion`` hold the run's inputs and outputs as JSON, i.e. a chat model's
``{"messages": [[…]]}`` and ``{"generations": [[…]]}`` of serialized messages, a graph node's
``{"output": [Command]}``, a tool's arguments and ``{"output": ToolMessage}``. They are read with
the shared LangChain reader (:mod:`tracescore.extract.langchain`).

The agent: ``create_agent(name=…)`` names the graph's root chain after the agent and puts
``lc_agent_name`` into every span's metadata (``langsmith.metadata.lc_agent_name``); a graph
without a name still marks its nodes with ``langsmith.metadata.langgraph_node``, and its root
chain is the agent. The graph's nodes (``model``, ``tools``) are chains of no kind of their own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tracescore.extract.base import as_str, first_str, load_json, new_info, timestamp, usage_from
from tracescore.extract.chat_bodies import read_request, response_messages
from tracescore.extract.genai_messages import (
    decode_arguments,
    decode_result,
    parse_messages,
    parse_tool_definitions,
)
from tracescore.extract.langchain import langchain_messages
from tracescore.extract.messages import executed_call, split_system
from tracescore.extract.model import Message, SpanInfo, SpanKindName
from tracescore.spans import LogRecord, Span

NAME = "langsmith"

SCOPE = "langsmith"
_KIND = "langsmith.span.kind"
_AGENT_NAME = "langsmith.metadata.lc_agent_name"
_GRAPH_NODE = "langsmith.metadata.langgraph_node"
# LangSmith's run types; the rest (chain, retriever, prompt, parser, embedding) are read as no
# run of their own (a retriever's documents are not captured yet: no capture shows their shape).
_KINDS: dict[str, SpanKindName] = {"llm": "llm", "tool": "tool"}


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE and _KIND in span.attributes


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = new_info(span, NAME)
    attributes = span.attributes
    info.kind = _KINDS.get(as_str(attributes.get(_KIND)) or "", "other")
    info.model = first_str(attributes, "gen_ai.response.model", "gen_ai.request.model")
    info.provider = first_str(attributes, "gen_ai.system")
    info.usage = usage_from(
        attributes,
        input_tokens=("gen_ai.usage.input_tokens",),
        output_tokens=("gen_ai.usage.output_tokens",),
        total_tokens=("gen_ai.usage.total_tokens",),
    )
    if info.kind == "tool":
        _read_tool(span, info)
    elif info.kind == "llm" or _is_graph_root(span):
        _read_messages(span, info)
        if "gen_ai.tool.definitions" in attributes:
            info.tools = parse_tool_definitions(
                attributes["gen_ai.tool.definitions"], info.warnings, "gen_ai.tool.definitions"
            )
    if _is_graph_root(span):
        info.kind = "agent"
        info.agent_name = as_str(attributes.get(_AGENT_NAME)) or span.name
        info.provider = None  # ``langchain``: the framework, not the model's provider
    return info


def _is_graph_root(span: Span) -> bool:
    """The chain that is the agent: named after ``lc_agent_name``, or a graph's root chain."""
    attributes = span.attributes
    if attributes.get(_KIND) != "chain":
        return False
    name = attributes.get(_AGENT_NAME)
    if name is not None:
        return span.name == name and _GRAPH_NODE not in attributes
    return not span.parent_span_id and "langsmith.metadata.ls_integration" in attributes


def _read_messages(span: Span, info: SpanInfo) -> None:
    """A model call's request and response (LangChain's envelopes, or the OpenAI bodies a
    ``wrap_openai`` client records), or a graph's input and the messages it added."""
    attributes = span.attributes
    started, ended = timestamp(span.start_time_ns), timestamp(span.end_time_ns)
    prompt = load_json(attributes.get("gen_ai.prompt"), info.warnings, "gen_ai.prompt")
    completion = load_json(attributes.get("gen_ai.completion"), info.warnings, "gen_ai.completion")
    if info.kind == "llm":
        read_request(prompt, info, f"{span.span_id}-in", "gen_ai.prompt", started)
        info.output_messages = response_messages(
            completion, info, f"{span.span_id}-out", "gen_ai.completion", ended
        )
        return
    inputs = _messages(prompt, f"{span.span_id}-in", info, started)
    outputs = _messages(completion, f"{span.span_id}-out", info, ended)
    system, info.input_messages = split_system(inputs)
    info.system.extend(system)
    # A graph's output is its whole state: the messages it was given, then its own.
    outputs = outputs[len(inputs) :] if len(outputs) > len(inputs) else outputs
    info.output_messages = [m for m in outputs if m.role == "assistant"] or outputs


def _messages(
    value: Any, prefix: str, info: SpanInfo, created_at: datetime | None
) -> list[Message]:
    """LangChain's envelopes, else a plain message list (a graph invoked with role dicts)."""
    if value is None:
        return []
    found = langchain_messages(value, prefix, info.warnings, "gen_ai", created_at=created_at)
    if found is not None:
        return found
    return parse_messages(value, prefix, info.warnings, "gen_ai", created_at=created_at)


def _read_tool(span: Span, info: SpanInfo) -> None:
    """A tool run: its arguments in ``gen_ai.prompt``, the ``ToolMessage`` it returned in
    ``gen_ai.completion`` (``{"output": …}``), its call id in ``gen_ai.tool.call.id``."""
    attributes = span.attributes
    args = decode_arguments(attributes.get("gen_ai.prompt"), info.warnings, "gen_ai.prompt")
    if isinstance(args, dict) and set(args) == {"input"}:
        args = load_json(args["input"], [], "gen_ai.prompt input")  # a tool called with text
    output = load_json(attributes.get("gen_ai.completion"), info.warnings, "gen_ai.completion")
    if isinstance(output, dict) and set(output) == {"output"}:
        output = output["output"]
    result, is_error = decode_result(output)
    info.tool_call = executed_call(
        first_str(attributes, "gen_ai.tool.call.id") or "",
        first_str(attributes, "gen_ai.tool.name") or span.name,
        args,
        result,
        failed=is_error or info.status == "error",
        error=info.error,
    )
