"""Haystack through openinference-instrumentation-haystack (span formats: Haystack).

The instrumentor wraps every component's ``run`` in a span: ``Agent.run`` and ``Pipeline.run``
are ``CHAIN`` spans, a chat generator's ``run`` an ``LLM`` span. Their ``input.value`` /
``output.value`` hold the component's arguments and results with each ``ChatMessage`` written as
its Python repr (``ChatMessage(_role=<ChatRole.USER: 'user'>, _content=[TextContent(text=…)],
…)``), and the LLM span's flattened ``llm.input_messages`` keep only the role of an assistant
message that called tools and of a tool message. So:

* ``Agent.run`` is the agent: its steps are the LLM spans below it, each tool call joined to
  its ``ToolInvoker.run`` span (haystack-ai 2.x) or, where there is none (3.x runs its tools
  inside the agent), to the result the next step was sent;
* a ``ToolInvoker.run`` span is a tool span: each call it ran (its ``origin``) and that
  call's outcome, from the ``ToolCallResult`` it returned (one reply's several calls run in
  one span);
* an LLM span's input is read from the reprs in ``input.value`` (``ToolCall``,
  ``ToolCallResult`` with its ``origin`` call and ``error`` flag, ``TextContent``,
  ``ReasoningContent``), falling back to the flattened messages when they do not parse, and
  the tools it was offered from their ``Tool(…)`` reprs;
* an agent that is a pipeline's component is named after it (the ``Pipeline.run`` span's
  input names it), else ``Agent``;
* ``Pipeline.run`` and the other components (``ChatPromptBuilder``…) are no runs: their values
  are reprs of whatever the component took, not messages of the conversation.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from tracescore.extract import openinference
from tracescore.extract.base import json_text, load_json, new_info, python_literal, timestamp
from tracescore.extract.genai_messages import decode_result, parse_message, parse_tool_definition
from tracescore.extract.messages import executed_call, split_system
from tracescore.extract.model import Message, SpanInfo, ToolDefinition, ToolInvocation
from tracescore.extract.object_reprs import MAX_REPR_CHARS, ast_value
from tracescore.spans import LogRecord, Span

NAME = "openinference-haystack"

SCOPE = "openinference.instrumentation.haystack"
_AGENT_SPAN = "Agent.run"
_PIPELINE_SPAN = "Pipeline.run"
_TOOL_INVOKER_SPAN = "ToolInvoker.run"
_ENUM = re.compile(r"<\w+\.\w+: ('[^'\\]*')>")  # <ChatRole.USER: 'user'> -> 'user'
_OBJECT = re.compile(r"<[^<>'\"]*>")  # <function get_weather at 0x…> -> None


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE and "openinference.span.kind" in span.attributes


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    kind = span.attributes.get("openinference.span.kind")
    if kind == "CHAIN" and span.name == _TOOL_INVOKER_SPAN:
        info = new_info(span, NAME)
        _read_invocation(span, info)
        return info
    if kind == "CHAIN" and span.name != _AGENT_SPAN:
        return new_info(span, NAME)  # a pipeline or another component: no messages
    info = openinference.read(span, logs) if kind != "CHAIN" else new_info(span, NAME)
    info.convention = NAME
    if span.name == _AGENT_SPAN:
        info.kind = "agent"
        info.agent_name = "Agent"
        _read_agent(span, info)
    elif info.kind == "llm":
        started = timestamp(span.start_time_ns)
        sent = _chat_messages(span.attributes.get("input.value"), span.span_id, info, started)
        if sent:
            system, info.input_messages = split_system(sent)
            info.system = system
        info.tools = info.tools or _tools(span.attributes.get("input.value"), info.warnings)
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Name an agent that runs as a pipeline's only input component after that component
    (``pipeline.add_component("weather_agent", agent)``): the ``Agent.run`` span does not
    carry it, the ``Pipeline.run`` span's input (``{"data": {name: {…}}}``) does."""
    pipelines = {span.span_id: span for span, _ in read if span.name == _PIPELINE_SPAN}
    for span, info in read:
        pipeline = pipelines.get(span.parent_span_id or "")
        if info.kind != "agent" or pipeline is None:
            continue
        body = load_json(pipeline.attributes.get("input.value"), [], "input.value")
        data = body.get("data") if isinstance(body, dict) else None
        if isinstance(data, dict) and len(data) == 1:
            info.agent_name = str(next(iter(data)))


def _read_agent(span: Span, info: SpanInfo) -> None:
    """The agent's own messages: those it was given, and (out of the whole conversation it
    returns) those it added."""
    started, ended = timestamp(span.start_time_ns), timestamp(span.end_time_ns)
    given = _chat_messages(span.attributes.get("input.value"), span.span_id, info, started)
    system, info.input_messages = split_system(given)
    info.system = system
    returned = _chat_messages(
        span.attributes.get("output.value"), f"{span.span_id}-out", info, ended
    )
    _, conversation = split_system(returned)
    info.output_messages = conversation[len(info.input_messages) :]


