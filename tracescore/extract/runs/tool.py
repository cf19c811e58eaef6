"""Tool runs: every tool span is a run whose input is its arguments and whose output its result."""

from __future__ import annotations

from tracescore.extract.base import json_text, timestamp
from tracescore.extract.messages import build_message, text_part
from tracescore.extract.model import AgentRun, MessagePart, RunInput
from tracescore.extract.runs.fields import base_run, tool_outcome, tool_result_documents
from tracescore.extract.runs.tree import SpanNode
from tracescore.spans import Trace


def tool_run(trace: Trace, node: SpanNode) -> AgentRun:
    run = base_run(trace, node, "tool")
    invocation = tool_outcome(node)
    args = invocation.args
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
    part = MessagePart(type="tool-invocation", tool_invocation=invocation)
    message = build_message(
        f"{node.span.span_id}-output", "assistant", [part], timestamp(node.span.end_time_ns)
    )
    if invocation.result is not None:
        message.content.content = json_text(invocation.result)
    run.output = [message]
    run.context = tool_result_documents([invocation])
    return run
