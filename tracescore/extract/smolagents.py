"""smolagents through openinference-instrumentation-smolagents (span formats: smolagents).

The spans are OpenInference, read by :mod:`tracescore.extract.openinference`; this module
corrects what smolagents does its own way:

* the ``AGENT`` span is named ``{agent name}.run`` and carries no ``agent.name``; its
  ``input.value`` holds ``run()``'s arguments, whose ``task`` is the user's input
  (``smolagents.task`` is the agent's previous task when ``reset=False`` keeps its memory);
* the model is sent the task as ``New task:\\n{task}``, and earlier steps as messages of roles
  ``tool-call`` (``Calling tools:\\n[{'id', 'type', 'function': {'name', 'arguments'}}]``, a
  Python repr) and ``tool-response`` (``Observation:\\n…``, or ``Error:\\n…`` for a failed step,
  whose call smolagents does not keep): they are rebuilt as the assistant's calls and their
  results (a failed call from its error text), so a step's trajectory holds the call;
* the built-in ``final_answer`` tool is how a ``ToolCallingAgent`` answers: its call is the
  answer's text, not a tool call, its ``FinalAnswerTool`` span no tool run, and it is no tool
  the model was offered;
* a ``TOOL`` span's input is ``Tool.__call__``'s arguments, ``{"args": [],
  "sanitize_inputs_outputs": true, "kwargs": {…}}``: the call's arguments are ``kwargs`` (or a
  lone dict in ``args``). Its call id is the step's: the LLM span beside it called the tools.

The AGENT span's token counts are the agent's running totals, which ``reset=False`` carries
over from earlier runs; the LLM spans' own counts are what the run sums.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from tracescore.extract import openinference
from tracescore.extract.base import as_str, json_text, load_json, new_info
from tracescore.extract.messages import (
    answer_text_part,
    build_message,
    executed_call,
    message_text,
    text_message,
    text_part,
    tool_call_part,
    tool_result_part,
    with_answer_tool_as_text,
)
from tracescore.extract.model import Message, MessagePart, SpanInfo
from tracescore.spans import LogRecord, Span

NAME = "openinference-smolagents"

SCOPE = "openinference.instrumentation.smolagents"
FINAL_ANSWER = "final_answer"
_TASK_PREFIX = "New task:\n"
_CALLS_PREFIX = "Calling tools:\n"
_OBSERVATION_PREFIX = "Observation:\n"
_ERROR_PREFIX = "Error:\n"
_CALL_ID_LINE = re.compile(r"Call id: ([^\n]{1,200})\n")
_FAILED_CALL = re.compile(r"Error executing tool '([^'\n]{1,200})' with arguments ")
_MAX_ARGUMENT_ENDS = 20  # "}: " positions tried as the end of a failed call's arguments
# A Python repr parsed back (``ast.literal_eval``, about 0.3 µs a character) at most this long:
# a call's arguments are small, and every later step is sent them again.
_MAX_LITERAL_CHARS = 20_000


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE and "openinference.span.kind" in span.attributes


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    if span.attributes.get("openinference.span.kind") == "CHAIN":
        return new_info(span, NAME)  # a ``Step N``: its input and output are reprs, no messages
    info = openinference.read(span, logs)
    info.convention = NAME
    if info.kind == "agent":
        _read_agent(span, info)
    elif info.kind == "llm":
        info.input_messages = _with_steps(info.input_messages, span.span_id)
        info.output_messages = with_answer_tool_as_text(
            info.output_messages, FINAL_ANSWER, "answer"
        )
        info.tools = [t for t in info.tools if t.name != FINAL_ANSWER]
    elif info.kind == "tool" and info.tool_call is not None:
        if info.tool_call.tool_name == FINAL_ANSWER:
            info.kind, info.tool_call = "other", None
        else:
            info.tool_call.args = _call_arguments(info.tool_call.args)
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Give each tool call the id of the call the LLM span beside it made (by name, in order)."""
    calls: dict[str, list[tuple[str, str]]] = {}  # step span id -> the step's (name, id) calls
    for span, info in read:
        if info.kind == "llm" and span.parent_span_id:
            calls.setdefault(span.parent_span_id, []).extend(
                (call.tool_name, call.tool_call_id)
                for message in info.output_messages
                for call in message.content.tool_invocations or []
            )
    for span, info in sorted(read, key=lambda pair: pair[0].start_time_ns):
        call = info.tool_call
        if info.kind != "tool" or call is None or call.tool_call_id or not span.parent_span_id:
            continue
        step = calls.get(span.parent_span_id, [])
        match = next((i for i, (name, _) in enumerate(step) if name == call.tool_name), None)
        if match is not None:
            call.tool_call_id = step.pop(match)[1]


def _read_agent(span: Span, info: SpanInfo) -> None:
    info.agent_name = span.name.removesuffix(".run") or span.name
    arguments = load_json(span.attributes.get("input.value"), [], "input.value")
    task = as_str(arguments.get("task")) if isinstance(arguments, dict) else None
    if task is not None:
        info.input_messages = [text_message(f"{span.span_id}-in-0", "user", task)]


