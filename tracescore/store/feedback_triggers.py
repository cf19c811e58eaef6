"""Feedback triggers: a binding's pending or finished judging of a run someone said went wrong.

A row is written in the transaction that records the verdict (:class:`~tracescore.store.feedback.FeedbackStore`),
so once a verdict is acknowledged its judging survives a restart or a kill. Its id is derived
from (trace, span, binding): a second thumbs-down on the same run finds the row there and adds
nothing, which is what makes a run judged once however many verdicts it gets.

Scoring processes take due rows with a short lease (``due_at`` moved past the lease, renewed
while the judge works), then finish them with their outcome, or put them off while the trace
has not arrived or is still being assembled. The outcome and its reason are what the review
page shows beside the person's verdict.

Coverage reads this table too (:func:`~tracescore.store.score_aggregates.coverage`): a score a
trigger made is not a sampled one, so it must not count as such.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Column, ColumnElement, Float, Index, Text, exists, or_, select, update
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from tracescore.store.aging import AgedRows
from tracescore.store.column_types import hex_text
from tracescore.store.dialect import as_utc, dialect_insert
from tracescore.store.table_of import table_of

TriggerState = Literal["pending", "done", "gave_up"]
Outcome = Literal["judged", "already_scored", "not_eligible", "skipped_budget", "skipped_rate"]
"""How a ``done`` trigger ended: the binding judged the run(s); a score of this scorer
version was there already; the run is not one the binding scores (target, filter, ``when:``);
the binding's caps were reached (a ``skipped_*`` score row records it too)."""


def trigger_id(trace_id: str, span_id: str | None, binding: str) -> str:
    """One trigger per run and binding: the key that makes a second verdict add nothing."""
    return hashlib.sha256(f"{trace_id}\x1f{span_id or ''}\x1f{binding}".encode()).hexdigest()[:32]


class FeedbackTriggerRow(SQLModel, table=True):
    __tablename__ = "feedback_triggers"
    __table_args__ = (
        Index("ix_feedback_triggers_state_due", "state", "due_at"),
        Index("ix_feedback_triggers_trace", "trace_id"),
    )

    id: str = Field(primary_key=True, max_length=32)
    trace_id: str = Field(max_length=32)
    span_id: str | None = Field(default=None, max_length=16)
    """The run the verdict was on; None: the trace's runs the binding scores."""
    binding: str = Field(max_length=100)
    feedback_id: str = Field(max_length=32)
    """The verdict that triggered it (the first one: later ones add nothing)."""
    state: str = Field(max_length=10)
    """``pending``, ``done`` or ``gave_up``."""
    outcome: str | None = Field(default=None, max_length=20)
    reason: str | None = Field(default=None, sa_column=Column(Text))
    """Why it waits, why it gave up, or what it did."""
    due_at: float = Field(sa_column=Column(Float, nullable=False))
    """Epoch seconds when a scoring process may take it (next look, or its lease's end)."""
    attempts: int = 0
    created_at: datetime
    updated_at: datetime


TRIGGERS = table_of(FeedbackTriggerRow)


@dataclass(frozen=True, slots=True)
class NewTrigger:
    """A trigger a verdict makes, before it is stored."""

    trace_id: str
    span_id: str | None
    binding: str
    feedback_id: str


@dataclass(frozen=True, slots=True)
class Trigger:
    """A stored trigger as a scoring process takes it."""

    id: str
    trace_id: str
    span_id: str | None
    binding: str
    feedback_id: str
    created_at: datetime
    attempts: int


def add_triggers(connection: Connection, triggers: Sequence[NewTrigger], now: datetime) -> None:
    """Store ``triggers`` due at once; a run and binding triggered before keeps its row."""
    if not triggers:
        return
    rows = {
        trigger_id(t.trace_id, t.span_id, t.binding): {
            "id": trigger_id(t.trace_id, t.span_id, t.binding),
            "trace_id": t.trace_id,
            "span_id": t.span_id,
            "binding": t.binding,
            "feedback_id": t.feedback_id,
            "state": "pending",
            "outcome": None,
            "reason": None,
            "due_at": now.timestamp(),
            "attempts": 0,
            "created_at": now,
            "updated_at": now,
        }
        for t in triggers
    }
    statement = dialect_insert(connection)(TRIGGERS).on_conflict_do_nothing(index_elements=["id"])
    connection.execute(statement, list(rows.values()))


