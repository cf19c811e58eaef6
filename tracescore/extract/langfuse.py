"""The Langfuse SDKs (Python 3.x and later, JS 4.x): ``langfuse.observation.*`` spans.

The SDKs are OpenTelemetry based: every observation is a span of scope ``langfuse-sdk`` that
says what it is in ``langfuse.observation.type`` (``agent``, ``generation``, ``tool``,
``retriever``, ``span``, ``chain``, ``event``, …) and carries its content as JSON strings:

* ``langfuse.observation.input`` / ``.output``: for a generation made by the ``langfuse.openai``
  drop-in client the request (``{"messages": […], "tools": […]}``, or the bare message list when
  no other argument was sent; ``{"instructions", "input"}`` for the Responses API) and the
  response message; for an ``@observe`` function ``{"args": […], "kwargs": {…}}`` and its
  return value;
* ``langfuse.observation.model.name``, ``.model.parameters``, ``.usage_details`` (the
  provider's usage object, or Langfuse's own ``{input, output, total}`` keys);
* ``langfuse.observation.level`` / ``.status_message`` for failures (the span status too);
* trace-level facts (``langfuse.trace.name``, ``.input``, ``.output``, ``session.id``,
  ``user.id``) on whichever spans they were set on: ``session.id`` names the conversation
  (:mod:`tracescore.extract.conversation_id`), ``langfuse.trace.input``/``output`` stand in for
  an observation's own input/output when it has none.

An ``agent`` observation is the agent run; without one, each outermost generation stands for
the agent (the generic rule for raw clients), and ``span``/``chain`` wrappers are not runs.
Tool observations record no call id: the run assembler joins them to the generation's call by
name and order, which keeps the call's id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.extract.base import (
    as_str,
    first,
    first_str,
    json_text,
    load_json,
    new_info,
    timestamp,
)
from tracescore.extract.genai_messages import (
    decode_result,
    parse_message,
    parse_messages,
    parse_system_instructions,
    parse_tool_definitions,
)
from tracescore.extract.messages import executed_call, split_system, text_message
from tracescore.extract.model import Message, SpanInfo, SpanKindName, TokenUsage, ToolInvocation
from tracescore.spans import LogRecord, Span

NAME = "langfuse"

SCOPE = "langfuse-sdk"
TYPE = "langfuse.observation.type"
INPUT = "langfuse.observation.input"
OUTPUT = "langfuse.observation.output"
_KINDS: dict[str, SpanKindName] = {
    "agent": "agent",
    "generation": "llm",
    "tool": "tool",
    "retriever": "retrieval",
}
_USAGE_KEYS: dict[str, tuple[str, ...]] = {  # TokenUsage field <- usage_details keys
    "input_tokens": ("prompt_tokens", "input_tokens", "input"),
    "output_tokens": ("completion_tokens", "output_tokens", "output"),
    "total_tokens": ("total_tokens", "total"),
}
_USAGE_DETAILS: dict[str, tuple[tuple[str, str], ...]] = {  # field <- (details object, key)
    "reasoning_tokens": (
        ("completion_tokens_details", "reasoning_tokens"),
        ("output_tokens_details", "reasoning_tokens"),
    ),
    "cached_input_tokens": (
        ("prompt_tokens_details", "cached_tokens"),
        ("input_tokens_details", "cached_tokens"),
    ),
}


def detect(span: Span) -> bool:
    return TYPE in span.attributes or span.scope.name == SCOPE


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = new_info(span, NAME)
    attributes = span.attributes
    kind = (as_str(attributes.get(TYPE)) or "span").lower()
    info.kind = _KINDS.get(kind, "other")
    if info.status == "unset" and as_str(attributes.get("langfuse.observation.level")) == "ERROR":
        info.status = "error"
        info.error = first_str(attributes, "langfuse.observation.status_message") or "error"
    if info.kind == "llm":
        info.model = first_str(attributes, "langfuse.observation.model.name")
        info.usage = _usage(attributes.get("langfuse.observation.usage_details"), info.warnings)
        _read_generation(span, info)
    elif info.kind == "tool":
        info.tool_call = _tool_call(span, info)
    elif info.kind == "agent":
        info.agent_name = span.name
        _read_agent(span, info)
    return info


def _content(attributes: Mapping[str, Any], own: str, trace_level: str) -> Any:
    """An observation's input or output, or the trace's when set on this span instead."""
    return first(attributes, own, trace_level)


def _read_generation(span: Span, info: SpanInfo) -> None:
    """The request (messages and tools) and the response message of an LLM call."""
    attributes, warnings = span.attributes, info.warnings
    started, ended = timestamp(span.start_time_ns), timestamp(span.end_time_ns)
    request = load_json(_content(attributes, INPUT, "langfuse.trace.input"), warnings, INPUT)
    messages: list[Message] = []
    if isinstance(request, dict):
        info.tools = parse_tool_definitions(request.get("tools") or [], warnings, f"{INPUT} tools")
        if "instructions" in request:  # the Responses API
            info.system.extend(parse_system_instructions(request["instructions"], warnings, INPUT))
        body = request.get("messages", request.get("input"))
        if body is not None:
            messages = parse_messages(
                body, f"{span.span_id}-in", warnings, INPUT, created_at=started
            )
    elif request is not None:
        messages = parse_messages(
            request, f"{span.span_id}-in", warnings, INPUT, created_at=started
        )
    system, info.input_messages = split_system(messages)
    info.system.extend(system)
    response = load_json(_content(attributes, OUTPUT, "langfuse.trace.output"), warnings, OUTPUT)
    info.output_messages = _response_messages(response, span.span_id, warnings, ended)


def _response_messages(
    response: Any, span_id: str, warnings: list[str], created_at: Any
) -> list[Message]:
    """The response: one assistant message (Chat Completions), Chat Completions ``choices``,
    a Responses ``output`` item list, or text."""
    if isinstance(response, dict) and isinstance(response.get("choices"), list):
        response = [c.get("message") for c in response["choices"] if isinstance(c, dict)]
    elif isinstance(response, dict) and isinstance(response.get("output"), list):
        response = response["output"]
    if response is None or response == "":
        return []
    items = response if isinstance(response, list) else [response]
    messages: list[Message] = []
    for raw in items:
        message = parse_message(
            raw,
            f"{span_id}-out-{len(messages)}",
            warnings,
            OUTPUT,
            default_role="assistant",
            created_at=created_at,
        )
        if message is not None:
            messages.append(message)
    return messages


def _read_agent(span: Span, info: SpanInfo) -> None:
    """What the agent function was called with and returned: the run's input and answer when
    no generation below it recorded them."""
    attributes = span.attributes
    called = load_json(_content(attributes, INPUT, "langfuse.trace.input"), info.warnings, INPUT)
    question = _question(called)
    if question:
        info.input_messages = [
            text_message(f"{span.span_id}-in-0", "user", question, timestamp(span.start_time_ns))
        ]
    returned = load_json(_content(attributes, OUTPUT, "langfuse.trace.output"), [], OUTPUT)
    answer = json_text(returned) if returned not in (None, "") else ""
    if answer:
        info.output_messages = [
            text_message(f"{span.span_id}-out-0", "assistant", answer, timestamp(span.end_time_ns))
        ]


def _question(called: Any) -> str:
    """The user's input among a decorated function's arguments: its first text argument, else
    the arguments as JSON."""
    if isinstance(called, str):
        return called
    arguments = _arguments(called)
    values = (
        arguments
        if isinstance(arguments, list)
        else (list(arguments.values()) if isinstance(arguments, dict) else [])
    )
    text = next((v for v in values if isinstance(v, str) and v), None)
    return text or ("" if called in (None, "", {}) else json_text(arguments))


def _arguments(called: Any) -> Any:
    """A decorated function's ``{"args": [...], "kwargs": {...}}`` as the arguments a caller
    means: the keyword arguments (a tool called as ``get_weather(**arguments)``), the one
    positional dict, or the positional list; anything else as it is."""
    if not (isinstance(called, dict) and set(called) == {"args", "kwargs"}):
        return called
    args, kwargs = called["args"], called["kwargs"]
    if not args and isinstance(kwargs, dict):
        return kwargs
    if not kwargs and isinstance(args, list):
        return args[0] if len(args) == 1 and isinstance(args[0], dict) else args
    return called


def _tool_call(span: Span, info: SpanInfo) -> ToolInvocation:
    """A tool observation: the function's name, arguments and return value (no call id)."""
    attributes = span.attributes
    called = load_json(attributes.get(INPUT), info.warnings, INPUT)
    raw = load_json(attributes.get(OUTPUT), [], OUTPUT)
    result, is_error = decode_result(raw)
    return executed_call(
        "",
        span.name,
        _arguments(called),
        result,
        failed=is_error or info.status == "error",
        error=info.error,
    )


def _usage(value: Any, warnings: list[str]) -> TokenUsage | None:
    """``usage_details``: the provider's usage object (details included) or Langfuse's keys."""
    usage = load_json(value, warnings, "langfuse.observation.usage_details")
    if not isinstance(usage, dict):
        return None
    found = {
        field: count
        for field, keys in _USAGE_KEYS.items()
        if (count := _count(first(usage, *keys))) is not None
    }
    for field, places in _USAGE_DETAILS.items():
        for details, key in places:
            nested = usage.get(details)
            if isinstance(nested, dict) and (count := _count(nested.get(key))) is not None:
                found[field] = count
                break
    if not found:
        return None
    found.setdefault("total_tokens", found.get("input_tokens", 0) + found.get("output_tokens", 0))
    return TokenUsage(**found)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
