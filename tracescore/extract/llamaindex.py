"""LlamaIndex through openinference-instrumentation-llama-index (span formats: LlamaIndex).

The spans are OpenInference, read by :mod:`tracescore.extract.openinference`; this module
corrects what LlamaIndex does its own way:

* a workflow agent (``FunctionAgent``, ``ReActAgent``, ``AgentWorkflow``…) is a Workflow, so its
  root is a ``CHAIN`` span (``FunctionAgent.run``) whose input is the workflow's configuration
  and whose output a cut ``StopEvent`` repr. Its name is only in the reprs of its step spans
  (``AgentInput(…, current_agent_name='WeatherBot')``): the ``*.run`` CHAIN whose children name
  an agent so is the agent, and its own input and output are not messages;
* every method of an LLM object gets an ``LLM`` span: ``_prepare_chat_with_tools`` and the outer
  ``astream_chat`` (whose ``input.value`` is a list of ``ChatMessage(…)`` reprs) only wrap the
  call. The span that made the call carries ``llm.input_messages`` / ``llm.output_messages``
  (or ``llm.prompts``, or token counts); an LLM span with none of them is read as ``other``;
* a ``TOOL`` span's input is ``{"kwargs": {…}}`` and its output a ``ToolOutput`` whose result
  is ``raw_output`` (``is_error`` marks a failure LlamaIndex caught); its call id is only in the
  repr of the ``call_tool`` step above it (``ToolCall(…, tool_id='call_1')``).

Streamed chat calls (FunctionAgent's default) carry no token counts: usage stays unknown.
"""

from __future__ import annotations

import re
from typing import Any

from tracescore.extract import openinference
from tracescore.extract.base import as_str, load_json, new_info
from tracescore.extract.genai_messages import decode_result
from tracescore.extract.messages import executed_call
from tracescore.extract.model import SpanInfo
from tracescore.spans import LogRecord, Span

NAME = "openinference-llamaindex"

SCOPE = "openinference.instrumentation.llama_index"
_CALL_KEYS = ("llm.input_messages.", "llm.output_messages.", "llm.prompts", "llm.token_count.")
_AGENT_NAME = re.compile(r"current_agent_name=(?:'([^'\\\n]{1,200})'|\"([^\"\\\n]{1,200})\")")
_TOOL_ID = re.compile(r"tool_id=(?:'([^'\\\n]{1,200})'|\"([^\"\\\n]{1,200})\")")
_REPR_CHARS = 20_000  # the names sit near a repr's start; long histories follow them


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE and "openinference.span.kind" in span.attributes


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    kind = span.attributes.get("openinference.span.kind")
    if kind == "CHAIN" or (kind == "LLM" and not _made_the_call(span)):
        # Workflow steps and wrappers: their input and output are reprs, not messages.
        return new_info(span, NAME)
    info = openinference.read(span, logs)
    info.convention = NAME
    if info.kind == "tool":
        _read_tool(span, info)
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Name the workflow agents, and give each tool call the id its ``call_tool`` step holds."""
    spans = {span.span_id: span for span, _ in read}
    infos = {span.span_id: info for span, info in read}
    for span, info in read:
        parent = spans.get(span.parent_span_id or "")
        if parent is None:
            continue
        if info.kind == "tool" and info.tool_call is not None and not info.tool_call.tool_call_id:
            info.tool_call.tool_call_id = _repr_value(parent, _TOOL_ID) or ""
        parent_info = infos[parent.span_id]
        if (
            parent_info.kind == "other"
            and parent.name.endswith(".run")
            and (parent_info.agent_name is None and (name := _repr_value(span, _AGENT_NAME)))
        ):
            parent_info.kind = "agent"
            parent_info.agent_name = name


def _made_the_call(span: Span) -> bool:
    """Whether an LLM span is the chat or completion call itself, not a method wrapping it."""
    return any(key.startswith(_CALL_KEYS) for key in span.attributes)


def _read_tool(span: Span, info: SpanInfo) -> None:
    """Arguments out of ``{"kwargs": …}``, the result out of its ``ToolOutput``."""
    call = info.tool_call
    if call is None:
        return
    args = call.args
    if (
        isinstance(args, dict)
        and set(args) <= {"args", "kwargs"}
        and isinstance(args.get("kwargs"), dict)
        and not args.get("args")
    ):
        args = args["kwargs"]
    output = load_json(span.attributes.get("output.value"), [], "output.value")
    result, failed = call.result, call.state == "output-error"
    error = call.error_text if failed else None
    if isinstance(output, dict) and "raw_output" in output and "is_error" in output:
        result, _ = decode_result(output["raw_output"])
        if output["is_error"] is True:
            failed, error = True, as_str(result) or "error"
    info.tool_call = executed_call(
        call.tool_call_id, call.tool_name, args, result, failed=failed, error=error
    )


def _repr_value(span: Span, pattern: re.Pattern[str]) -> str | None:
    """The first value ``pattern`` finds in the reprs of a span's input or output."""
    for key in ("input.value", "output.value"):
        value: Any = span.attributes.get(key)
        if isinstance(value, str) and (found := pattern.search(value, 0, _REPR_CHARS)):
            return found.group(1) or found.group(2)
    return None
