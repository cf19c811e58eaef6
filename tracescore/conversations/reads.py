"""What the API and the dashboard read of conversations: pages of them, and one in full.

Conversations are listed newest first by their latest turn, keyset-paginated on
``(last_turn_ns, conversation_id)`` so pages stay stable while turns arrive. One conversation
comes with its turns in order, each turn's run scores, and the conversation's own scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, and_, or_, select

from tracescore.restapi import NOT_A_CURSOR, decode_cursor, encode_cursor
from tracescore.store.conversations import ConversationRow, ConversationTurnRow, turns_of
from tracescore.store.scores import ScoreRow
from tracescore.store.table_of import table_of

CONVERSATIONS = table_of(ConversationRow)
TURNS = table_of(ConversationTurnRow)
SCORES = table_of(ScoreRow)

_PUBLIC_COLUMNS = [column for column in SCORES.c if column.name != "steps"]


@dataclass(frozen=True, slots=True)
class ConversationFilter:
    """Equality filters on the latest turn's agent and service, and a time range: a
    conversation matches when any of its turns started in ``[since, until)``."""

    agent: str | None = None
    service: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def conditions(self) -> list[Any]:
        c = CONVERSATIONS.c
        found = []
        if self.agent is not None:
            found.append(c.agent_name == self.agent)
        if self.service is not None:
            found.append(c.service_name == self.service)
        if self.since is not None:
            found.append(c.last_turn_ns >= _ns(self.since))
        if self.until is not None:
            found.append(c.first_turn_ns < _ns(self.until))
        return found


def _ns(moment: datetime) -> int:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return int(aware.timestamp() * 1_000_000) * 1_000


def _iso(time_ns: int | None) -> str | None:
    return None if time_ns is None else datetime.fromtimestamp(time_ns / 1e9, UTC).isoformat()


def _position(cursor: str) -> tuple[int, str]:
    """The ``(last_turn_ns, conversation_id)`` a page's cursor names; ValueError for another."""
    moment, conversation_id = decode_cursor(cursor, 2)
    try:
        return int(moment), conversation_id
    except ValueError:
        raise ValueError(NOT_A_CURSOR) from None


def _score_json(row: Any) -> dict[str, Any]:
    found = dict(row._mapping)
    for key in ("created_at", "updated_at"):
        moment = found[key]
        if isinstance(moment, datetime):
            found[key] = moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # SQLite's are naive
    return found


def _summary(row: Any, scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": row.conversation_id, "agent": row.agent_name, "service": row.service_name,
        "turn_count": row.turn_count, "first_turn": _iso(row.first_turn_ns), "last_turn": _iso(row.last_turn_ns),
        "state": row.state, "scores": list(scores),
    }  # fmt: skip


def _score_columns(with_steps: bool) -> list[Any]:
    return list(SCORES.c) if with_steps else _PUBLIC_COLUMNS


def conversation_scores(
    connection: Connection, conversation_ids: Sequence[str], *, with_steps: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """The conversations' own scores (not their turns'), by conversation, by binding."""
    if not conversation_ids:
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    rows = connection.execute(
        select(*_score_columns(with_steps)).where(SCORES.c.conversation_id.in_(list(conversation_ids)))
        .order_by(SCORES.c.binding, SCORES.c.scorer_version)
    )  # fmt: skip
    for row in rows:
        found.setdefault(row.conversation_id, []).append(_score_json(row))
    return found


def list_conversations(
    connection: Connection, where: ConversationFilter, limit: int, cursor: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of conversations, latest turn first, with their own scores; and the cursor of
    the next page (None on the last)."""
    c = CONVERSATIONS.c
    conditions = [*where.conditions(), c.last_turn_ns.is_not(None)]
    if cursor is not None:
        moment, conversation_id = _position(cursor)
        conditions.append(
            or_(c.last_turn_ns < moment, and_(c.last_turn_ns == moment, c.conversation_id < conversation_id))
        )
    rows = connection.execute(
        select(CONVERSATIONS).where(*conditions)
        .order_by(c.last_turn_ns.desc(), c.conversation_id.desc()).limit(limit + 1)
    ).all()  # fmt: skip
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        next_cursor = encode_cursor(str(rows[-1].last_turn_ns), rows[-1].conversation_id)
    scores = conversation_scores(connection, [row.conversation_id for row in rows])
    return [_summary(row, scores.get(row.conversation_id, [])) for row in rows], next_cursor


def conversation_document(
    connection: Connection, conversation_id: str, *, with_steps: bool = False
) -> dict[str, Any] | None:
    """``{id, agent, service, state, ..., turns: [{trace_id, span_id, start_time, user, answer,
    scores}], scores}``: the turns in order with their run scores (their steps too with
    ``with_steps``, as the dashboard shows them); None if unknown."""
    row = connection.execute(select(CONVERSATIONS).where(CONVERSATIONS.c.conversation_id == conversation_id)).first()
    if row is None:
        return None
    turns = turns_of(connection, conversation_id)
    run_scores: dict[str, list[dict[str, Any]]] = {}
    if turns:
        scored = connection.execute(
            select(*_score_columns(with_steps))
            .where(SCORES.c.trace_id.in_([turn.trace_id for turn in turns]), SCORES.c.conversation_id.is_(None))
            .order_by(SCORES.c.binding, SCORES.c.span_id)
        )  # fmt: skip
        for score in scored:
            run_scores.setdefault(score.trace_id, []).append(_score_json(score))
    own = conversation_scores(connection, [conversation_id], with_steps=with_steps).get(conversation_id, [])
    document = _summary(row, own)
    document["turns"] = [
        {"trace_id": turn.trace_id, "span_id": turn.span_id, "start_time": _iso(turn.start_time_ns),
         "agent": turn.agent_name, "user": turn.user_text, "answer": turn.answer_text,
         "scores": run_scores.get(turn.trace_id, [])}
        for turn in turns
    ]  # fmt: skip
    return document


def conversations_of_trace(connection: Connection, trace_id: str) -> list[str]:
    """The conversations a trace is a turn of (one, unless its id changed between scorings)."""
    rows = connection.execute(
        select(TURNS.c.conversation_id).where(TURNS.c.trace_id == trace_id).order_by(TURNS.c.conversation_id)
    )
    return [row.conversation_id for row in rows]
