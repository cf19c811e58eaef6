"""The fields every kind of run fills alike: the span's ids, times and status, its warnings, the
tool results as context, tools, token usage and the single output message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tracescore.extract.base import json_text, timestamp
from tracescore.extract.messages import build_message, text_part
from tracescore.extract.model import (
    AgentRun,
    ContextDocument,
    Message,
    TokenUsage,
    ToolDefinition,
    ToolInvocation,
)
from tracescore.extract.runs.trajectory import Trajectory
from tracescore.extract.runs.tree import SpanNode
from tracescore.spans import Trace


def base_run(trace: Trace, node: SpanNode, kind: str, **fields: Any) -> AgentRun:
    """The run of a span with what every kind of run reads alike; ``fields`` (a kind's own,
    worked out beforehand) replace or add to those."""
    span, info = node.span, node.info
    agent_name = info.agent_name
    if agent_name is None:
        agent_name = next(
            (a.info.agent_name or a.info.name for a in node.ancestors() if a.kind == "agent"), None
        )
    common: dict[str, Any] = {
        "trace_id": trace.trace_id,
        "span_id": span.span_id,
        "kind": kind,
        "convention": info.convention,
        "agent_name": agent_name,
        "service_name": span.service_name,
        "model": info.model,
        "provider": info.provider,
        "start_time": timestamp(span.start_time_ns),
        "end_time": timestamp(span.end_time_ns),
        "status": info.status,
        "error": info.error,
        "span_ids": [span.span_id],
        "attributes": dict(span.attributes),
        "resource_attributes": dict(span.resource.attributes),
        "warnings": span_warnings(node),
    }
    common.update(fields)
    return AgentRun.built(**common)


def span_warnings(node: SpanNode) -> list[str]:
    return [f"span {node.span.span_id} ({node.span.name}): {w}" for w in node.info.warnings]


def tool_result_documents(invocations: Iterable[ToolInvocation]) -> list[ContextDocument]:
    return [
        ContextDocument(
            content=json_text(inv.result),
            source=inv.tool_name or None,
            kind="tool_result",
            metadata={"tool_call_id": inv.tool_call_id} if inv.tool_call_id else {},
        )
        for inv in invocations
        if inv.state == "result" and inv.result is not None
    ]


def merge_tools(groups: Iterable[list[ToolDefinition]]) -> list[ToolDefinition]:
    """Tool definitions by name; a bare name (Mastra) is upgraded by a fuller definition."""
    merged: dict[str, ToolDefinition] = {}
    for group in groups:
        for tool in group:
            known = merged.get(tool.name)
            if known is None or (known.parameters is None and tool.parameters is not None):
                merged[tool.name] = tool
    return list(merged.values())


def sum_usage(nodes: Iterable[SpanNode]) -> TokenUsage | None:
    usages = [n.info.usage for n in nodes if n.info.usage is not None]
    return TokenUsage.total_of(usages) if usages else None


def tool_outcome(node: SpanNode) -> ToolInvocation:
    """What a tool span returned."""
    if node.info.tool_call is not None:
        return node.info.tool_call
    return ToolInvocation(tool_call_id="", tool_name=node.info.name, state="call")


def tool_outcomes(node: SpanNode) -> list[ToolInvocation]:
    """What a tool span returned, one outcome per call it ran (most run one)."""
    return [tool_outcome(node), *node.info.more_tool_calls]


def run_output(node: SpanNode, trajectory: Trajectory, final: str) -> list[Message]:
    """The run's single assistant message: every step's parts; ``content`` = the final answer."""
    if final and not trajectory.has_text():
        trajectory.parts.append(text_part(final))
    if not trajectory.parts:
        return []
    message = build_message(
        f"{node.span.span_id}-output",
        "assistant",
        trajectory.parts,
        timestamp(node.span.end_time_ns),
    )
    message.content.content = final or None
    return [message]
