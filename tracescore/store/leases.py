"""Leases: exactly one instance among those sharing a database runs a task at a time (alert
evaluation, retention, the OTLP feedback scan), and another takes over when it stops renewing.

One row (``alert_leader``) per lease name holds the owner and an expiry. Taking or renewing it
is a single upsert, atomic on SQLite and PostgreSQL alike, so no separate lock service is needed.
"""

from __future__ import annotations

from sqlalchemy import Engine, or_, select, update
from sqlalchemy.engine import Connection

from tracescore.store.alerts import AlertLeaderRow
from tracescore.store.dialect import dialect_insert
from tracescore.store.table_of import table_of

LEADER = table_of(AlertLeaderRow)
LEASE_NAME = "alerts"


def acquire_lease(
    connection: Connection, owner: str, now: float, duration: float, name: str = LEASE_NAME
) -> bool:
    """Take or renew the lease ``name`` (the evaluator's by default); True if ``owner`` holds it
    until ``now + duration``.

    One upsert, atomic on both databases: it inserts the row, or updates it only where the
    lease is already ours or has expired, and RETURNING tells whether it did.
    """
    statement = dialect_insert(connection)(LEADER).values(
        name=name, owner=owner, expires_at=now + duration
    )
    statement = statement.on_conflict_do_update(
        index_elements=["name"],
        set_={"owner": owner, "expires_at": now + duration},
        where=or_(LEADER.c.owner == owner, LEADER.c.expires_at < now),
    ).returning(LEADER.c.owner)
    return connection.execute(statement).first() is not None


def release_lease(connection: Connection, owner: str, name: str = LEASE_NAME) -> None:
    """Let another instance take over at once instead of after the lease runs out."""
    connection.execute(
        update(LEADER)
        .where(LEADER.c.name == name, LEADER.c.owner == owner)
        .values(expires_at=0.0)
    )


def lease_expiry(database: Engine, name: str = LEASE_NAME) -> float | None:
    """When the lease ``name`` runs out (seconds since the epoch); None if no one took it yet.
    Retention's schedule is its lease's expiry (:mod:`tracescore.retention.task`)."""
    with database.connect() as connection:
        expires = connection.execute(select(LEADER.c.expires_at).where(LEADER.c.name == name)).scalar_one_or_none()
    return None if expires is None else float(expires)