def claim_triggers(connection: Connection, now: float, lease: float, limit: int) -> list[Trigger]:
    """Take up to ``limit`` due pending triggers for ``lease`` seconds (their ``due_at`` moved
    past it): another process takes one only once that lease has run out unrenewed."""
    due = (
        select(TRIGGERS.c.id)
        .where(TRIGGERS.c.state == "pending", TRIGGERS.c.due_at <= now)
        .order_by(TRIGGERS.c.due_at)
        .limit(limit)
    )
    ids = [row.id for row in connection.execute(due)]
    if not ids:
        return []
    # The state and due time are checked again as the rows are updated (under their row locks
    # on PostgreSQL): of two processes that saw the same rows, one takes each.
    taken = connection.execute(
        update(TRIGGERS)
        .where(TRIGGERS.c.id.in_(ids), TRIGGERS.c.state == "pending", TRIGGERS.c.due_at <= now)
        .values(due_at=now + lease, attempts=TRIGGERS.c.attempts + 1)
        .returning(
            TRIGGERS.c.id,
            TRIGGERS.c.trace_id,
            TRIGGERS.c.span_id,
            TRIGGERS.c.binding,
            TRIGGERS.c.feedback_id,
            TRIGGERS.c.created_at,
            TRIGGERS.c.attempts,
        )
    )
    return [Trigger(**{**row._mapping, "created_at": as_utc(row.created_at)}) for row in taken]


def renew_triggers(connection: Connection, ids: Sequence[str], until: float) -> None:
    """Keep triggers in hand until ``until`` (their judge is still working)."""
    connection.execute(
        update(TRIGGERS)
        .where(TRIGGERS.c.id.in_(list(ids)), TRIGGERS.c.state == "pending")
        .values(due_at=until)
    )


def postpone_trigger(connection: Connection, trigger: str, due_at: float, reason: str) -> None:
    """Look at the trigger again at ``due_at``; ``reason`` says what it waits for."""
    connection.execute(
        update(TRIGGERS)
        .where(TRIGGERS.c.id == trigger, TRIGGERS.c.state == "pending")
        .values(due_at=due_at, reason=reason, updated_at=datetime.now(UTC))
    )


def finish_trigger(
    connection: Connection,
    trigger: str,
    state: TriggerState,
    outcome: Outcome | None,
    reason: str,
) -> None:
    """Record how the trigger ended: it is never taken again."""
    connection.execute(
        update(TRIGGERS)
        .where(TRIGGERS.c.id == trigger)
        .values(state=state, outcome=outcome, reason=reason, updated_at=datetime.now(UTC))
    )


def trace_triggers(connection: Connection, trace_id: str) -> list[dict[str, Any]]:
    """The triggers of one trace, by binding (what the review page shows)."""
    query = (
        select(TRIGGERS)
        .where(TRIGGERS.c.trace_id == trace_id)
        .order_by(TRIGGERS.c.binding, TRIGGERS.c.span_id)
    )
    return [dict(row._mapping) for row in connection.execute(query)]


JUDGING_OUTCOMES = ("judged", "skipped_budget", "skipped_rate")
"""Outcomes of a trigger that wrote score rows of its own."""


def triggered_score(
    trace_id: ColumnElement[str], span_id: ColumnElement[str], binding: ColumnElement[str]
) -> ColumnElement[bool]:
    """True for a score row (given its columns, ids as bytes) that a feedback trigger wrote:
    what coverage leaves out of its sampled figures."""
    return exists().where(
        TRIGGERS.c.trace_id == hex_text(trace_id),
        TRIGGERS.c.binding == binding,
        or_(TRIGGERS.c.span_id.is_(None), TRIGGERS.c.span_id == hex_text(span_id)),
        TRIGGERS.c.outcome.in_(JUDGING_OUTCOMES),
    )


TRIGGERS_BY_AGE = AgedRows(TRIGGERS, ("id",), "created_at")
"""Retention prunes triggers with the scores (``retention.scores``): they describe scores,
and coverage reads them to tell a triggered score from a sampled one."""
