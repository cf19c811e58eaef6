"""DSPy through openinference-instrumentation-dspy (span formats: DSPy).

The spans are OpenInference, read by :mod:`tracescore.extract.openinference`; this module reads
what DSPy does its own way:

* DSPy's adapters do not send a conversation but *fields*: the system message describes the
  signature (``Your input fields are: …``) and ends with the task's instructions (``In adhering
  to this structure, your objective is: …``); the user message holds the input fields as
  ``[[ ## question ## ]]\\n…`` sections, the reply the output fields (``[[ ## answer ## ]]``).
  Read as messages: the instructions are the system prompt, the input fields the user's text,
  the output fields the answer (``reasoning`` / ``next_thought`` as reasoning); with
  ``JSONAdapter`` the reply is a JSON object of the output fields instead;
* ``ReAct`` has the model choose a tool in fields (``next_tool_name``, ``next_tool_args``) and
  sends each step back inside the user message as ``thought_N``, ``tool_name_N``,
  ``tool_args_N`` and ``observation_N`` sections: read as the assistant's tool calls (id
  ``dspy-step-N``) and their results, so a step's trajectory holds its calls. Its ``finish``
  tool marks the end, no call; an extract call then writes the answer;
* the ``ReAct.forward`` span (a ``CHAIN`` whose output holds the ``trajectory``) is the agent;
  the other modules' ``CHAIN`` spans (``Predict.forward``, ``ChatAdapter.__call__``…) are no
  runs: their values are the fields again;
* a tool runs as ``{name}.__call__`` with ``{"kwargs": {…}}``: the tool is ``name``, its
  arguments ``kwargs``;
* ``ReAct``'s steps are sent the earlier turns of a ``dspy.History`` with ``None`` in their
  own output fields (the turns hold an ``answer``): those turns are filled from the history
  the agent was called with;
* with LiteLLM instrumented as well (DSPy calling the model through LiteLLM), each model call
  also has a LiteLLM span below DSPy's ``LM.__call__``, with the same fields and the usage:
  those spans are read here too.
"""

from __future__ import annotations

import re
import textwrap
from datetime import datetime

from tracescore.extract import openinference
from tracescore.extract.base import json_text, load_json, new_info, python_literal
from tracescore.extract.genai_messages import decode_result
from tracescore.extract.messages import (
    build_message,
    message_text,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_result_part,
)
from tracescore.extract.model import Message, MessagePart, SpanInfo
from tracescore.spans import LogRecord, Span

NAME = "openinference-dspy"

SCOPE = "openinference.instrumentation.dspy"
LITELLM_SCOPE = "openinference.instrumentation.litellm"
FINISH = "finish"
CALL_ID_PREFIX = "dspy-step-"
_SIGNATURE_PROMPT = "Your input fields are:"
_OBJECTIVE = "In adhering to this structure, your objective is: "
_RESPOND = "\n\nRespond with "  # ChatAdapter: "the corresponding output fields…", JSONAdapter: "a JSON object…"
_FIELD = re.compile(r"\[\[ ## (\w{1,100}) ## \]\]")
_STEP_FIELD = re.compile(r"(thought|tool_name|tool_args|observation)_(\d{1,4})")
_THOUGHTS = ("next_thought", "reasoning")
_SKIPPED = frozenset({"completed", "trajectory", "history", "next_tool_name", "next_tool_args"})
_ERROR_OBSERVATION = "Execution error in "
_TOOL_SUFFIX = ".__call__"
_HISTORY_PREFIX = "messages="
_MAX_DEPTH = 10  # spans between a model call and its agent: Predict, adapter, LM
_ABSENT = ("", "None")  # DSPy writes a missing field (a history turn's other outputs) as None


def in_scope(scope: str) -> bool:
    return scope in (SCOPE, LITELLM_SCOPE)


