"""Leases: exactly one instance among those sharing a database runs a task at a time (alert
evaluation, retention, the OTLP feedback scan), and another takes over when it stops renewing.

One row of ``leases`` per lease name holds the owner and an expiry. Taking or renewing it is a
single upsert, atomic on SQLite and PostgreSQL alike, so no separate lock service is needed.
"""

from __future__ import annotations

from sqlalchemy import or_, select, update
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from tracescore.owners import has_ended
from tracescore.store.dialect import dialect_insert
from tracescore.store.table_of import table_of


class LeaseRow(SQLModel, table=True):
    """Who holds the lease ``name``, until when; taken by an atomic upsert."""

    __tablename__ = "leases"

    name: str = Field(primary_key=True, max_length=50)
    owner: str = Field(max_length=200)
    expires_at: float


LEASES = table_of(LeaseRow)


def acquire_lease(
    connection: Connection, owner: str, now: float, duration: float, name: str
) -> bool:
    """Take or renew the lease ``name``; True if ``owner`` holds it until ``now + duration``.

    One upsert, atomic on both databases: it inserts the row, or updates it only where the
    lease is already ours, has expired, or is held by a process of this machine that has ended
    (:func:`~tracescore.owners.has_ended`: a service killed and restarted takes its tasks back
    at once, not a minute later), and RETURNING tells whether it did.
    """
    holder = connection.execute(
        select(LEASES.c.owner).where(LEASES.c.name == name)
    ).scalar_one_or_none()
    takeable = [LEASES.c.owner == owner, LEASES.c.expires_at < now]
    if holder is not None and holder != owner and has_ended(holder):
        takeable.append(LEASES.c.owner == holder)  # still that ended holder's at the update
    statement = dialect_insert(connection)(LEASES).values(
        name=name, owner=owner, expires_at=now + duration
    )
    statement = statement.on_conflict_do_update(
        index_elements=["name"],
        set_={"owner": owner, "expires_at": now + duration},
        where=or_(*takeable),
    ).returning(LEASES.c.owner)
    return connection.execute(statement).first() is not None


def release_lease(connection: Connection, owner: str, name: str) -> None:
    """Let another instance take over at once instead of after the lease runs out."""
    connection.execute(
        update(LEASES).where(LEASES.c.name == name, LEASES.c.owner == owner).values(expires_at=0.0)
    )


def lease_expiry(connection: Connection, name: str) -> float | None:
    """When the lease ``name`` runs out (whoever holds it); None if it was never taken."""
    return connection.execute(
        select(LEASES.c.expires_at).where(LEASES.c.name == name)
    ).scalar_one_or_none()


def expire_lease(connection: Connection, name: str) -> None:
    """Let anyone take the lease ``name`` now, whoever holds it: a lease that doubles as a
    schedule (retention's, insights') so makes its task due at once."""
    connection.execute(update(LEASES).where(LEASES.c.name == name).values(expires_at=0.0))
