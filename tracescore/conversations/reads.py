"""What the API and the dashboard read of conversations: pages of them, and one in full.

Conversations are listed newest first by their latest turn, keyset-paginated on
``(last_turn_ns, conversation_id)`` so pages stay stable while turns arrive. One conversation
comes with its turns in order, each turn's run scores, and the conversation's own scores. The
queries are the tables' owners' (:mod:`tracescore.store.conversations`,
:mod:`tracescore.store.scores`); this module shapes what they return into documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracescore.cursors import cursor_int, decode_cursor, encode_cursor
from tracescore.store import Connection
from tracescore.store.conversations import (
    ConversationFilter,
    ConversationSummary,
    conversation_page,
    conversations_of_trace,
    find_conversation,
    turns_of,
)
from tracescore.store.scores import ScoreRecord, conversation_scores, run_scores
from tracescore.times import utc_text

__all__ = [
    "ConversationFilter",
    "conversation_document",
    "conversation_scores",
    "conversations_of_trace",
    "list_conversations",
]


def _iso(time_ns: int | None) -> str | None:
    return None if time_ns is None else utc_text(time_ns / 1e9)


def _position(cursor: str) -> tuple[int, str]:
    """The ``(last_turn_ns, conversation_id)`` a page's cursor names; ValueError for another."""
    moment, conversation_id = decode_cursor(cursor, 2)
    return cursor_int(moment), conversation_id


def _summary(row: ConversationSummary, scores: Sequence[ScoreRecord]) -> dict[str, Any]:
    return {
        "id": row.conversation_id,
        "agent": row.agent_name,
        "service": row.service_name,
        "turn_count": row.turn_count,
        "first_turn": _iso(row.first_turn_ns),
        "last_turn": _iso(row.last_turn_ns),
        "state": row.state,
        "scores": list(scores),
    }


def list_conversations(
    connection: Connection, where: ConversationFilter, limit: int, cursor: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of conversations, latest turn first, with their own scores; and the cursor of
    the next page (None on the last)."""
    after = _position(cursor) if cursor is not None else None
    rows = conversation_page(connection, where, limit + 1, after)
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        assert last.last_turn_ns is not None, "a page lists only conversations with a turn"
        next_cursor = encode_cursor(str(last.last_turn_ns), last.conversation_id)
    scores = conversation_scores(connection, [row.conversation_id for row in rows])
    return [_summary(row, scores.get(row.conversation_id, [])) for row in rows], next_cursor


def conversation_document(
    connection: Connection, conversation_id: str, *, with_steps: bool = False
) -> dict[str, Any] | None:
    """``{id, agent, service, state, ..., turns: [{trace_id, span_id, start_time, user, answer,
    scores}], scores}``: the turns in order with their run scores (their steps too with
    ``with_steps``, as the dashboard shows them); None if unknown."""
    row = find_conversation(connection, conversation_id)
    if row is None:
        return None
    turns = turns_of(connection, conversation_id)
    scored = run_scores(connection, [turn.trace_id for turn in turns], with_steps=with_steps)
    own = conversation_scores(connection, [conversation_id], with_steps=with_steps).get(
        conversation_id, []
    )
    document = _summary(row, own)
    document["turns"] = [
        {
            "trace_id": turn.trace_id,
            "span_id": turn.span_id,
            "start_time": _iso(turn.start_time_ns),
            "agent": turn.agent_name,
            "user": turn.user_text,
            "answer": turn.answer_text,
            "scores": scored.get(turn.trace_id, []),
        }
        for turn in turns
    ]
    return document