def detect(span: Span) -> bool:
    attributes = span.attributes
    if span.scope.name == SCOPE:
        return "openinference.span.kind" in attributes
    system = attributes.get("llm.input_messages.0.message.content")
    return isinstance(system, str) and system.startswith(_SIGNATURE_PROMPT)


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    if span.attributes.get("openinference.span.kind") == "CHAIN":
        info = new_info(span, NAME)
        if _is_agent(span):
            info.kind = "agent"
            info.agent_name = span.name.split(".", 1)[0]
        return info
    info = openinference.read(span, logs)
    info.convention = NAME
    if info.kind == "llm":
        _read_fields(info)
    elif info.kind == "tool" and info.tool_call is not None:
        call = info.tool_call
        call.tool_name = call.tool_name.removesuffix(_TOOL_SUFFIX)
        if call.tool_name == FINISH:
            return new_info(span, NAME)  # the end of the trajectory, no tool run
        if isinstance(call.args, dict) and set(call.args) <= {"args", "kwargs"}:
            call.args = call.args.get("kwargs") or call.args.get("args") or {}
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Fill the history turns a step was sent as ``None`` fields (``ReAct``'s steps are sent
    the earlier turns' ``answer`` under their own output fields) from the ``dspy.History``
    the agent was called with."""
    by_id = {span.span_id: (span, info) for span, info in read}
    for span, info in read:
        if info.kind != "llm" or not any(_unfilled(m) for m in info.input_messages):
            continue
        agent = _agent_of(span, by_id)
        answers = iter(_history_answers(agent) if agent is not None else [])
        info.input_messages = [
            _rebuilt(m, "assistant", [text_part(answer)])
            if _unfilled(m) and (answer := next(answers, None)) is not None
            else m
            for m in info.input_messages
        ]


def _unfilled(message: Message) -> bool:
    return message.role == "assistant" and not message.content.parts


def _agent_of(span: Span, by_id: dict[str, tuple[Span, SpanInfo]]) -> Span | None:
    parent = by_id.get(span.parent_span_id or "")
    for _ in range(_MAX_DEPTH):
        if parent is None or parent[1].kind == "agent":
            break
        parent = by_id.get(parent[0].parent_span_id or "")
    return parent[0] if parent is not None and parent[1].kind == "agent" else None


def _history_answers(agent: Span) -> list[str]:
    """Each earlier turn's outputs, from the agent's ``history`` argument (``messages=[{…}]``,
    the repr of a ``dspy.History``): the fields that are not the agent's inputs."""
    body = load_json(agent.attributes.get("input.value"), [], "input.value")
    arguments = body.get("input_args") if isinstance(body, dict) else None
    if not isinstance(arguments, dict):
        return []
    history = arguments.get("history")
    if not isinstance(history, str) or not history.startswith(_HISTORY_PREFIX):
        return []
    turns = python_literal(history[len(_HISTORY_PREFIX) :])
    answers = []
    for turn in turns if isinstance(turns, list) else []:
        if isinstance(turn, dict):
            outputs = {str(k): str(v) for k, v in turn.items() if k not in arguments}
            answers.append(_joined(outputs) if outputs else "")
    return answers


def _is_agent(span: Span) -> bool:
    """A module whose result holds a ``trajectory``: ``ReAct`` (or a program returning its
    prediction)."""
    output = span.attributes.get("output.value")
    return isinstance(output, str) and output.startswith('{"trajectory"')


def _read_fields(info: SpanInfo) -> None:
    info.system = [_instructions(text) for text in info.system]
    messages: list[Message] = []
    for message in info.input_messages:
        messages.extend(_input_messages(message))
    info.input_messages = messages
    step = sum(1 for m in messages if m.role == "tool")
    info.output_messages = [_output_message(m, step) for m in info.output_messages]


def _instructions(system: str) -> str:
    """The task's instructions out of DSPy's description of the signature."""
    if not system.startswith(_SIGNATURE_PROMPT) or _OBJECTIVE not in system:
        return system
    return textwrap.dedent(system.split(_OBJECTIVE, 1)[1]).strip() or system


def _fields(text: str) -> dict[str, str] | None:
    """The ``[[ ## name ## ]]`` sections of a message, in order, or the fields of a JSON
    object (``JSONAdapter``'s replies); None when it has neither."""
    pieces = _FIELD.split(text)
    if len(pieces) >= 3:
        return {name: value.strip() for name, value in zip(pieces[1::2], pieces[2::2], strict=True)}
    if not text.lstrip().startswith("{"):
        return None
    decoded = load_json(text, [], "fields")
    if not isinstance(decoded, dict) or not decoded:
        return None
    return {str(name): json_text(value) for name, value in decoded.items()}


def _input_messages(message: Message) -> list[Message]:
    """A user message's input fields as the user's text, then its trajectory as the calls and
    results of earlier steps; an assistant message (a history turn) as its output fields."""
    text = message_text(message)
    fields = _fields(text.rsplit(_RESPOND, 1)[0] if message.role == "user" else text)
    if fields is None:
        return [message]
    if message.role == "assistant":
        # A history turn whose fields are not this signature's outputs reads as None in each:
        # kept empty, so the turns stay apart, and filled from the agent's history (refine).
        return [_rebuilt(message, "assistant", _answer_parts(fields, 0))]
    steps: dict[int, dict[str, str]] = {}
    inputs: dict[str, str] = {}
    for name, value in fields.items():
        if step := _STEP_FIELD.fullmatch(name):
            steps.setdefault(int(step.group(2)), {})[step.group(1)] = value
        elif name not in _SKIPPED and value not in _ABSENT:
            inputs[name] = value
    rebuilt = [_rebuilt(message, message.role, [text_part(_joined(inputs))])] if inputs else []
    for index, step_fields in sorted(steps.items()):
        rebuilt.extend(_step_messages(message, index, step_fields))
    return rebuilt


def _step_messages(message: Message, index: int, fields: dict[str, str]) -> list[Message]:
    """One trajectory step: the assistant's thought and call, then the tool's observation."""
    parts: list[MessagePart] = []
    if thought := fields.get("thought"):
        parts.append(reasoning_part(thought))
    name = fields.get("tool_name", "")
    call_id = f"{CALL_ID_PREFIX}{index}"
    if name and name != FINISH:
        args = load_json(fields.get("tool_args"), [], "tool_args")
        parts.append(tool_call_part(call_id, name, args if args is not None else {}))
    step = [_rebuilt(message, "assistant", parts, f"-step-{index}")] if parts else []
    observation = fields.get("observation")
    if name and name != FINISH and observation is not None:
        result, _ = decode_result(observation)
        failed = observation.startswith(_ERROR_OBSERVATION)
        result_part = tool_result_part(call_id, name, result, is_error=failed)
        step.append(_rebuilt(message, "tool", [result_part], f"-result-{index}"))
    return step


def _output_message(message: Message, step: int) -> Message:
    fields = _fields(message_text(message))
    if fields is None:
        return message
    return _rebuilt(message, message.role, _answer_parts(fields, step))


def _answer_parts(fields: dict[str, str], step: int) -> list[MessagePart]:
    """Output fields as parts: the thought as reasoning, a chosen tool as its call (not
    ``finish``), the other fields as the answer's text."""
    parts: list[MessagePart] = [
        reasoning_part(fields[name]) for name in _THOUGHTS if fields.get(name, "") not in _ABSENT
    ]
    tool = fields.get("next_tool_name", "")
    if tool not in _ABSENT and tool != FINISH:
        args = load_json(fields.get("next_tool_args"), [], "next_tool_args")
        parts.append(
            tool_call_part(f"{CALL_ID_PREFIX}{step}", tool, args if args is not None else {})
        )
    answer = {
        name: value
        for name, value in fields.items()
        if name not in _SKIPPED and name not in _THOUGHTS and value not in _ABSENT
    }
    if answer:
        parts.append(text_part(_joined(answer)))
    return parts


def _joined(fields: dict[str, str]) -> str:
    """One field's value as it is; several as ``name: value`` paragraphs."""
    if len(fields) == 1:
        return next(iter(fields.values()))
    return "\n\n".join(f"{name}: {value}" for name, value in fields.items())


def _rebuilt(message: Message, role: str, parts: list[MessagePart], suffix: str = "") -> Message:
    created: datetime | None = message.created_at
    return build_message(f"{message.id}{suffix}", role, parts, created, message.content.metadata)