def _with_steps(messages: list[Message], span_id: str) -> list[Message]:
    """The conversation with the task's prefix dropped and earlier steps as calls and results."""
    rebuilt: list[Message] = []
    pending: list[tuple[str, str]] = []  # (id, name) of the calls the last tool-call message made
    for index, message in enumerate(messages):
        message_id = f"{span_id}-step-{index}"
        text = message_text(message)
        if message.role == "user" and text.startswith(_TASK_PREFIX):
            rebuilt.append(
                text_message(message.id, "user", text[len(_TASK_PREFIX) :], message.created_at)
            )
        elif message.role == "tool-call":
            parts, pending = _calls(text)
            rebuilt.append(build_message(message_id, "assistant", parts, message.created_at))
        elif message.role == "tool-response":
            role, parts = _results(text, pending)
            pending = []
            rebuilt.append(build_message(message_id, role, parts, message.created_at))
        else:
            rebuilt.append(message)
    return [m for m in rebuilt if m.content.parts]


def _calls(text: str) -> tuple[list[MessagePart], list[tuple[str, str]]]:
    """A ``Calling tools:`` message: its calls (``final_answer``'s as the answer's text)."""
    calls = _literal(text.removeprefix(_CALLS_PREFIX))
    if not isinstance(calls, list):
        return [text_part(text)], []
    parts: list[MessagePart] = []
    pending: list[tuple[str, str]] = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        name, args = json_text(function.get("name") or ""), function.get("arguments")
        if name == FINAL_ANSWER:
            parts.append(answer_text_part(args, "answer"))
            continue
        call_id = json_text(call.get("id") or "")
        parts.append(tool_call_part(call_id, name, load_json(args, [], "arguments")))
        pending.append((call_id, name))
    return parts, pending


def _results(text: str, pending: list[tuple[str, str]]) -> tuple[str, list[MessagePart]]:
    """A ``tool-response`` message as the role and parts that answer the call(s) before it.

    An observation is kept as the model was sent it: ``str()`` of what the tool returned.
    Several parallel calls share one (their outputs joined by newlines, in the order they
    finished), which cannot be split back: their calls stay without a result rather than one
    taking all. ``final_answer``'s observation repeats the answer and is dropped. A failed
    step's call is not in smolagents' memory: it is rebuilt from the error text (``Error
    executing tool 'NAME' with arguments {…}``) as an assistant call that failed, so the
    trajectory shows what was tried.
    """
    if text.startswith(_OBSERVATION_PREFIX):
        if len(pending) != 1:
            return "tool", []
        call_id, name = pending[0]
        return "tool", [tool_result_part(call_id, name, text[len(_OBSERVATION_PREFIX) :])]
    call_id_line = _CALL_ID_LINE.match(text)
    call_id = call_id_line.group(1) if call_id_line else ""
    error = text[call_id_line.end() :] if call_id_line else text
    error = error.removeprefix(_ERROR_PREFIX).split("\nNow let's retry:")[0]
    failed = _FAILED_CALL.search(error)
    if failed is None or call_id or pending:  # the call is known, or no tool ran at all
        name = pending[0][1] if len(pending) == 1 else ""
        return "tool", [tool_result_part(call_id, name, error, is_error=True)]
    call = executed_call(
        "", failed.group(1), _failed_arguments(error[failed.end() :]), error, failed=True
    )
    return "assistant", [MessagePart(type="tool-invocation", tool_invocation=call)]


def _failed_arguments(text: str) -> Any:
    """The arguments at the start of ``{arguments}: {error type}: {message}``: the shortest
    prefix ending in ``}: `` that reads as a Python dict (a dict holds ``: `` too)."""
    end = text.find("}: ", 0, _MAX_LITERAL_CHARS)
    for _ in range(_MAX_ARGUMENT_ENDS):
        if end < 0:
            break
        if isinstance(args := _literal(text[: end + 1]), dict):
            return args
        end = text.find("}: ", end + 3, _MAX_LITERAL_CHARS)
    return text


def _call_arguments(args: Any) -> Any:
    """``Tool.__call__``'s bound arguments as the call's own."""
    if not isinstance(args, dict) or "kwargs" not in args:
        return args
    kwargs, positional = args.get("kwargs"), args.get("args")
    if not positional and isinstance(kwargs, dict):
        return kwargs
    if (
        not kwargs
        and isinstance(positional, list)
        and len(positional) == 1
        and isinstance(positional[0], dict)
    ):
        return positional[0]
    return {key: value for key, value in args.items() if key != "sanitize_inputs_outputs"}


def _literal(text: str) -> Any:
    """A Python literal smolagents wrote with ``str()``, or None when it is none (or too big)."""
    if len(text) > _MAX_LITERAL_CHARS:
        return None
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
