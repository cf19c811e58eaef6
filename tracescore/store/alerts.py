"""Alert state, the notification outbox and the silences: the tables and every query on them.

State lives in the database, not in memory, so a restart neither re-fires an alert that is
already firing nor forgets to resolve it, and several instances sharing a database agree on
it. Times are float seconds since the epoch, like the collector's other own timestamps.
The queries are grouped by the part that calls them: the evaluator
(:mod:`tracescore.monitor.alerts`), the silences (:mod:`tracescore.monitor.silences`), the
REST API (:mod:`tracescore.monitor.api`) and the dashboard (:mod:`tracescore.web.alerting`).

It runs past 400 lines as the owner of the three alert tables (one owner per table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Engine,
    Index,
    Integer,
    Text,
    and_,
    delete,
    false,
    func,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from tracescore.store.aging import AgedRows
from tracescore.store.dialect import dialect_insert
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


ALERT_STATES = table_of(AlertStateRow)
ALERT_EVENTS = table_of(AlertEventRow)
ALERT_SILENCES = table_of(AlertSilenceRow)


class StateObservation(TypedDict):
    """What each evaluation records of a segment, whether or not its state changes."""

    evaluated_at: float
    value: float | None
    summary: str
    details: dict[str, Any] | None


class StateChange(StateObservation, total=False):
    """A state transition: the observation and the columns the transition sets."""

    state: str
    since: float
    notified: bool
    last_fired_at: float | None


class AlertState(StateObservation):
    """An ``alert_states`` row: one rule's current state for one segment."""

    key: str
    rule: str
    segment: dict[str, Any]
    state: str
    since: float
    notified: bool
    last_fired_at: float | None
    version: int


class NewAlertEvent(TypedDict):
    """An ``alert_events`` row as the evaluator writes it to the outbox."""

    key: str
    rule: str
    segment: dict[str, Any]
    status: str
    at: float
    payload: dict[str, Any]
    pending: bool
    pending_channels: list[str]
    attempts: int


class AlertEvent(NewAlertEvent):
    """A stored ``alert_events`` row: a notification and how its delivery went."""

    id: int
    last_error: str | None


SilenceKind = Literal["silence", "ack"]


class NewSilence(TypedDict):
    """An ``alert_silences`` row before it has an id."""

    rule: str
    segment: dict[str, Any] | None
    kind: SilenceKind
    author: str
    note: str
    created_at: float
    expires_at: float


class StoredSilence(NewSilence):
    id: int


# --- the evaluator (tracescore.monitor.alerts) -----------------------------------------------


def rule_states(connection: Connection, rule: str) -> dict[str, AlertState]:
    """The stored states of one rule's segments, by key."""
    query = select(ALERT_STATES).where(ALERT_STATES.c.rule == rule)
    return {row.key: cast(AlertState, row._asdict()) for row in connection.execute(query)}


def insert_state(connection: Connection, state: AlertState) -> bool:
    """Store a segment's first state; False if another evaluator stored one first."""
    # RETURNING, not rowcount: through SQLAlchemy this statement's rowcount is -1 on PostgreSQL.
    inserted = connection.execute(
        dialect_insert(connection)(ALERT_STATES)
        .values(dict(state))
        .on_conflict_do_nothing(index_elements=["key"])
        .returning(ALERT_STATES.c.key)
    ).first()
    return inserted is not None


def observe_state(connection: Connection, key: str, observed: StateObservation) -> None:
    """Record an evaluation that changed nothing but the observed value."""
    connection.execute(update(ALERT_STATES).where(ALERT_STATES.c.key == key).values(**observed))


def transition_state(connection: Connection, state: AlertState, change: StateChange) -> bool:
    """Apply a change unless another evaluator already changed this state (its ``version``)."""
    result = connection.execute(
        update(ALERT_STATES)
        .where(ALERT_STATES.c.key == state["key"], ALERT_STATES.c.version == state["version"])
        .values(version=state["version"] + 1, **change)
    )
    return result.rowcount == 1


def add_events(connection: Connection, events: Sequence[NewAlertEvent]) -> None:
    if events:
        connection.execute(ALERT_EVENTS.insert(), list(events))


def pending_events(database: Engine) -> list[AlertEvent]:
    """Notifications some channel has yet to take, oldest first."""
    query = select(ALERT_EVENTS).where(ALERT_EVENTS.c.pending.is_(True)).order_by(ALERT_EVENTS.c.id)
    with database.connect() as connection:
        return [cast(AlertEvent, row._asdict()) for row in connection.execute(query)]


def record_delivery(
    database: Engine,
    event_id: int,
    *,
    remaining: list[str],
    pending: bool,
    attempts: int,
    error: str | None,
) -> None:
    """Store how a delivery attempt went: the channels still to take it, whether to try again."""
    with database.begin() as connection:
        connection.execute(
            update(ALERT_EVENTS)
            .where(ALERT_EVENTS.c.id == event_id)
            .values(
                pending_channels=remaining, pending=pending, attempts=attempts, last_error=error
            )
        )


def firing_per_rule(database: Engine) -> dict[str, int]:
    """How many segments of each rule are firing (rules without any left out)."""
    query = (
        select(ALERT_STATES.c.rule, func.count())
        .where(ALERT_STATES.c.state == "firing")
        .group_by(ALERT_STATES.c.rule)
    )
    with database.connect() as connection:
        return {rule: int(count) for rule, count in connection.execute(query)}


