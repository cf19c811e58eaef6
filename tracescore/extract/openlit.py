"""OpenLIT (scopes ``openlit.instrumentation.*``), an OTel GenAI dialect.

OpenLIT writes the current GenAI attributes (and the same content again on a
``gen_ai.client.inference.operation.details`` log event), so the GenAI module reads a span. Its
own ways:

* the system prompt is sent twice, as ``gen_ai.system_instructions`` and as a ``system`` input
  message (the GenAI module keeps one copy of a prompt it was given both ways);
* an assistant message that only called tools (no text) is left out of
  ``gen_ai.input.messages``: the next call's input holds the ``tool_call_response`` but not the
  call. :func:`refine` puts the call back before its result: name and arguments from the span
  that made it when the trace holds it (its output, or OpenLIT's ``gen_ai.tool.name`` /
  ``gen_ai.tool.call.id`` / ``gen_ai.tool.args``), else the name of the only tool offered, with
  a warning saying what could not be recovered. A raw client's calls are each their own trace,
  so the arguments are usually in another trace;
* ``gen_ai.client.token.usage`` is the call's total token count;
* a LangGraph graph is an ``invoke_workflow`` span, and each run of a graph node an
  ``invoke_agent <node>`` span, twice (its LangGraph instrumentation's, whose
  ``gen_ai.agent.id`` is the node's name, and its LangChain one's): :func:`refine` reads the
  workflow as the agent and its node spans as its steps, so a hand-built graph is one agent
  run, not an agent per model call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tracescore.extract import genai
from tracescore.extract.base import as_int, first_str, python_literal
from tracescore.extract.genai_messages import decode_arguments
from tracescore.extract.messages import build_message, tool_call_part
from tracescore.extract.model import Message, MessagePart, SpanInfo, ToolInvocation
from tracescore.spans import LogRecord, Span

NAME = "openlit"

SCOPE_PREFIX = "openlit."
_LANGCHAIN_SCOPE = "openlit.instrumentation.langchain"
_RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ARGUMENTS_WARNING = "gen_ai.tool.call arguments:"


def in_scope(scope: str) -> bool:
    return scope.startswith(SCOPE_PREFIX)


def detect(span: Span) -> bool:
    return span.scope.name.startswith(SCOPE_PREFIX)


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = genai.read(span, logs)
    info.convention = NAME
    total = as_int(span.attributes.get("gen_ai.client.token.usage"))
    if info.usage is not None and total is not None:
        info.usage.total_tokens = total
    if info.tool_call is not None and span.scope.name == _LANGCHAIN_SCOPE:
        _langchain_tool_call(info.tool_call, info.warnings)
    return info


def _langchain_tool_call(call: ToolInvocation, warnings: list[str]) -> None:
    """OpenLIT's LangChain tool spans write the arguments as the ``str()`` of a dict, and, for
    a tool that raised, the LangChain run's id (a UUID) as ``gen_ai.tool.call.id``: the
    arguments are read as the dict they are (no JSON warning), and a UUID is no call id the
    model made, so the call is joined to the model's by name and order instead."""
    if isinstance(call.args, str) and isinstance(args := python_literal(call.args), dict):
        call.args = args
        warnings[:] = [w for w in warnings if not w.startswith(_ARGUMENTS_WARNING)]
    if _RUN_ID.fullmatch(call.tool_call_id):
        call.tool_call_id = ""


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Put back, before their results, the tool calls OpenLIT left out of the input messages;
    read a LangGraph workflow as the agent its node spans are steps of."""
    _graph_nodes_as_steps(read)
    made = _calls_made(read)
    for _, info in read:
        if info.input_messages:
            info.input_messages = _with_calls(info, made)


def _graph_nodes_as_steps(read: list[tuple[Span, SpanInfo]]) -> None:
    """An ``invoke_workflow`` span with graph-node ``invoke_agent`` children (see the module
    docstring) becomes the agent, named after its workflow, and every ``invoke_agent`` child
    named as one of its nodes a step (``other``)."""
    workflows = {
        span.span_id: span
        for span, _ in read
        if span.attributes.get("gen_ai.operation.name") == "invoke_workflow"
    }
    if not workflows:
        return
    nodes: dict[str, set[str]] = {}
    for span, _ in read:
        name = first_str(span.attributes, "gen_ai.agent.name")
        if (
            span.parent_span_id in workflows
            and name
            and span.attributes.get("gen_ai.agent.id") == name
        ):
            nodes.setdefault(span.parent_span_id or "", set()).add(name)
    for span, info in read:
        if span.span_id in nodes:
            info.kind = "agent"
            info.agent_name = first_str(span.attributes, "gen_ai.workflow.name") or span.name
        elif info.kind == "agent" and info.agent_name in nodes.get(span.parent_span_id or "", ()):
            info.kind = "other"
            info.agent_name = None


def _calls_made(read: list[tuple[Span, SpanInfo]]) -> dict[str, ToolInvocation]:
    """Every tool call the trace's spans asked for, by id."""
    made: dict[str, ToolInvocation] = {}
    for span, info in read:
        for message in info.output_messages:
            for call in _invocations([message]):
                made.setdefault(call.tool_call_id, call)
        call_id = first_str(span.attributes, "gen_ai.tool.call.id")
        name = first_str(span.attributes, "gen_ai.tool.name")
        if call_id and name and call_id not in made:
            args = decode_arguments(
                span.attributes.get("gen_ai.tool.args"), info.warnings, "gen_ai.tool.args"
            )
            made[call_id] = ToolInvocation(
                tool_call_id=call_id, tool_name=name, args=args, state="call"
            )
    return made


def _invocations(messages: Iterable[Message]) -> Iterable[ToolInvocation]:
    for message in messages:
        for part in message.content.parts:
            if part.tool_invocation is not None and part.tool_invocation.tool_call_id:
                yield part.tool_invocation


def _with_calls(info: SpanInfo, made: dict[str, ToolInvocation]) -> list[Message]:
    """The input messages with an assistant message of the missing calls before their results."""
    called: set[str] = set()
    messages: list[Message] = []
    for message in info.input_messages:
        if message.role == "assistant":
            called.update(c.tool_call_id for c in _invocations([message]))
        missing = [
            r
            for r in _invocations([message])
            if message.role != "assistant" and r.tool_call_id not in called
        ]
        if missing:
            calls = [_recovered(info, result, made.get(result.tool_call_id)) for result in missing]
            messages.append(
                build_message(f"{message.id}-calls", "assistant", calls, message.created_at)
            )
            called.update(r.tool_call_id for r in missing)
        messages.append(message)
    return messages


def _recovered(info: SpanInfo, result: ToolInvocation, call: ToolInvocation | None) -> MessagePart:
    """The part of one call recovered for its result, warning about what stays unknown."""
    if call is not None:
        return tool_call_part(call.tool_call_id, call.tool_name, call.args)
    offered = {t.name for t in info.tools}
    name = result.tool_name or (next(iter(offered)) if len(offered) == 1 else "")
    info.warnings.append(
        f"{NAME}: the call {result.tool_call_id} answered in the input is not in the trace "
        f"(OpenLIT leaves tool-call messages out); rebuilt from its result"
        + (f" as {name!r}" if name else " without its tool's name")
        + ", arguments unknown"
    )
    return tool_call_part(result.tool_call_id, name, {})
