"""A trace's turn (what the user said, what the agent answered) and the line that stands for
the turns a judge is not shown."""

from __future__ import annotations

from collections.abc import Sequence

from tracescore.extract.conversation import Turn
from tracescore.extract.model import AgentRun, Message

SUMMARY_QUOTE_CHARS = 80
"""How much of each earlier user message the summary line quotes."""
SUMMARY_CHARS = 1_000


def _text(message: Message) -> str:
    content = message.content
    if content.content:
        return content.content
    return "\n".join(part.text for part in content.parts if part.type == "text" and part.text)


def user_text(run: AgentRun) -> str:
    """What the user said in this turn: the user messages after the last assistant message of
    the run's input (earlier ones are history the agent was sent again)."""
    messages = run.input.input_messages
    last_answer = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return "\n".join(
        text for m in messages[last_answer + 1 :] if m.role == "user" and (text := _text(m))
    )


def answer_text(run: AgentRun) -> str:
    """The agent's final answer of the turn."""
    return "\n".join(text for m in run.output if m.role == "assistant" and (text := _text(m)))


def turn_of(run: AgentRun) -> Turn:
    """The turn a trace's primary agent run stands for."""
    return Turn(
        trace_id=run.trace_id,
        span_id=run.span_id,
        start_time=run.start_time,
        user=user_text(run),
        answer=answer_text(run),
        run=run,
    )


def earlier_summary(earlier: Sequence[Turn]) -> str | None:
    """One line for the turns cut before those a scorer sees: how many, and what the user said
    in each (quoted short), so a judge knows the conversation did not start where it is shown."""
    if not earlier:
        return None
    quotes = "; ".join(
        repr(
            turn.user[:SUMMARY_QUOTE_CHARS] + ("…" if len(turn.user) > SUMMARY_QUOTE_CHARS else "")
        )
        for turn in earlier
        if turn.user
    )
    noun = "turn" if len(earlier) == 1 else "turns"
    line = f"{len(earlier)} earlier {noun} not shown" + (
        f"; the user said: {quotes}" if quotes else ""
    )
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"