def _read_invocation(span: Span, info: SpanInfo) -> None:
    """A ``ToolInvoker``: a tool span, each call and its outcome out of the ``ToolCallResult``
    it returned. Several calls are all read: when the Agent stops after its tools (an
    ``exit_conditions`` tool), no later model call is sent their results."""
    body = load_json(span.attributes.get("output.value"), [], "output.value")
    reprs = body.get("tool_messages") if isinstance(body, dict) else None
    outcomes = [
        part
        for text in (reprs if isinstance(reprs, list) else [])
        if isinstance(text, str)
        and (fields := _constructed(text, "ChatMessage")) is not None
        and isinstance(contents := fields.get("_content"), list)
        for part in contents
        if isinstance(part, dict) and part.get("__class__") == "ToolCallResult"
    ]
    if not outcomes:
        return
    span_failed = info.status == "error" and len(outcomes) == 1
    first, *more = (_outcome(outcome, info, span_failed) for outcome in outcomes)
    info.kind = "tool"
    info.tool_call = first
    info.more_tool_calls = tuple(more)


def _outcome(outcome: dict[str, Any], info: SpanInfo, span_failed: bool) -> ToolInvocation:
    """One ``ToolCallResult``: its ``origin`` call with the result; failed when it says so
    (or, for the span's only call, when the span failed)."""
    origin = outcome.get("origin")
    call = origin if isinstance(origin, dict) else {}
    result, _ = decode_result(_result_text(outcome.get("result")))
    return executed_call(
        str(call.get("id") or ""),
        str(call.get("tool_name") or ""),
        call.get("arguments") or {},
        result,
        failed=bool(outcome.get("error")) or span_failed,
        error=info.error,
    )


def _chat_messages(value: Any, prefix: str, info: SpanInfo, created_at: Any) -> list[Message]:
    """The ``messages`` of a component's arguments or results, each from its repr."""
    body = load_json(value, [], "input.value")
    reprs = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(reprs, list):
        return []
    messages: list[Message] = []
    for text in reprs:
        raw = chat_message(text) if isinstance(text, str) else None
        if raw is None:
            return []  # one unreadable message: the flattened ones are the better record
        message = parse_message(
            raw, f"{prefix}-{len(messages)}", info.warnings, "input.value", created_at=created_at
        )
        if message is not None:
            messages.append(message)
    return messages


def chat_message(text: str) -> dict[str, Any] | None:
    """A ``ChatMessage`` repr as an OpenAI-style message, or None when it is none."""
    fields = _constructed(text, "ChatMessage")
    if fields is None:
        return None
    role = fields.get("_role")
    message: dict[str, Any] = {"role": role if isinstance(role, str) else "user"}
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    contents = fields.get("_content")
    for part in contents if isinstance(contents, list) else []:
        kind = part.get("__class__") if isinstance(part, dict) else None
        if kind == "TextContent":
            texts.append(str(part.get("text") or ""))
        elif kind == "ReasoningContent":
            message["reasoning_content"] = part.get("reasoning_text")
        elif kind == "ToolCall":
            calls.append(_call(part))
        elif kind == "ToolCallResult":
            origin = part.get("origin") if isinstance(part.get("origin"), dict) else {}
            message.update(
                role="tool",
                tool_call_id=origin.get("id") or "",
                name=origin.get("tool_name") or "",
                status="error" if part.get("error") else "success",
            )
            texts.append(_result_text(part.get("result")))
    message["content"] = "".join(texts)
    if calls:
        message["tool_calls"] = calls
    return message


def _constructed(text: str, name: str) -> dict[str, Any] | None:
    """The keyword arguments of the repr of a ``name`` object, or None."""
    if len(text) > MAX_REPR_CHARS or not text.startswith(f"{name}("):
        return None
    try:
        source = _OBJECT.sub("None", _ENUM.sub(r"\1", text))
        fields = ast_value(ast.parse(source, mode="eval").body)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return fields if isinstance(fields, dict) and fields.get("__class__") == name else None


def _tools(value: Any, warnings: list[str]) -> list[ToolDefinition]:
    """The tools a chat generator was offered, from their ``Tool(name=…, …)`` reprs."""
    body = load_json(value, [], "input.value")
    reprs = body.get("tools") if isinstance(body, dict) else None
    fields = (
        [_constructed(t, "Tool") for t in reprs if isinstance(t, str)]
        if isinstance(reprs, list)
        else []
    )
    return [
        tool
        for found in fields
        if found is not None
        and (tool := parse_tool_definition(found, warnings, "input.value tools")) is not None
    ]


def _result_text(result: Any) -> str:
    """A tool's result as JSON text: haystack-ai 2.x sends the model ``str()`` of a dict or
    list (a Python repr), 3.x JSON."""
    value = python_literal(result)
    return json_text(value) if isinstance(value, (dict, list)) else str(result or "")


def _call(part: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": part.get("id") or "",
        "function": {"name": part.get("tool_name") or "", "arguments": part.get("arguments")},
    }
