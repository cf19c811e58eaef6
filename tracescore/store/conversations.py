"""Conversations in SQL: their turns, and each conversation's life between turns and scores.

A turn is recorded by the trace worker when it stores a trace's scores, in the same
transaction (:func:`record_turns`): the trace's primary agent run, its user message and answer,
under the conversation id the trace named. Recording a turn makes the conversation ``pending``
with a new ``generation``, whatever its state, as a span does to a trace (see
:mod:`tracescore.store.trace_queue`, whose states and lease rules these follow): ``pending`` ->
``ready`` (no turn for the idle timeout, or pending for ``max_wait``) -> ``claimed`` (a worker
holds a lease) -> ``scored``. A turn recorded while the conversation is claimed bumps its
generation, and completing that claim sends it back to ``pending``: the later turn gets the
conversation rescored. An expired lease makes it claimable again; too many failed attempts
park it as ``failed`` until its next turn.

Conversation scores are rows of ``scores`` with ``conversation_id`` set (and the last turn's
trace and span), keyed by conversation, binding and the turns covered
(``conversation_turns``), so each scoring of a conversation that went on is kept.

Longer than most modules on purpose: the one owner of the two tables, it holds the queue's
statements, the API's reads and retention's delete (grouped under a comment per calling part).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Index,
    and_,
    bindparam,
    delete,
    or_,
    select,
    text,
)
from sqlmodel import Field, SQLModel

from tracescore.store.aging import still_in
from tracescore.store.bulk import BulkInsert, bulk_insert
from tracescore.store.column_types import utc_micros
from tracescore.store.leased_queue import LeasedQueueSql, TraceState
from tracescore.store.table_of import table_of
from tracescore.store.text import TextGuard

MAX_ID_CHARS = 200
TURN_TEXT_CHARS = 4_000
"""What a turn row keeps of the user message and of the answer, for the API and the
dashboard; scorers read the full text from the turn's trace."""


class ConversationRow(SQLModel, table=True):
    """One conversation's assembly state; ``generation`` grows with every recorded turn."""

    __tablename__ = "conversations"
    __table_args__ = (
        Index("ix_conversations_state_last_seen", "state", "last_seen"),
        Index("ix_conversations_state_pending_since", "state", "pending_since"),
        Index("ix_conversations_last_turn", "last_turn_ns"),
    )

    conversation_id: str = Field(primary_key=True, max_length=MAX_ID_CHARS)
    service_name: str | None = Field(default=None, max_length=200)
    agent_name: str | None = Field(default=None, max_length=200)
    """Of the latest turn: the agent answering the conversation now."""
    turn_count: int = Field(sa_column=Column(BigInteger, nullable=False))
    first_turn_ns: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    last_turn_ns: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    """Start of the latest turn (OTLP nanoseconds): what the API's time filters and order use."""
    generation: int = Field(sa_column=Column(BigInteger, nullable=False))
    first_seen: float
    last_seen: float
    """When a turn was last recorded (seconds since the epoch): idleness counts from here."""
    pending_since: float
    state: str = Field(max_length=16)
    claimed_generation: int | None = Field(
        default=None, sa_column=Column(BigInteger, nullable=True)
    )
    scored_generation: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    attempts: int = 0
    last_error: str | None = Field(default=None, max_length=2000)


class ConversationLeaseRow(SQLModel, table=True):
    """The lease of a claimed conversation (:mod:`tracescore.store.leased_queue`)."""

    __tablename__ = "conversation_leases"

    conversation_id: str = Field(primary_key=True, max_length=MAX_ID_CHARS)
    token: str = Field(max_length=32)
    owner: str = Field(max_length=200)
    expires: float


class ConversationTurnRow(SQLModel, table=True):
    """One turn: a trace of the conversation, with what was said (cut to ``TURN_TEXT_CHARS``)."""

    __tablename__ = "conversation_turns"
    __table_args__ = (Index("ix_conversation_turns_trace", "trace_id"),)

    conversation_id: str = Field(primary_key=True, max_length=MAX_ID_CHARS)
    trace_id: str = Field(primary_key=True, max_length=32)
    span_id: str = Field(max_length=16)
    start_time_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    user_text: str = Field(max_length=TURN_TEXT_CHARS)
    answer_text: str = Field(max_length=TURN_TEXT_CHARS)
    agent_name: str | None = Field(default=None, max_length=200)
    service_name: str | None = Field(default=None, max_length=200)
    recorded_at: float


