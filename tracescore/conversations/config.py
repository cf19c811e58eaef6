"""The ``conversations:`` section: how turns are grouped and when a conversation is scored."""

from __future__ import annotations

from pydantic import Field

from tracescore.extract.conversation_id import DEFAULT_ID_ATTRIBUTES
from tracescore.settings import Duration, Section


class ConversationsConfig(Section):
    """Conversation assembly; the scorers that judge conversations are bindings with
    ``target: conversation`` under ``scorers:``."""

    id_attributes: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ID_ATTRIBUTES), min_length=1
    )
    """Span or resource attributes naming a trace's conversation, most preferred first: the
    defaults cover the GenAI, OpenInference, Langfuse, OpenLLMetry, Vercel AI SDK and Mastra
    conventions; custom instrumentation adds its own (the list replaces the defaults)."""
    idle_timeout: Duration = 900.0
    """A conversation is scored once no turn arrived for this long (default 15m)."""
    max_wait: Duration = 3600.0
    """...or at the latest this long after its first unscored turn, so an endless chat is
    still scored (default 1h)."""
    max_turns: int = Field(20, ge=1, le=1000)
    """The most recent turns a scorer is shown; earlier ones are summed up in one line
    (``Conversation.earlier_summary``)."""
    lease_seconds: Duration = 120.0
    """How long a worker's claim on a conversation lasts before another may take it (judging
    a long conversation takes several judge calls)."""
