"""Alert state, the notification outbox and the evaluator lease.

State lives in the database, not in memory, so a restart neither re-fires an alert that is
already firing nor forgets to resolve it, and several instances sharing a database agree on
it. Times are float seconds since the epoch, like the collector's other own timestamps.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, Integer, Text, and_, false
from sqlmodel import Field, SQLModel

from tracescore.store.aging import AgedRows
from tracescore.store.table_of import table_of


class AlertStateRow(SQLModel, table=True):
    """Current state of one rule for one segment.

    ``version`` grows with every transition; transitions are conditional on it, so an instance
    that lost the lease mid-evaluation cannot apply (and notify) a transition twice.
    """

    __tablename__ = "alert_states"
    __table_args__ = (Index("ix_alert_states_rule", "rule"),)

    key: str = Field(primary_key=True, max_length=32)
    """Hash of rule name and segment."""
    rule: str = Field(max_length=100)
    segment: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    state: str = Field(max_length=10)
    """``ok`` or ``firing``."""
    since: float
    """When the current state began."""
    evaluated_at: float
    value: float | None = None
    summary: str = Field(default="", sa_type=Text)
    details: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    notified: bool = False
    """Whether the current firing was notified (not suppressed by the cooldown)."""
    last_fired_at: float | None = None
    """When a firing was last notified: the cooldown counts from it."""
    version: int = 0


class AlertEventRow(SQLModel, table=True):
    """A firing or resolved notification: the alert history and the delivery outbox.

    Events are written in the transaction that changes the state and delivered afterwards;
    channels that failed stay in ``pending_channels`` and are retried at the next evaluation.
    """

    __tablename__ = "alert_events"
    __table_args__ = (
        Index("ix_alert_events_at", "at"),
        Index("ix_alert_events_pending", "pending"),
    )

    # SQLite only auto-numbers a column declared exactly INTEGER PRIMARY KEY.
    id: int | None = Field(
        default=None,
        sa_column=Column(
            BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
        ),
    )
    key: str = Field(max_length=32)
    rule: str = Field(max_length=100)
    segment: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    status: str = Field(max_length=10)
    """``firing`` or ``resolved``."""
    at: float
    payload: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    """The JSON body a webhook receives."""
    pending: bool = True
    pending_channels: list[str] = Field(sa_column=Column(JSON, nullable=False))
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_type=Text)


class AlertSilenceRow(SQLModel, table=True):
    """A person's silence or acknowledgement of a rule's alert, or of one segment's, until
    ``expires_at``.

    Stored rather than held in memory so every instance sharing the database agrees on it:
    the one that evaluates (and notifies) is not necessarily the one whose page took the form.
    A silence keeps the alert's events in the history but sends them to no channel; an
    acknowledgement only marks the firing as seen, and ends early when the alert resolves.
    """

    __tablename__ = "alert_silences"
    __table_args__ = (Index("ix_alert_silences_expires_at", "expires_at"),)

    id: int | None = Field(
        default=None,
        sa_column=Column(
            BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
        ),
    )
    rule: str = Field(max_length=100)
    segment: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    """None for every segment of the rule."""
    kind: str = Field(max_length=10)
    """``silence`` or ``ack``."""
    author: str = Field(default="", max_length=200)
    note: str = Field(default="", sa_type=Text)
    created_at: float
    expires_at: float


class AlertLeaderRow(SQLModel, table=True):
    """The lease that lets exactly one instance evaluate rules; taken by an atomic upsert."""

    __tablename__ = "alert_leader"

    name: str = Field(primary_key=True, max_length=50)
    owner: str = Field(max_length=200)
    expires_at: float


# --- retention/prune ---------------------------------------------------------------------------

EVENTS_BY_AGE = AgedRows(
    table_of(AlertEventRow), ("id",), "at",
    also=lambda table, _cut: table.c.pending == false(),  # undelivered: still to send
)  # fmt: skip
"""Delivered alert events, by when they happened (seconds since the epoch)."""
STATES_BY_AGE = AgedRows(
    table_of(AlertStateRow), ("key",), "since",
    also=lambda table, cut: and_(table.c.state == "ok", table.c.evaluated_at < cut),
)  # fmt: skip
"""Segments back to ``ok`` (and not evaluated) since before the cut (seconds since the epoch)."""
