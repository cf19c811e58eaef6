"""The messages a run was sent, read as a turn: the user's question, the history before it, the
steps after it, and the answer texts a run takes from them.
"""

from __future__ import annotations

from tracescore.extract.messages import build_message, message_text
from tracescore.extract.model import Message, MessagePart, RunInput, SystemMessage
from tracescore.extract.runs.trajectory import RESOLVED, Trajectory


def is_user_turn(message: Message) -> bool:
    """A message the user typed, not a tool result sent with role ``user`` (Pydantic AI)."""
    return message.role == "user" and any(
        part.type != "tool-invocation" for part in message.content.parts
    )


def split_turn(conversation: list[Message]) -> tuple[list[Message], list[Message]]:
    """(history, current turn): the turn starts at the last block of user messages."""
    last = next(
        (i for i in range(len(conversation) - 1, -1, -1) if is_user_turn(conversation[i])), None
    )
    if last is None:
        return [], list(conversation)
    start = last
    while start > 0 and is_user_turn(conversation[start - 1]):
        start -= 1
    return conversation[:start], conversation[start:]


def _user_block(turn: list[Message]) -> int:
    """How many messages the user typed at the start of a turn (before its tool steps)."""
    return next((i for i, m in enumerate(turn) if not is_user_turn(m)), len(turn))


def run_input_and_steps(
    system: list[str], conversation: list[Message]
) -> tuple[RunInput, list[Message]]:
    """The run input (system prompt, the user's messages of the current turn, the history
    before them) and the current turn's steps after the user's messages.

    Those steps (tool calls and the results sent back) are the run's own work, not something the
    user said: an LLM call puts them at the head of its trajectory, an agent (whose input was a
    handoff's history) in its history. History is joined (a tool result on its call) the way
    Mastra keeps memory, so no scorer reads a result apart from the call it answers.
    """
    history, current = split_turn(conversation)
    block = _user_block(current)
    run_input = RunInput(
        input_messages=current[:block],
        remembered_messages=with_results_joined(history),
        system_messages=[SystemMessage(content=text) for text in system],
    )
    return run_input, current[block:]


def with_results_joined(messages: list[Message]) -> list[Message]:
    """Messages with every tool result moved onto the assistant's call it answers.

    A message that only carried results (role ``tool``, or ``user`` in Pydantic AI format 5)
    disappears once all of them found their call; results that answer no call stay where they
    were.
    """
    if not any(_only_results(m) for m in messages):
        return messages
    trajectory = Trajectory()
    spans: list[tuple[Message, int, int] | Message] = []
    for message in messages:
        if message.role == "assistant":
            start = len(trajectory.parts)
            trajectory.add_parts(message.content.parts)
            spans.append((message, start, len(trajectory.parts)))
        elif _only_results(message):
            left = [part for part in message.content.parts if not trajectory.join_result(part)]
            if left:
                spans.append(
                    build_message(
                        message.id, message.role, left, message.created_at, message.content.metadata
                    )
                )
        else:
            spans.append(message)
    joined: list[Message] = []
    for item in spans:
        if isinstance(item, Message):
            joined.append(item)
        else:
            message, start, end = item
            joined.append(
                build_message(
                    message.id,
                    message.role,
                    trajectory.parts[start:end],
                    message.created_at,
                    message.content.metadata,
                )
            )
    return joined


def _only_results(message: Message) -> bool:
    """A message that carries tool results and nothing else."""
    parts = message.content.parts
    return (
        message.role in ("tool", "user")
        and bool(parts)
        and all(
            p.tool_invocation is not None and p.tool_invocation.state in RESOLVED for p in parts
        )
    )


def final_text(messages: list[Message]) -> str:
    texts = [message_text(m) for m in messages if m.role == "assistant"]
    return next((t for t in reversed(texts) if t), "")


def conversation_text(messages: list[Message]) -> str:
    return "\n".join(t for t in (message_text(m) for m in messages if is_user_turn(m)) if t)


def last_text(parts: list[MessagePart]) -> str:
    return next((p.text for p in reversed(parts) if p.type == "text" and p.text), "")
