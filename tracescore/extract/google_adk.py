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

The legacy schema (ADK 1.x, and 2.x with ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``) sends
content by default, in ADK's own attributes: a ``call_llm`` span holds the whole
``LlmRequest`` (``gcp.vertex.agent.llm_request``: Gemini ``contents``, ``config`` with the
system instruction and tools) and ``LlmResponse`` (``gcp.vertex.agent.llm_response``), a tool
span ``gcp.vertex.agent.tool_call_args`` / ``tool_response``. The model call below
``call_llm`` repeats its usage and logs its messages as ``<elided>``: ``call_llm`` is the
step, and elided messages are no content.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tracescore.extract import genai
from tracescore.extract.base import as_str, load_json, timestamp, usage_from
from tracescore.extract.genai_messages import parse_message, parse_messages, parse_tool_definitions
from tracescore.extract.messages import split_system
from tracescore.extract.model import Message, SpanInfo, ToolInvocation
from tracescore.spans import LogRecord, Span

NAME = "google-adk"

SCOPE = "gcp.vertex.agent"
_PLUGIN_FAILURE = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"
_RESOLVED = frozenset({"result", "output-error"})
LLM_REQUEST = "gcp.vertex.agent.llm_request"
LLM_RESPONSE = "gcp.vertex.agent.llm_response"
_ELIDED = "<elided>"  # the message logged in place of content that is not captured
_LEGACY_TOOL_KEYS = {  # GenAI key ← ADK legacy key
    "gen_ai.tool.call.arguments": "gcp.vertex.agent.tool_call_args",
    "gen_ai.tool.call.result": "gcp.vertex.agent.tool_response",
}
_PLACEHOLDERS = frozenset({"{}", "N/A", ""})  # what legacy spans hold when content is off


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    attributes = span.attributes
    info = genai.read(span, [r for r in logs if not _elided(r)])
    info.convention = NAME
    legacy_tool = {
        new: attributes[old]
        for new, old in _LEGACY_TOOL_KEYS.items()
        if new not in attributes and _holds_content(attributes.get(old))
    }
    if info.kind == "tool" and legacy_tool:
        info.tool_call = genai.tool_call_from(info, {**attributes, **legacy_tool})
    if _holds_content(attributes.get(LLM_REQUEST)):
        _read_llm_request(span, info)
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Mark plugin-handled tool failures, then give each tool span the arguments and outcome
    the model calls of the trace show for its call id."""
    _one_step_per_model_call(read)
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


def _one_step_per_model_call(read: list[tuple[Span, SpanInfo]]) -> None:
    """A legacy ``call_llm`` and the model call below it are one step: the one that holds the
    content stays an LLM call (``call_llm`` when its ``LlmRequest`` was captured, else the
    model call), the other only keeps the tree together, its usage (the same) dropped."""
    llm = {span.span_id: (span, info) for span, info in read if info.kind == "llm"}
    for span, info in read:
        parent = llm.get(span.parent_span_id or "")
        if info.kind != "llm" or parent is None:
            continue
        parent_span, parent_info = parent
        demoted = info if _holds_content(parent_span.attributes.get(LLM_REQUEST)) else parent_info
        demoted.kind = "other"
        demoted.usage = None


def _holds_content(value: Any) -> bool:
    """A legacy content attribute that holds something (not absent, ``{}`` or ``N/A``)."""
    return isinstance(value, str) and value.strip() not in _PLACEHOLDERS


def _elided(record: LogRecord) -> bool:
    body = record.body
    return isinstance(body, dict) and body.get("content") == _ELIDED


def _read_llm_request(span: Span, info: SpanInfo) -> None:
    """A legacy ``call_llm`` span: the ``LlmRequest`` and ``LlmResponse`` ADK serialised."""
    warnings = info.warnings
    request = load_json(span.attributes[LLM_REQUEST], warnings, LLM_REQUEST)
    if not isinstance(request, dict):
        return
    info.kind = "llm"
    info.model = info.model or as_str(request.get("model"))
    config: dict[str, Any] = request["config"] if isinstance(request.get("config"), dict) else {}
    instruction = config.get("system_instruction")
    if isinstance(instruction, (dict, list)):  # a Content, or its parts: their text
        content = (
            {**instruction, "role": "system"}
            if isinstance(instruction, dict)
            else {"role": "system", "parts": instruction}
        )
        message = parse_message(content, "", warnings, "system_instruction")
        instruction = message.content.content if message else None
    if isinstance(instruction, str) and instruction:
        info.system = [instruction]
    tools = config.get("tools")
    declarations = (
        [
            declaration
            for tool in tools
            if isinstance(tool, dict) and isinstance(tool.get("function_declarations"), list)
            for declaration in tool["function_declarations"]
        ]
        if isinstance(tools, list)
        else []
    )
    info.tools = parse_tool_definitions(declarations, warnings, LLM_REQUEST) or info.tools
    messages = parse_messages(
        request.get("contents") or [],
        f"{span.span_id}-in",
        warnings,
        LLM_REQUEST,
        created_at=timestamp(span.start_time_ns),
    )
    system, info.input_messages = split_system(messages)
    info.system.extend(system)
    response = load_json(span.attributes.get(LLM_RESPONSE), warnings, LLM_RESPONSE)
    if not isinstance(response, dict):
        return
    answer = response.get("content")
    if isinstance(answer, dict):
        output = parse_message(
            answer,
            f"{span.span_id}-out-0",
            warnings,
            LLM_RESPONSE,
            default_role="assistant",
            created_at=timestamp(span.end_time_ns),
        )
        info.output_messages = [output] if output is not None else []
    usage = response.get("usage_metadata")
    if info.usage is None and isinstance(usage, dict):
        info.usage = usage_from(
            usage,
            input_tokens=("prompt_token_count",),
            output_tokens=("candidates_token_count",),
            total_tokens=("total_token_count",),
            cached_input_tokens=("cached_content_token_count",),
        )


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
