"""Tool runs: every tool span is a run whose input is its arguments and whose output its result.

A span that ran several calls at once (Haystack 2.x's ``ToolInvoker``) is one run too, its
calls' arguments and results in order: scores are keyed by trace and span, so one span is one
run."""

from __future__ import annotations

from typing import Any

from tracescore.extract.base import json_text, timestamp
from tracescore.extract.messages import build_message, text_part
from tracescore.extract.model import AgentRun, MessagePart, RunInput
from tracescore.extract.runs.fields import base_run, tool_outcomes, tool_result_documents
from tracescore.extract.runs.tree import SpanNode
from tracescore.spans import Trace


def tool_run(trace: Trace, node: SpanNode) -> AgentRun:
    run = base_run(trace, node, "tool")
    invocations = tool_outcomes(node)
    args: Any = invocations[0].args if len(invocations) == 1 else [i.args for i in invocations]
    run.input = RunInput(
        input_messages=[
            build_message(
                f"{node.span.span_id}-args",
                "user",
                [text_part(json_text(args))] if args not in (None, "", {}) else [],
                timestamp(node.span.start_time_ns),
            )
        ]
    )
    parts = [MessagePart(type="tool-invocation", tool_invocation=i) for i in invocations]
    message = build_message(
        f"{node.span.span_id}-output", "assistant", parts, timestamp(node.span.end_time_ns)
    )
    results = [i.result for i in invocations if i.result is not None]
    if results:
        message.content.content = json_text(results[0] if len(invocations) == 1 else results)
    run.output = [message]
    run.context = tool_result_documents(invocations)
    return run