CONVERSATIONS = table_of(ConversationRow)
TURNS = table_of(ConversationTurnRow)


def storable_id(conversation_id: str) -> str:
    """The id as stored: clients' ids are free text, so unstorable characters are replaced and
    an id longer than the column keeps a prefix plus a hash of the whole (still unique)."""
    cleaned = TextGuard().text(conversation_id)
    if len(cleaned) <= MAX_ID_CHARS:
        return cleaned
    digest = hashlib.sha256(cleaned.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{cleaned[: MAX_ID_CHARS - 33]}~{digest}"


def _fit(value: str | None, length: int, guard: TextGuard) -> str | None:
    if value is None:
        return None
    value = guard.text(value)
    return value if len(value) <= length else value[: length - 1] + "…"


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """What the trace worker records of one trace's turn."""

    conversation_id: str
    trace_id: str
    span_id: str
    start_time_ns: int
    user_text: str
    answer_text: str
    agent_name: str | None
    service_name: str | None

    def row(self, now: float, guard: TextGuard) -> dict[str, Any]:
        return {
            "conversation_id": storable_id(self.conversation_id),
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "start_time_ns": self.start_time_ns,
            "user_text": _fit(self.user_text, TURN_TEXT_CHARS, guard),
            "answer_text": _fit(self.answer_text, TURN_TEXT_CHARS, guard),
            "agent_name": _fit(self.agent_name, 200, guard),
            "service_name": _fit(self.service_name, 200, guard),
            "recorded_at": now,
        }


_TURN_COLUMNS = (
    "conversation_id",
    "trace_id",
    "span_id",
    "start_time_ns",
    "user_text",
    "answer_text",
    "agent_name",
    "service_name",
    "recorded_at",
)
_TURN_INSERTS: dict[tuple[str, str], BulkInsert] = {}

_LATEST = (
    "(SELECT latest.{column} FROM conversation_turns AS latest "
    "WHERE latest.conversation_id = turns.conversation_id "
    "ORDER BY latest.start_time_ns DESC, latest.trace_id DESC LIMIT 1)"
)
_TOUCH = text(
    f"""
INSERT INTO conversations (conversation_id, service_name, agent_name, turn_count, first_turn_ns,
    last_turn_ns, generation, first_seen, last_seen, pending_since, state, attempts)
SELECT turns.conversation_id, {_LATEST.format(column="service_name")}, {_LATEST.format(column="agent_name")},
    count(*), min(turns.start_time_ns), max(turns.start_time_ns), 1,
    CAST(:now AS FLOAT), CAST(:now AS FLOAT), CAST(:now AS FLOAT), '{TraceState.PENDING}', 0
FROM conversation_turns AS turns WHERE turns.conversation_id IN :conversation_ids
GROUP BY turns.conversation_id ORDER BY turns.conversation_id
ON CONFLICT (conversation_id) DO UPDATE SET
    turn_count = excluded.turn_count, first_turn_ns = excluded.first_turn_ns,
    last_turn_ns = excluded.last_turn_ns, service_name = excluded.service_name,
    agent_name = excluded.agent_name,
    generation = conversations.generation + 1,
    last_seen = excluded.last_seen,
    pending_since = CASE WHEN conversations.state IN ('{TraceState.SCORED}', '{TraceState.FAILED}')
        THEN excluded.pending_since ELSE conversations.pending_since END,
    attempts = CASE WHEN conversations.state = '{TraceState.FAILED}' THEN 0 ELSE conversations.attempts END,
    state = CASE WHEN conversations.state = '{TraceState.CLAIMED}'
        THEN conversations.state ELSE '{TraceState.PENDING}' END
"""
).bindparams(bindparam("conversation_ids", expanding=True))


def _turn_insert(conn: Connection) -> BulkInsert:
    dialect = conn.dialect
    key = (dialect.name, dialect.paramstyle)
    if (insert := _TURN_INSERTS.get(key)) is None:
        insert = _TURN_INSERTS[key] = bulk_insert(
            dialect.name,
            dialect.paramstyle,
            "conversation_turns",
            _TURN_COLUMNS,
            update=_TURN_COLUMNS[2:],
            key="conversation_id, trace_id",
        )
    return insert


def record_turns(conn: Connection, turns: Sequence[TurnRecord], now: float | None = None) -> int:
    """Store turns and make their conversations pending with a new generation, in ``conn``'s
    transaction (the one storing the turns' traces' scores); returns the text values replaced.

    Two statements whatever the number of turns (the store's bulk path, then one upsert of the
    conversations from their turns, in id order, so concurrent writers on PostgreSQL lock them
    in one order and cannot deadlock); a conversation takes agent and service from its latest
    turn, whichever order turns were recorded in."""
    if not turns:
        return 0
    now = time.time() if now is None else now
    guard = TextGuard()
    rows = {
        (row["conversation_id"], row["trace_id"]): row
        for row in (turn.row(now, guard) for turn in turns)
    }
    _turn_insert(conn)(conn, [tuple(rows[key][c] for c in _TURN_COLUMNS) for key in sorted(rows)])
    conn.execute(_TOUCH, {"conversation_ids": sorted({key for key, _trace in rows}), "now": now})
    return guard.replaced


@dataclass(frozen=True, slots=True)
class ConversationClaim:
    """A worker's lease on one ready conversation; hand it back to ``complete`` or ``release``."""

    conversation_id: str
    generation: int
    owner: str
    token: str
    lease_expires: float


@dataclass(frozen=True, slots=True)
class ConversationReadiness:
    """When a pending conversation is ready to score (seconds)."""

    idle_timeout: float
    max_wait: float
    max_attempts: int = 5


_PROMOTE_IDLE = text(
    f"UPDATE conversations SET state = '{TraceState.READY}' "
    f"WHERE state = '{TraceState.PENDING}' AND last_seen <= :cut"
)
_PROMOTE_OVERDUE = text(
    f"UPDATE conversations SET state = '{TraceState.READY}' "
    f"WHERE state = '{TraceState.PENDING}' AND pending_since <= :cut"
)
_SQL = LeasedQueueSql.of(
    "conversations",
    "conversation_leases",
    "conversation_id",
    "conversations.conversation_id, conversations.generation",
)


class ConversationQueue:
    """Promotion, claims under leases, completion and release of conversations."""

    def __init__(
        self,
        write_transaction: Callable[[], AbstractContextManager[Connection]],
        rules: ConversationReadiness,
    ) -> None:
        self._write_transaction = write_transaction
        self.rules = rules

    def _promote(self, conn: Connection, now: float) -> int:
        idle = conn.execute(_PROMOTE_IDLE, {"cut": now - self.rules.idle_timeout}).rowcount
        return int(
            idle + conn.execute(_PROMOTE_OVERDUE, {"cut": now - self.rules.max_wait}).rowcount
        )

    def promote(self, now: float | None = None) -> int:
        """Mark idle (or overdue) pending conversations ready; returns how many."""
        with self._write_transaction() as conn:
            return self._promote(conn, time.time() if now is None else now)

    def claim(
        self, owner: str, limit: int, lease_seconds: float, now: float | None = None
    ) -> list[ConversationClaim]:
        """Promote, then lease up to ``limit`` ready conversations (or ones whose lease
        expired), in one transaction."""
        now = time.time() if now is None else now
        with self._write_transaction() as conn:
            self._promote(conn, now)
            rows, token, expires, _ = _SQL.lease(
                conn, owner, limit, lease_seconds, now, self.rules.max_attempts
            )
        return sorted(
            (
                ConversationClaim(row.conversation_id, row.generation, owner, token, expires)
                for row in rows
            ),
            key=lambda claim: claim.conversation_id,
        )

    def complete(
        self, conn: Connection, claims: Sequence[ConversationClaim], now: float | None = None
    ) -> None:
        """Mark claimed conversations scored, or pending again where a turn arrived since the
        claim, in ``conn``'s transaction (the one storing their scores). A claim whose lease
        was lost to another worker changes nothing."""
        if claims:
            now = time.time() if now is None else now
            _SQL.finish(
                conn,
                [
                    {
                        "generation": c.generation,
                        "now": now,
                        "conversation_id": c.conversation_id,
                        "token": c.token,
                    }
                    for c in claims
                ],
            )

    def expire_ended_claims(self) -> int:
        """Free the conversations claimed by processes that have ended (see
        :meth:`~tracescore.store.trace_queue.TraceQueue.expire_ended_claims`)."""
        return _SQL.expire_ended(self._write_transaction)

    def renew(
        self, claims: Sequence[ConversationClaim], lease_seconds: float, now: float | None = None
    ) -> int:
        """Extend the leases of claims still being scored to ``lease_seconds`` from now (see
        :meth:`~tracescore.store.trace_queue.TraceQueue.renew`); returns how many are still held."""
        held = [(claim.conversation_id, claim.token) for claim in claims]
        return _SQL.extend(self._write_transaction, held, lease_seconds, now)

    def release(self, claim: ConversationClaim, error: str | None = None) -> None:
        """Give a claimed conversation back; with an ``error`` it counts as a failed attempt,
        and after ``rules.max_attempts`` of them it is parked as ``failed``."""
        with self._write_transaction() as conn:
            _SQL.give_back(
                conn,
                {
                    "error": error if error is None else error[:2000],
                    "max_attempts": self.rules.max_attempts,
                    "conversation_id": claim.conversation_id,
                    "token": claim.token,
                },
            )


def turns_of(conn: Connection, conversation_id: str) -> list[Any]:
    """The conversation's turn rows, oldest first."""
    return list(
        conn.execute(
            text(
                "SELECT conversation_id, trace_id, span_id, start_time_ns, user_text, answer_text, "
                "agent_name, service_name FROM conversation_turns WHERE conversation_id = :id "
                "ORDER BY start_time_ns, trace_id"
            ),
            {"id": conversation_id},
        ).all()
    )


# --- conversations/reads: the API's and the dashboard's reads ----------------------------------


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
    return utc_micros(moment) * 1_000


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """What a listing shows of a conversation."""

    conversation_id: str
    agent_name: str | None
    service_name: str | None
    turn_count: int
    first_turn_ns: int | None
    last_turn_ns: int | None
    state: str


_SUMMARY_COLUMNS = [CONVERSATIONS.c[name] for name in ConversationSummary.__slots__]


def conversation_page(
    conn: Connection, where: ConversationFilter, limit: int, after: tuple[int, str] | None = None
) -> list[ConversationSummary]:
    """Up to ``limit`` conversations, latest turn first, after ``after`` (a conversation's
    ``(last_turn_ns, conversation_id)``): keyset pages that stay stable while turns arrive."""
    c = CONVERSATIONS.c
    conditions = [*where.conditions(), c.last_turn_ns.is_not(None)]
    if after is not None:
        moment, conversation_id = after
        conditions.append(
            or_(
                c.last_turn_ns < moment,
                and_(c.last_turn_ns == moment, c.conversation_id < conversation_id),
            )
        )
    rows = conn.execute(
        select(*_SUMMARY_COLUMNS)
        .where(*conditions)
        .order_by(c.last_turn_ns.desc(), c.conversation_id.desc())
        .limit(limit)
    )
    return [ConversationSummary(*row) for row in rows]


def find_conversation(conn: Connection, conversation_id: str) -> ConversationSummary | None:
    row = conn.execute(
        select(*_SUMMARY_COLUMNS).where(CONVERSATIONS.c.conversation_id == conversation_id)
    ).first()
    return None if row is None else ConversationSummary(*row)


def conversations_of_trace(conn: Connection, trace_id: str) -> list[str]:
    """The conversations a trace is a turn of (one, unless its id changed between scorings)."""
    rows = conn.execute(
        select(TURNS.c.conversation_id)
        .where(TURNS.c.trace_id == trace_id)
        .order_by(TURNS.c.conversation_id)
    )
    return [row.conversation_id for row in rows]


# --- retention/prune ---------------------------------------------------------------------------


def prune_conversations(
    conn: Connection, state: TraceState, seen_before: float, limit: int
) -> tuple[int, bool]:
    """Up to ``limit`` conversations in ``state`` whose last turn was recorded before
    ``seen_before``, each with its turns, found in index order one state at a time; how many
    went and whether more may remain. The time is the collector's, not the exporter's: a turn
    dated in the future cannot keep them. A turn arriving later starts the conversation
    afresh."""
    found = list(
        conn.execute(
            select(CONVERSATIONS.c.conversation_id)
            .where(CONVERSATIONS.c.state == state, CONVERSATIONS.c.last_seen < seen_before)
            .order_by(CONVERSATIONS.c.last_seen)
            .limit(limit)
        ).scalars()
    )
    chosen = still_in(conn, CONVERSATIONS, found, state)
    if not chosen:  # none left, or all busy: the next pass takes them
        return 0, False
    conn.execute(delete(TURNS).where(TURNS.c.conversation_id.in_(chosen)))
    removed = conn.execute(
        delete(CONVERSATIONS).where(CONVERSATIONS.c.conversation_id.in_(chosen))
    ).rowcount
    return removed, len(found) >= limit
