"""Conversations: the turns (one trace each) that share a conversation id, in order.

A chat assistant answers each user message in its own trace; what users care about (was the
need met in the end, did the agent remember what it was told earlier) only shows across those
traces. A conversation is rebuilt from each turn's primary agent run, so every convention that
yields runs yields conversations too.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from tracescore.extract.model import AgentRun


class Turn(BaseModel):
    """One exchange: what the user said in one trace and what the agent answered."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    span_id: str
    start_time: datetime | None = None
    user: str = ""
    answer: str = ""
    run: AgentRun | None = None  # the turn's primary agent run, when it was rebuilt


class Conversation(BaseModel):
    """A conversation's turns, oldest first."""

    id: str
    agent_name: str | None = None
    service_name: str | None = None
    turns: list[Turn] = Field(default_factory=list)
    earlier_summary: str | None = None
    """One line standing for the turns cut before ``turns`` (a judge sees the most recent
    ``conversations.max_turns`` only), or None when nothing was cut."""
    earlier_turns: int = 0
    """How many turns were cut before ``turns``."""

    @property
    def turn_count(self) -> int:
        """Every turn of the conversation, shown or cut: what its scores are labelled with."""
        return self.earlier_turns + len(self.turns)

    @property
    def last_turn(self) -> Turn | None:
        return self.turns[-1] if self.turns else None
