"""Strands Agents' own telemetry (scope ``strands.telemetry.tracer``), an OTel GenAI dialect.

The GenAI module reads Strands' agent, cycle and chat spans as they are (content as legacy
span events by default, or ``gen_ai.client.inference.operation.details`` events with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``). What Strands does its own way:

* by default an ``execute_tool`` span carries its arguments and result as span events named like
  chat messages: ``gen_ai.tool.message`` (``content`` = the arguments' JSON, ``id``) and
  ``gen_ai.choice`` (``message`` = the result's content blocks, ``id``), not as
  ``gen_ai.tool.call.*`` attributes (only the newer semconv sends those);
* the agent span names its tools in ``gen_ai.agent.tools`` (a JSON list of names), and each
  ``execute_tool`` span describes its own tool (``gen_ai.tool.description``,
  ``gen_ai.tool.json_schema``): :func:`refine` joins the two.
"""

from __future__ import annotations

from typing import Any

from tracescore.extract import genai
from tracescore.extract.base import as_str, load_json
from tracescore.extract.genai_messages import decode_arguments, decode_result
from tracescore.extract.messages import executed_call
from tracescore.extract.model import SpanInfo, ToolDefinition
from tracescore.spans import LogRecord, Span

NAME = "strands"

SCOPE = "strands.telemetry.tracer"
_ARGUMENTS_EVENT = "gen_ai.tool.message"
_RESULT_EVENT = "gen_ai.choice"


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = genai.read(span, logs)
    info.convention = NAME
    if info.kind == "tool":
        _read_tool_events(span, info)
    elif info.kind == "agent" and not info.tools:
        names = load_json(
            span.attributes.get("gen_ai.agent.tools"), info.warnings, "gen_ai.agent.tools"
        )
        info.tools = [ToolDefinition(name=n) for n in _names(names)]
    return info


def _names(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [name for name in (as_str(item) for item in items) if name]


def _read_tool_events(span: Span, info: SpanInfo) -> None:
    """Arguments and result from the tool span's events, when its attributes lack them.

    The events are the call itself, not a conversation: the GenAI event reader took them for
    messages, which a tool run does not have.
    """
    call = info.tool_call
    if call is None or "gen_ai.tool.call.arguments" in span.attributes:
        return
    info.input_messages, info.output_messages = [], []
    arguments = result = None
    for event in span.events:
        if event.name == _ARGUMENTS_EVENT:
            arguments = event.attributes.get("content")
        elif event.name == _RESULT_EVENT:
            result = event.attributes.get("message")
    if arguments is None and result is None:
        return
    decoded, is_error = decode_result(result)
    failed = is_error or call.state == "output-error"
    info.tool_call = executed_call(
        call.tool_call_id,
        call.tool_name,
        decode_arguments(arguments, info.warnings, "gen_ai.tool.message"),
        decoded,
        failed=failed,
        error=call.error_text if failed else None,
    )


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Give the agent's named tools the description and schema their tool spans recorded."""
    described: dict[str, ToolDefinition] = {}
    for span, info in read:
        name = info.tool_call.tool_name if info.tool_call else None
        if info.kind == "tool" and name and name not in described:
            schema = load_json(
                span.attributes.get("gen_ai.tool.json_schema"),
                info.warnings,
                "gen_ai.tool.json_schema",
            )
            described[name] = ToolDefinition(
                name=name,
                description=as_str(span.attributes.get("gen_ai.tool.description")),
                parameters=schema if isinstance(schema, dict) else None,
            )
    for _, info in read:
        if info.kind == "agent":
            info.tools = [
                described.get(t.name, t) if t.description is None else t for t in info.tools
            ]
