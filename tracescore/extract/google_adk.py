"""Google ADK's built-in telemetry (google-adk 2.x, tracer scope ``gcp.vertex.agent``).

ADK writes GenAI spans (``invoke_workflow``, ``invoke_agent``, ``generate_content``,
``execute_tool``), so the GenAI module reads each span; this module adds what ADK does its
own way:

* message content is captured only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``,
  and then only on the ``gen_ai.client.inference.operation.details`` log record of each model
  call: the ``execute_tool`` span never carries its arguments or result. Each tool span gets
  them here from the model calls of its trace, by call id, so a tool run is not empty;
* a tool error that ADK's ``ReflectAndRetryToolPlugin`` handled reaches the model as an
  ordinary tool response (``response_type: ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN``) and
  leaves the tool span's status unset: it is read as the failed call it was.

With the default settings no content is sent at all: the runs keep the agent's name, model,
tools offered and called (names and ids), usage and conversation id, with empty messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tracescore.extract import genai
from tracescore.extract.base import as_str
from tracescore.extract.model import Message, SpanInfo, ToolInvocation
from tracescore.spans import LogRecord, Span

NAME = "google-adk"

SCOPE = "gcp.vertex.agent"
_PLUGIN_FAILURE = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"
_RESOLVED = frozenset({"result", "output-error"})


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = genai.read(span, logs)
    info.convention = NAME
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Mark plugin-handled tool failures, then give each tool span the arguments and outcome
    the model calls of the trace show for its call id."""
    calls: dict[str, ToolInvocation] = {}
    outcomes: dict[str, ToolInvocation] = {}
    for _, info in read:
        if info.kind != "llm":
            continue
        for invocation in _invocations(info.input_messages):
            if invocation.state in _RESOLVED:
                _mark_plugin_failure(invocation)
                outcomes.setdefault(invocation.tool_call_id, invocation)
        for invocation in _invocations(info.output_messages):
            calls.setdefault(invocation.tool_call_id, invocation)
    for _, info in read:
        tool = info.tool_call
        if info.kind != "tool" or tool is None or not tool.tool_call_id:
            continue
        call = calls.get(tool.tool_call_id)
        if tool.args in (None, {}, "") and call is not None:
            tool.args = call.args
        outcome = outcomes.get(tool.tool_call_id)
        if tool.state == "call" and outcome is not None:
            tool.result = outcome.result
            tool.state = outcome.state
            tool.is_error = outcome.is_error
            tool.error_text = outcome.error_text
            if outcome.is_error:
                info.status = "error"
                info.error = info.error or outcome.error_text


def _invocations(messages: list[Message]) -> Iterator[ToolInvocation]:
    for message in messages:
        for part in message.content.parts:
            if part.tool_invocation is not None and part.tool_invocation.tool_call_id:
                yield part.tool_invocation


def _mark_plugin_failure(invocation: ToolInvocation) -> None:
    """A ``ReflectAndRetryToolPlugin`` response (``ToolFailureResponse``) as the failure it
    reports: ``error_type: error_details`` is the error text."""
    result: Any = invocation.result
    if not isinstance(result, dict) or result.get("response_type") != _PLUGIN_FAILURE:
        return
    invocation.state = "output-error"
    invocation.is_error = True
    details = [as_str(result.get("error_type")), as_str(result.get("error_details"))]
    invocation.error_text = ": ".join(d for d in details if d) or _PLUGIN_FAILURE
