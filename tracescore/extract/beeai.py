"""The BeeAI framework through openinference-instrumentation-beeai (span formats: BeeAI).

The spans are OpenInference, read by :mod:`tracescore.extract.openinference`; this module
corrects what BeeAI does its own way:

* a ``RequirementAgent`` (like the ``ToolCallingAgent``) answers by calling its built-in
  ``final_answer`` tool (``{"response": …}``): that call is the answer's text, not a tool call,
  its result (``Message has been sent``) no tool result, and it is no tool the model was
  offered. The instrumentor records the call twice, as an ``AGENT`` span and a ``TOOL`` span
  named ``final_answer``: neither is a run (the first was an extra, empty primary agent run);
* the model is sent the user's prompt in BeeAI's task template (``…Your task: {prompt}``):
  the run's input is the prompt;
* a failed tool's error event is a ``TOOL`` span of its own (``metadata.path``
  ``tool.….error``) below the tool's span: no tool run;
* a ``TOOL`` span's ``input.value`` is ``Tool.run``'s ``{"input": {…}, "options": …}``: the
  call's arguments are ``input``; a failed tool's ``output.value`` is BeeAI's error chain
  (``ToolError … ValueError(builtins): Unknown city``), where the span's exception says only
  ``Tool Error``: it is the call's error text.
"""

from __future__ import annotations

from typing import Any

from tracescore.extract import openinference
from tracescore.extract.base import new_info, python_literal
from tracescore.extract.messages import (
    build_message,
    message_text,
    text_part,
    with_answer_tool_as_text,
)
from tracescore.extract.model import Message, SpanInfo
from tracescore.spans import LogRecord, Span

NAME = "openinference-beeai"

SCOPE = "openinference.instrumentation.beeai"
FINAL_ANSWER = "final_answer"
_ANSWER_ARGUMENT = "response"
_TASK_MARK = "Your task: "


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE and "openinference.span.kind" in span.attributes


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    if span.name == FINAL_ANSWER or _is_error_event(span):
        # The answer, already the text of the step that gave it; a failed tool's error event,
        # recorded as a TOOL span below the tool's own.
        return new_info(span, NAME)
    info = openinference.read(span, logs)
    info.convention = NAME
    if info.kind == "llm":
        info.input_messages = [
            _prompt(m)
            for m in with_answer_tool_as_text(info.input_messages, FINAL_ANSWER, _ANSWER_ARGUMENT)
        ]
        info.output_messages = with_answer_tool_as_text(
            info.output_messages, FINAL_ANSWER, _ANSWER_ARGUMENT
        )
        info.tools = [t for t in info.tools if t.name != FINAL_ANSWER]
    elif info.kind == "tool" and info.tool_call is not None:
        call = info.tool_call
        call.args = _tool_input(call.args)
        call.result = python_literal(call.result)  # ``str()`` of what the tool returned
        if call.is_error and isinstance(call.result, str) and call.result:
            call.error_text = call.result  # the error chain down to the tool's own exception
    return info


def _is_error_event(span: Span) -> bool:
    path = span.attributes.get("metadata.path")
    return isinstance(path, str) and path.endswith(".error")


def _prompt(message: Message) -> Message:
    """A user message in BeeAI's task template as the prompt it carries (the
    ``ToolCallingAgent``'s template ends the prompt with a line break, which is not the user's)."""
    text = message_text(message) if message.role == "user" else ""
    if _TASK_MARK not in text:
        return message
    prompt = text[text.rfind(_TASK_MARK) + len(_TASK_MARK) :].rstrip("\n")
    return build_message(
        message.id, "user", [text_part(prompt)], message.created_at, message.content.metadata
    )


def _tool_input(args: Any) -> Any:
    """``Tool.run``'s ``{"input": {…}, "options": …}`` as the call's arguments."""
    if isinstance(args, dict) and set(args) <= {"input", "options"} and "input" in args:
        return args["input"]
    return args