def firing_segments(database: Engine, rules: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The firing segments of each of ``rules`` (a rule with none left out): what alert-driven
    sampling (:mod:`tracescore.pipeline.boost`) reads every few seconds."""
    query = select(ALERT_STATES.c.rule, ALERT_STATES.c.segment).where(
        ALERT_STATES.c.state == "firing", ALERT_STATES.c.rule.in_(list(rules))
    )
    found: dict[str, list[dict[str, Any]]] = {}
    with database.connect() as connection:
        for rule, segment in connection.execute(query):
            found.setdefault(rule, []).append(dict(segment or {}))
    return found


# --- silences (tracescore.monitor.silences) --------------------------------------------------


def add_silence(database: Engine, silence: NewSilence) -> int:
    """Store a silence or acknowledgement; its id."""
    with database.begin() as connection:
        return int(
            connection.execute(
                ALERT_SILENCES.insert().values(dict(silence)).returning(ALERT_SILENCES.c.id)
            ).scalar_one()
        )


def active_silences(
    connection: Connection, now: float, rule: str | None = None
) -> list[StoredSilence]:
    """Silences and acknowledgements not expired at ``now``, oldest first."""
    query = (
        select(ALERT_SILENCES)
        .where(ALERT_SILENCES.c.expires_at > now)
        .order_by(ALERT_SILENCES.c.id)
    )
    if rule is not None:
        query = query.where(ALERT_SILENCES.c.rule == rule)
    return [cast(StoredSilence, row._asdict()) for row in connection.execute(query)]


def remove_silence(database: Engine, silence_id: int) -> bool:
    """Forget a silence; False if there is none with this id."""
    with database.begin() as connection:
        result = connection.execute(delete(ALERT_SILENCES).where(ALERT_SILENCES.c.id == silence_id))
    return result.rowcount == 1


# --- the REST API (tracescore.monitor.api) ---------------------------------------------------


def states_and_events(
    database: Engine, *, state: str | None, rule: str | None, events: int
) -> tuple[list[AlertState], list[AlertEvent]]:
    """States by rule and key (narrowed to a state and a rule), and the newest ``events``
    notifications (of that rule), newest first."""
    state_query = select(ALERT_STATES).order_by(ALERT_STATES.c.rule, ALERT_STATES.c.key)
    event_query = select(ALERT_EVENTS).order_by(ALERT_EVENTS.c.id.desc()).limit(events)
    if state is not None:
        state_query = state_query.where(ALERT_STATES.c.state == state)
    if rule is not None:
        state_query = state_query.where(ALERT_STATES.c.rule == rule)
        event_query = event_query.where(ALERT_EVENTS.c.rule == rule)
    with database.connect() as connection:
        states = [cast(AlertState, row._asdict()) for row in connection.execute(state_query)]
        found = (
            [cast(AlertEvent, row._asdict()) for row in connection.execute(event_query)]
            if events
            else []
        )
    return states, found


# --- the dashboard (tracescore.web) ----------------------------------------------------------


def firing_alerts(connection: Connection) -> list[AlertState]:
    """The states firing now, the latest to start first."""
    statement = (
        select(ALERT_STATES)
        .where(ALERT_STATES.c.state == "firing")
        .order_by(ALERT_STATES.c.since.desc(), ALERT_STATES.c.rule)
    )
    return [cast(AlertState, row._asdict()) for row in connection.execute(statement)]


def alert_states(connection: Connection, limit: int = 1000) -> list[AlertState]:
    """Every rule's state per segment (firing first), for the alerts page."""
    statement = (
        select(ALERT_STATES)
        .order_by(
            ALERT_STATES.c.rule, (ALERT_STATES.c.state != "firing"), ALERT_STATES.c.since.desc()
        )
        .limit(limit)
    )
    return [cast(AlertState, row._asdict()) for row in connection.execute(statement)]


def alert_events(
    connection: Connection,
    *,
    since: float | None = None,
    status: str | None = None,
    rule: str | None = None,
    limit: int = 200,
) -> list[AlertEvent]:
    """Firing and resolved notifications, newest first: the alert history and chart bands."""
    e = ALERT_EVENTS.c
    conditions = []
    if since is not None:
        conditions.append(e.at >= since)
    if status is not None:
        conditions.append(e.status == status)
    if rule is not None:
        conditions.append(e.rule == rule)
    statement = (
        select(ALERT_EVENTS).where(*conditions).order_by(e.at.desc(), e.id.desc()).limit(limit)
    )
    return [cast(AlertEvent, row._asdict()) for row in connection.execute(statement)]


def last_alert_events(connection: Connection) -> dict[str, AlertEvent]:
    """The newest notification of each rule and segment (state key): its last delivery outcome."""
    e = ALERT_EVENTS.c
    newest = select(func.max(e.id)).group_by(e.key).scalar_subquery()
    statement = select(ALERT_EVENTS).where(e.id.in_(newest))
    return {row.key: cast(AlertEvent, row._asdict()) for row in connection.execute(statement)}


# --- retention/prune ---------------------------------------------------------------------------

EVENTS_BY_AGE = AgedRows(
    ALERT_EVENTS,
    ("id",),
    "at",
    also=lambda table, _cut: table.c.pending == false(),  # undelivered: still to send
)
"""Delivered alert events, by when they happened (seconds since the epoch)."""
STATES_BY_AGE = AgedRows(
    ALERT_STATES,
    ("key",),
    "since",
    also=lambda table, cut: and_(table.c.state == "ok", table.c.evaluated_at < cut),
)
"""Segments back to ``ok`` (and not evaluated) since before the cut (seconds since the epoch)."""
