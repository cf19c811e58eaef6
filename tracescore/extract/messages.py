"""Messages and parts of the run model, built the way Mastra stores them, and read back as text.

Every convention module builds its messages with these, so every run carries the same shape: a
tool call is a ``tool-invocation`` part in state ``call``, its outcome the same part in state
``result`` or ``output-error``, and a message's legacy content fields (``content.content``,
``toolInvocations``) agree with its parts.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from tracescore.extract.base import json_text
from tracescore.extract.model import Message, MessageContent, MessagePart, ToolInvocation

SYSTEM_ROLES = frozenset({"system", "developer"})


def text_part(text: str) -> MessagePart:
    return MessagePart(type="text", text=text)


def reasoning_part(text: str) -> MessagePart:
    """Mastra's reasoning part: the text in ``reasoning`` and again as a ``details`` entry."""
    return MessagePart(type="reasoning", reasoning=text, details=[{"type": "text", "text": text}])


def tool_call_part(call_id: str, name: str, args: Any) -> MessagePart:
    invocation = executed_call(call_id, name, args, None, answered=False)
    return MessagePart(type="tool-invocation", tool_invocation=invocation)


def tool_result_part(
    call_id: str, name: str, result: Any, *, is_error: bool = False, args: Any = None
) -> MessagePart:
    invocation = executed_call(call_id, name, args, result, failed=is_error, answered=True)
    return MessagePart(type="tool-invocation", tool_invocation=invocation)


def executed_call(
    call_id: str,
    name: str,
    args: Any,
    result: Any,
    *,
    failed: bool = False,
    error: str | None = None,
    answered: bool | None = None,
) -> ToolInvocation:
    """A tool call with its outcome: ``output-error`` when it failed, ``result`` when it
    answered (by default: when a result was recorded), else still a ``call``."""
    answered = result is not None if answered is None else answered
    return ToolInvocation(
        tool_call_id=call_id,
        tool_name=name,
        args={} if args is None else args,
        result=result,
        state="output-error" if failed else ("result" if answered else "call"),
        is_error=failed or None,
        error_text=(error or json_text(result)) if failed else None,
    )


def build_message(
    message_id: str,
    role: str,
    parts: list[MessagePart],
    created_at: datetime | None = None,
    metadata: dict[str, Any] | None = None,
) -> Message:
    """A ``MastraDBMessage`` with the legacy content fields derived from its parts.

    Mastra's scorer utils read ``content.content`` (the text) before ``parts``, and older ones
    read ``content.toolInvocations``; filling both keeps every util seeing the same message.
    """
    texts = [p.text for p in parts if p.type == "text" and p.text]
    reasoning = [p.reasoning for p in parts if p.type == "reasoning" and p.reasoning]
    invocations = [p.tool_invocation for p in parts if p.tool_invocation is not None]
    content = MessageContent(
        parts=parts,
        content="".join(texts) if texts else None,
        tool_invocations=invocations or None,
        reasoning="\n".join(reasoning) if reasoning else None,
        metadata=metadata or None,
    )
    fields: dict[str, Any] = {"id": message_id, "role": role, "content": content}
    if created_at is not None:
        fields["created_at"] = created_at
    return Message(**fields)


def text_message(
    message_id: str, role: str, text: str, created_at: datetime | None = None
) -> Message:
    return build_message(message_id, role, [text_part(text)], created_at)


def message_text(message: Message) -> str:
    """The text of a message: ``content.content`` or its text parts joined."""
    if message.content.content:
        return message.content.content
    return "".join(p.text for p in message.content.parts if p.type == "text" and p.text)


def split_system(messages: Iterable[Message]) -> tuple[list[str], list[Message]]:
    """System/developer messages as texts, and the conversation without them."""
    system: list[str] = []
    rest: list[Message] = []
    for message in messages:
        if message.role in SYSTEM_ROLES:
            text = message_text(message)
            if text:
                system.append(text)
        else:
            rest.append(message)
    return system, rest


def answer_text_part(args: Any, argument: str) -> MessagePart:
    """An answer tool's arguments (``{argument: text}``) as the answer's text."""
    answer = args.get(argument, args) if isinstance(args, dict) else args
    return text_part(json_text(answer))


def with_answer_tool_as_text(messages: list[Message], tool: str, argument: str) -> list[Message]:
    """``messages`` with the calls of an answer tool (smolagents' and BeeAI's ``final_answer``)
    as the answer's text, and that tool's results (``Message has been sent``) dropped: the
    answer is what the agent said, not a tool it ran, and a step that answers is no
    tool-call-only step."""
    answer_ids = {
        call.tool_call_id
        for message in messages
        for call in message.content.tool_invocations or []
        if call.tool_name == tool and call.tool_call_id
    }
    if not answer_ids and not any(
        call.tool_name == tool for m in messages for call in m.content.tool_invocations or []
    ):
        return messages
    rebuilt: list[Message] = []
    for message in messages:
        parts: list[MessagePart] = []
        for part in message.content.parts:
            call = part.tool_invocation
            if call is None or (call.tool_name != tool and call.tool_call_id not in answer_ids):
                parts.append(part)
            elif message.role == "assistant":
                parts.append(answer_text_part(call.args, argument))
        if parts:
            rebuilt.append(
                build_message(
                    message.id, message.role, parts, message.created_at, message.content.metadata
                )
            )
    return rebuilt
