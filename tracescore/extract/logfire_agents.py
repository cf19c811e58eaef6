"""Logfire's OpenAI Agents SDK integration (``logfire.instrument_openai_agents()``, scope
``logfire.openai_agents``).

Logfire turns the Agents SDK's own trace into spans told apart by their message template, not
by GenAI attributes: ``Agent run: {name!r}`` (the agent: ``name``, and its ``tools`` as a JSON
list of names), ``Turn {turn} for agent …`` and ``Task: …`` (structure), ``Chat completion with
{gen_ai.request.model!r}`` (a model call: the messages sent as ``input``, the reply's messages
as ``output``, both OpenAI Chat Completions JSON, usage as GenAI attributes) and ``Function:
{name}`` (a tool: ``name``, the arguments as ``input``, the result as ``output``; a failed
tool has an ``error`` object and an error status). Tool spans carry no call id: the run
assembly joins each to the model's call of that name, in order.
"""

from __future__ import annotations

from tracescore.extract.base import as_str, load_json, new_info, timestamp, usage_from
from tracescore.extract.chat_bodies import body_messages
from tracescore.extract.genai_messages import decode_result
from tracescore.extract.messages import executed_call, split_system
from tracescore.extract.model import Message, SpanInfo, ToolDefinition
from tracescore.spans import LogRecord, Span

NAME = "logfire-openai-agents"

SCOPE = "logfire.openai_agents"
_TEMPLATE = "logfire.msg_template"
_AGENT, _CHAT, _TOOL = "Agent run:", "Chat completion with", "Function:"


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = new_info(span, NAME)
    attributes = span.attributes
    template = as_str(attributes.get(_TEMPLATE)) or ""
    if template.startswith(_AGENT):
        info.kind = "agent"
        info.agent_name = as_str(attributes.get("name"))
        tools = load_json(attributes.get("tools"), info.warnings, "tools")
        if isinstance(tools, list):
            info.tools = [ToolDefinition(name=name) for name in tools if isinstance(name, str)]
    elif template.startswith(_CHAT):
        _read_chat(span, info)
    elif template.startswith(_TOOL):
        returned = attributes.get("output")
        result, failed = decode_result(returned)
        failed = failed or info.status == "error" or "error" in attributes
        info.kind = "tool"
        info.tool_call = executed_call(
            "",
            as_str(attributes.get("name")) or span.name,
            load_json(attributes.get("input"), info.warnings, "input") or {},
            result,
            failed=failed,
            error=info.error or (as_str(result) if failed else None),
            answered=returned is not None,
        )
    return info


def _read_chat(span: Span, info: SpanInfo) -> None:
    """A model call: the Chat Completions messages it was sent and answered."""
    attributes = span.attributes
    info.kind = "llm"
    info.model = as_str(attributes.get("gen_ai.response.model")) or as_str(
        attributes.get("gen_ai.request.model")
    )
    info.provider = as_str(attributes.get("gen_ai.system"))
    info.usage = (
        usage_from(
            attributes,
            input_tokens=("gen_ai.usage.input_tokens",),
            output_tokens=("gen_ai.usage.output_tokens",),
        )
        or info.usage
    )
    sent = _messages(
        body_messages(
            attributes.get("input"),
            "input",
            span.span_id,
            "in",
            info,
            timestamp(span.start_time_ns),
        )
    )
    system, info.input_messages = split_system(sent)
    info.system.extend(system)
    info.output_messages = _messages(
        body_messages(
            attributes.get("output"),
            "output",
            span.span_id,
            "out",
            info,
            timestamp(span.end_time_ns),
        )
    )


def _messages(found: list[Message | None]) -> list[Message]:
    return [message for message in found if message is not None]
