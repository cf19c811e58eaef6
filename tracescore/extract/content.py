"""Whether a rebuilt run carries any content, and whether it is a loop's intermediate step: the
predicates scorers, the sources view and the conversation turns share.

Several instrumentations send only names and ids unless told otherwise (Google ADK and every
OpenTelemetry GenAI instrumentation until ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
is set; AutoGen's built-in spans always). Their runs come out with a name, a model, tool names
and usage, but no word of what was asked or answered. Scoring such a run describes nothing (every
default code scorer gave it 1.0), so scorers call it not scorable with :data:`NO_CONTENT_REASON`,
and the sources view counts it apart, both through :func:`has_content`.
"""

from __future__ import annotations

from typing import Any

from tracescore.extract.model import AgentRun, Message, MessagePart, ToolInvocation

NO_CONTENT_REASON = (
    "the run carries no message content (no system prompt, input, answer, reasoning or tool "
    "arguments and results): content capture is probably off in the instrumentation (the "
    "sources view names the setting for each library)"
)
"""The not-scorable reason of a run without content, naming the likely cause."""


def has_content(run: AgentRun) -> bool:
    """True when the run holds any text a scorer could read: a system prompt, an input or
    remembered message, an answer, reasoning, or a tool call's arguments or result.

    Names, ids, models and usage are not content: they are what instrumentations send with
    content capture off. Stops at the first content found (a normal run: its first message).
    """
    run_input = run.input
    if any(_system_text(message.content) for message in run_input.system_messages):
        return True
    messages = (run_input.input_messages, run_input.remembered_messages, run.output)
    return any(_message_has_content(message) for group in messages for message in group)


def _system_text(content: str | list[dict[str, Any]]) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    return any(isinstance(part, dict) and _filled(part.get("text")) for part in content)


def _message_has_content(message: Message) -> bool:
    content = message.content
    if _filled(content.content) or _filled(content.reasoning):
        return True
    if any(_part_has_content(part) for part in content.parts):
        return True
    return any(_invocation_has_content(call) for call in content.tool_invocations or ())


def _part_has_content(part: MessagePart) -> bool:
    if _filled(part.text) or _filled(part.reasoning) or part.data or part.url:
        return True
    return part.tool_invocation is not None and _invocation_has_content(part.tool_invocation)


def _invocation_has_content(call: ToolInvocation) -> bool:
    """Arguments or a result; an error text is not content (a span's status message is sent
    with capture off too)."""
    return _filled(call.args) or _filled(call.result)


def _filled(value: Any) -> bool:
    """A value with something in it: non-blank text, a non-empty structure, any number."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, dict | list | tuple):
        return bool(value)
    return True


def awaits_tool_results(run: AgentRun) -> bool:
    """True when the run answered only with tool calls still waiting for their results: a step
    of a hand-written loop whose calls arrived as separate traces (a client instrumentation
    starts a trace per request), not an answer. Its results, and the answer, are in a later
    call's run; scorers that read the answer call it not scorable, and it is no turn of its
    conversation. A model call that answered no text and whose finish reason says it stopped
    for tools is one too, where the instrumentation left the calls out (OpenLLMetry's Mistral
    one records no tool call of a reply)."""
    pending = False
    for message in run.output:
        for part in message.content.parts:
            if part.type == "text" and part.text and part.text.strip():
                return False
            call = part.tool_invocation
            pending = pending or (call is not None and call.state in ("call", "partial-call"))
    return pending or (run.kind == "llm" and stopped_for_tools(run.attributes))


_FINISH_REASONS = (
    "gen_ai.response.finish_reasons",
    "gen_ai.completion.0.finish_reason",
    "llm.response.finish_reason",
)
_FOR_TOOLS = frozenset(("tool_calls", "tool_call", "tool_use", "function_call"))
"""Finish reasons of a reply that stopped to call tools, in each provider's words."""


def stopped_for_tools(attributes: dict[str, Any]) -> bool:
    """Whether the span's finish reason (a list or one value) is a stop for tool calls."""
    for key in _FINISH_REASONS:
        value = attributes.get(key)
        reasons = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(reason, str) and reason in _FOR_TOOLS for reason in reasons):
            return True
    return False
