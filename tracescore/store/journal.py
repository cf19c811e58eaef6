"""The ingest journal: acknowledged OTLP/protobuf requests not yet unpacked into rows.

Acknowledging a request only once its spans are rows would put their decoding (tens of
milliseconds per thousand spans, in Python) on every exporter's wait. Instead the collector
commits the checked request body here and acknowledges it, which is as durable; the ingest
stage then unpacks each entry into span and log rows and deletes it *in the same transaction*
(:meth:`SpanStore.write` with ``consume``), so an entry is unpacked exactly once whichever
process gets to it, and a crash at any point loses nothing.

While entries wait, they still count: trace readiness is judged as of the oldest waiting entry
(a trace whose newest spans are still here is not idle), and the store's reads first wait for
the entries that were acknowledged before them (:func:`wait_settled`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, Select, func, insert, select

from tracescore.store.tables import JournalRow, UnpackerRow

log = logging.getLogger(__name__)

_journal = JournalRow.__table__
_unpackers = UnpackerRow.__table__
_waiting = _journal.c.failed.is_(None)


@dataclass(frozen=True, slots=True)
class JournalEntry:
    seq: int
    received_at: float
    signal: str
    """``traces`` or ``logs``."""
    body: bytes


def append(conn: Connection, signal: str, body: bytes, owner: str, received_at: float) -> JournalEntry:
    result = conn.execute(
        insert(_journal).values(
            received_at=received_at, signal=signal, owner=owner, size=len(body), body=body
        )
    )
    return JournalEntry(result.inserted_primary_key[0], received_at, signal, body)


def consume(conn: Connection, seqs: Sequence[int]) -> bool:
    """Delete waiting entries; False if any is gone already (another process unpacked it),
    and then the caller must roll back."""
    deleted = conn.execute(_journal.delete().where(_journal.c.seq.in_(seqs) & _waiting)).rowcount
    return deleted == len(seqs)


def fail(conn: Connection, seq: int, reason: str) -> None:
    conn.execute(_journal.update().where(_journal.c.seq == seq).values(failed=reason))


def oldest(conn: Connection) -> float | None:
    """When the oldest waiting entry was received, if any."""
    return conn.execute(select(func.min(_journal.c.received_at)).where(_waiting)).scalar()


def entries(
    conn: Connection, *, owner: str | None = None, exclude: Collection[int] = (),
    max_bytes: int | None = None, limit: int = 16,
) -> list[JournalEntry]:  # fmt: skip
    """Waiting entries of one collector (``owner``) or of all, oldest first; see :func:`_load`."""
    query = select(_journal.c.seq, _journal.c.size).where(_waiting)
    if owner is not None:
        query = query.where(_journal.c.owner == owner)
    return _load(conn, query, exclude, max_bytes, limit)


def orphans(
    conn: Connection, *, dead_before: float, not_owner: str, exclude: Collection[int] = (),
    max_bytes: int | None = None, limit: int = 16,
) -> list[JournalEntry]:  # fmt: skip
    """Waiting entries, oldest first, received before ``dead_before`` by collectors (other than
    ``not_owner``) whose unpacker has not beaten since then; see :func:`_load`."""
    alive = select(_unpackers.c.owner).where(_unpackers.c.heartbeat >= dead_before)
    query = select(_journal.c.seq, _journal.c.size).where(
        _waiting & _journal.c.owner.not_in(alive) & (_journal.c.owner != not_owner)
        & (_journal.c.received_at < dead_before)
    )
    return _load(conn, query, exclude, max_bytes, limit)


def _load(
    conn: Connection, query: Select[tuple[int, int]], exclude: Collection[int],
    max_bytes: int | None, limit: int,
) -> list[JournalEntry]:  # fmt: skip
    """The entries ``query`` (of seq and size) finds, less ``exclude`` (being unpacked already);
    with ``max_bytes``, only the first ones whose bodies fit (at least one) are loaded."""
    if exclude:
        query = query.where(_journal.c.seq.not_in(list(exclude)))
    chosen, total = [], 0
    for seq, size in conn.execute(query.order_by(_journal.c.seq).limit(limit)):
        if chosen and max_bytes is not None and total + size > max_bytes:
            break
        chosen.append(seq)
        total += size
    if not chosen:
        return []
    bodies = select(_journal.c.seq, _journal.c.received_at, _journal.c.signal, _journal.c.body)
    rows = conn.execute(bodies.where(_journal.c.seq.in_(chosen) & _waiting).order_by(_journal.c.seq))
    return [JournalEntry(*row) for row in rows]


def beat(conn: Connection, owner: str, now: float) -> None:
    """Record that ``owner``'s unpacker is alive."""
    if conn.execute(_unpackers.update().where(_unpackers.c.owner == owner).values(heartbeat=now)).rowcount == 0:
        conn.execute(insert(_unpackers).values(owner=owner, heartbeat=now))


def forget(conn: Connection, owner: str) -> None:
    """An unpacker that stops cleanly leaves no heartbeat behind."""
    conn.execute(_unpackers.delete().where(_unpackers.c.owner == owner))


def backlog(conn: Connection, owner: str) -> int:
    """Bytes of one process's entries still waiting."""
    query = select(func.coalesce(func.sum(_journal.c.size), 0)).where(_waiting & (_journal.c.owner == owner))
    return int(conn.execute(query).scalar_one())


def wait_settled(engine: Engine, timeout: float, poll: float = 0.005) -> bool:
    """Wait until every entry waiting now has been unpacked (later ones do not matter).

    False when ``timeout`` passed first: no collector is running to unpack them (they are
    unpacked when one starts) or it is far behind.
    """
    with engine.connect() as conn:
        last = conn.execute(select(func.max(_journal.c.seq)).where(_waiting)).scalar()
    if last is None:
        return True
    query = select(_journal.c.seq).where(_waiting & (_journal.c.seq <= last)).limit(1)
    deadline = time.monotonic() + timeout
    while True:
        with engine.connect() as conn:
            if conn.execute(query).first() is None:
                return True
        if time.monotonic() > deadline:
            log.warning(
                "acknowledged export requests are still waiting in the ingest journal after %.0f s; "
                "they are stored as rows once a collector (tracescore serve) runs", timeout
            )
            return False
        time.sleep(poll)
