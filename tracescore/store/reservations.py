"""The ``judge_reservations`` table: what each binding's judging has taken of its limits.

A run a binding judges takes a reservation first, in one transaction that holds the binding's
lock (PostgreSQL: an advisory lock; SQLite: the writer lock), so every process sharing the
database sees every admission before deciding its own: the reservation carries the run's
estimated cost and a slot of the per-minute rate, and is settled with the real cost when the
run ends. A process killed mid-run leaves its reservation unsettled, counted at its estimate.

Times are float seconds since the epoch (as leases'), one representation on both databases.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import BigInteger, Column, Index, Integer, Select, delete, func, select, update
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from tracescore.store.handles import Database
from tracescore.store.scores import stored_spend
from tracescore.store.table_of import table_of
from tracescore.store.writelock import exclusive_transaction


class ReservationRow(SQLModel, table=True):
    """One admitted run of a binding: its estimate, its real cost once settled, and until when
    it counts against the binding's per-minute rate."""

    __tablename__ = "judge_reservations"
    __table_args__ = (Index("ix_judge_reservations_binding_taken", "binding", "taken_at"),)

    # SQLite only auto-numbers a column declared exactly INTEGER PRIMARY KEY.
    id: int | None = Field(
        default=None,
        sa_column=Column(
            BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
        ),
    )
    binding: str = Field(max_length=100)
    taken_at: float
    estimate_usd: float | None = None
    """Null: the binding has no settled cost to estimate from yet."""
    cost_usd: float | None = None
    """Null until settled."""
    busy_until: float
    """While unsettled, ``taken_at`` plus the hold and a minute; once settled, a minute after."""
    carried: bool = False
    """The day's spend stored in ``scores`` before the binding's first reservation that day
    (runs scored before its ``usd_per_day`` was set, or before an upgrade): counted towards
    the day, never an estimate nor a rate slot."""


RESERVATIONS = table_of(ReservationRow)

RATE_WINDOW = 60.0
"""Seconds a run counts against ``per_minute`` after it ends."""
HOLD = 600.0
"""Seconds an unsettled reservation counts as running: past it, its process is taken to have
died (no judged run takes this long), and its rate slot is freed; its estimate still counts
towards the day's spend."""
KEEP = 2 * 86_400.0
"""Seconds reservations are kept (the day's spend needs today's), but for the latest that cost
something, which the estimate reads."""
ESTIMATE_FROM = 20
"""Settled runs whose highest cost is the next run's estimate."""

Verdict = Literal["ok", "skipped_rate", "skipped_budget", "unestimated"]
"""``unestimated``: a budget holds, the binding has no settled cost to estimate from, and its
run that will give one is still being judged."""


@dataclass(frozen=True, slots=True)
class Limits:
    per_minute: int | None
    usd_per_day: float | None


def reserve(
    database: Database, binding: str, limits: Limits, now: float, day_start: float
) -> tuple[Verdict, int | None]:
    """Admit one more run of ``binding`` at ``now`` (epoch seconds) or say which limit stops
    it; an admitted run's reservation id is to be :func:`settle`\\ d.

    The day's spend counts settled runs at their cost and running ones at their estimate, so
    concurrent runs cannot all pass a budget none of them has spent yet: a run is admitted
    while that total is under ``usd_per_day``, which it then exceeds by at most its own
    estimate. With no estimate yet (no settled run), one run at a time is admitted."""
    table = RESERVATIONS
    mine = table.c.binding == binding
    with exclusive_transaction(database, f"tracescore.reservations.{binding}") as connection:
        if limits.per_minute is not None:
            busy = connection.execute(
                select(func.count()).where(
                    mine
                    & (table.c.taken_at > now - HOLD - RATE_WINDOW)
                    & (table.c.busy_until > now)
                )
            ).scalar_one()
            if busy >= limits.per_minute:
                return "skipped_rate", None
        estimate = connection.execute(
            select(func.max(table.c.cost_usd)).where(table.c.id.in_(_latest_costs(binding)))
        ).scalar_one_or_none()
        if limits.usd_per_day is not None:
            today = mine & (table.c.taken_at >= day_start)
            rows, committed, unknown = connection.execute(
                select(
                    func.count(),
                    func.coalesce(
                        func.sum(func.coalesce(table.c.cost_usd, table.c.estimate_usd)), 0.0
                    ),
                    func.count().filter(
                        table.c.cost_usd.is_(None)
                        & table.c.estimate_usd.is_(None)
                        & (table.c.busy_until > now + RATE_WINDOW)  # still running
                    ),
                ).where(today)
            ).one()
            if not rows:
                committed = _carry(connection, binding, day_start)
            if committed >= limits.usd_per_day:
                return "skipped_budget", None
            if unknown:
                return "unestimated", None
        reservation = connection.execute(
            RESERVATIONS.insert()
            .values(
                binding=binding,
                taken_at=now,
                estimate_usd=estimate,
                busy_until=now + HOLD + RATE_WINDOW,
            )
            .returning(table.c.id)
        ).scalar_one()
    return "ok", int(reservation)


def _carry(connection: Connection, binding: str, day_start: float) -> float:
    """Record what ``binding``'s stored scores cost today before its first reservation."""
    spent = stored_spend(connection, binding, datetime.fromtimestamp(day_start, UTC))
    connection.execute(
        RESERVATIONS.insert().values(
            binding=binding, taken_at=day_start, cost_usd=spent, busy_until=0.0, carried=True
        )
    )
    return spent


def settle(database: Database, reservation: int, cost_usd: float | None, now: float) -> None:
    """Record what the run of ``reservation`` cost (None: it failed before it could tell; it
    counts at its estimate); it counts against the rate for a minute more."""
    with database.begin() as connection:
        connection.execute(
            update(RESERVATIONS)
            .where(RESERVATIONS.c.id == reservation)
            .values(cost_usd=cost_usd, busy_until=now + RATE_WINDOW)
        )


def _latest_costs(binding: str) -> Select[tuple[int | None]]:
    """The ids of ``binding``'s last :data:`ESTIMATE_FROM` runs that cost something."""
    table = RESERVATIONS
    return (
        select(table.c.id)
        .where((table.c.binding == binding) & (table.c.cost_usd > 0) & ~table.c.carried)
        .order_by(table.c.taken_at.desc())
        .limit(ESTIMATE_FROM)
    )


def forget_old(database: Database, binding: str, now: float) -> None:
    """Delete ``binding``'s reservations past :data:`KEEP`, but those the estimate reads."""
    table = RESERVATIONS
    keep = select(_latest_costs(binding).subquery().c.id)
    with database.begin() as connection:
        connection.execute(
            delete(table).where(
                (table.c.binding == binding)
                & (table.c.taken_at < now - KEEP)
                & table.c.id.not_in(keep)
            )
        )
