"""Conversations built in memory, a turn per trace, for the conversation scorers' tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tracescore.extract.conversation import Conversation, Turn
from tracescore.extract.model import AgentRun, RunInput, SystemMessage

CONCIERGE = "You are Concierge, a helpful city guide."
START = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)


def conversation(
    *exchanges: tuple[str, str], system: str | None = CONCIERGE, summary: str | None = None
) -> Conversation:
    """A conversation of ``(user, answer)`` turns, one trace each, a minute apart; each turn's
    run carries the system prompt, as an extracted agent run does."""
    turns = []
    for index, (user, answer) in enumerate(exchanges):
        trace_id, span_id = f"{index + 1:032x}", f"{index + 1:016x}"
        run = AgentRun(
            trace_id=trace_id,
            span_id=span_id,
            primary=True,
            agent_name="concierge",
            input=RunInput(system_messages=[SystemMessage(content=system)] if system else []),
        )
        turns.append(
            Turn(
                trace_id=trace_id,
                span_id=span_id,
                start_time=START + timedelta(minutes=index),
                user=user,
                answer=answer,
                run=run,
            )
        )
    return Conversation(id="conv-ada", agent_name="concierge", turns=turns, earlier_summary=summary)
