"""The ingest journal: acknowledged OTLP/protobuf requests not yet unpacked into rows.

Acknowledging a request only once its spans are rows would put their decoding (tens of
milliseconds per thousand spans, in Python) on every exporter's wait. Instead the collector
commits the checked request body here and acknowledges it, which is as durable; the ingest
stage then unpacks each entry into span and log rows and marks it consumed *in the same
transaction* (:meth:`SpanStore.write` with ``consume``), so an entry is unpacked exactly once
whichever process gets to it, and a crash at any point loses nothing.

While entries wait, they still count: trace readiness is judged as of the oldest waiting entry
(a trace whose newest spans are still here is not idle), and the store's reads first wait for
the entries that were acknowledged before them (:meth:`Journal.wait_settled`).

Two kinds keep it: :class:`SqlJournal`, a table of the database (PostgreSQL, where several
hosts share it), and :class:`~tracescore.store.spool.SpoolJournal`, files beside a SQLite
database (one host, and SQLite's single write lock better left to the rows). Both offer the
methods of :class:`Journal`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import Connection, Engine, Select, func, insert, select

from tracescore.store.table_of import table_of
from tracescore.store.tables import JournalRow, UnpackerRow

log = logging.getLogger(__name__)

_journal = table_of(JournalRow)
_unpackers = table_of(UnpackerRow)
_waiting = _journal.c.failed.is_(None)


JSON_MARK = b"\0"
"""Starts the body of an OTLP/JSON entry (its request follows). Nothing else can start with it:
no protobuf message starts with field number 0, and no empty request is journaled."""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    seq: int
    received_at: float
    signal: str
    """``traces`` or ``logs``."""
    body: bytes
    """The export request as kept: OTLP/protobuf, or ``JSON_MARK`` and OTLP/JSON."""
    owner: str
    """The collector process that took the request."""

    @property
    def json(self) -> bool:
        return self.body[:1] == JSON_MARK

    @property
    def request(self) -> bytes:
        """The export request, in its encoding (``json`` tells which)."""
        return self.body[len(JSON_MARK) :] if self.json else self.body


@dataclass(frozen=True, slots=True)
class QuarantinedEntry:
    """An acknowledged request that could not be stored (see :func:`~tracescore.ingest.unpack.unpack`):
    kept, with the reason, for someone to look at; it no longer holds anything back."""

    seq: int
    received_at: float
    signal: str
    size: int
    reason: str


class Journal(Protocol):
    """What the store asks of either kind of journal."""

    def append(self, signal: str, body: bytes, owner: str) -> JournalEntry:
        """Keep an export request's body durably (on return)."""

    def entries(
        self,
        *,
        owner: str | None = None,
        exclude: Collection[int] = (),
        max_bytes: int | None = None,
        limit: int = 16,
        shard: tuple[int, int] = (0, 1),
    ) -> list[JournalEntry]:
        """Waiting entries of one collector (``owner``) or of all, oldest first, less
        ``exclude`` (being unpacked already), and only those whose number is ``k`` modulo
        ``n`` for ``shard=(k, n)``; with ``max_bytes``, only the first ones whose bodies fit
        (at least one)."""

    def orphans(
        self,
        *,
        dead_before: float,
        not_owner: str,
        exclude: Collection[int] = (),
        max_bytes: int | None = None,
        limit: int = 16,
        shard: tuple[int, int] = (0, 1),
    ) -> list[JournalEntry]:
        """Like :meth:`entries`, for entries received before ``dead_before`` by collectors
        (other than ``not_owner``) whose unpacker has not beaten since then."""

    def shard_of(self, seq: int, shards: int) -> int:
        """Which of ``shards`` unpackers of a collector takes the entry ``seq``."""

    def consume(self, conn: Connection, entries: Sequence[JournalEntry]) -> bool:
        """Mark entries stored, in the caller's write transaction; False if any was stored
        already (by another process), and then the caller must roll back."""

    def release(self, entries: Sequence[JournalEntry]) -> None:
        """After the commit of a :meth:`consume`."""

    def quarantine(self, seq: int, reason: str) -> None:
        """Set aside an entry that cannot be stored, for inspection, out of the way of the others."""

    def quarantined(self) -> list[QuarantinedEntry]:
        """The quarantined entries, oldest first."""

    def requeue(self, seq: int) -> bool:
        """Put a quarantined entry back in line (once its cause is fixed); False if none."""

    def forget_quarantined(self, conn: Connection, before: float, limit: int) -> int:
        """Delete up to ``limit`` quarantined entries received before ``before`` (retention),
        in the caller's write transaction; returns how many."""

    def oldest(self, conn: Connection) -> float | None:
        """When the oldest waiting entry was received, if any."""

    def backlog(self, owner: str) -> int:
        """Bytes of one collector's entries still waiting."""

    def wait_settled(self, timeout: float) -> bool:
        """Wait until every entry waiting now has been unpacked (later ones do not matter).

        False when ``timeout`` passed first: no collector is running to unpack them (they are
        unpacked when one starts) or it is far behind."""

    def tidy(self) -> None:
        """Clean up what a crash left (the unpacker runs it as it starts)."""


class SqlJournal:
    """The journal as the ``ingest_journal`` table; an entry is consumed by deleting its row."""

    def __init__(
        self, engine: Engine, write_transaction: Callable[[], AbstractContextManager[Connection]]
    ) -> None:
        self._engine = engine
        self._write_transaction = write_transaction

    def append(self, signal: str, body: bytes, owner: str) -> JournalEntry:
        received_at = time.time()
        with self._write_transaction() as conn:
            result = conn.execute(
                insert(_journal).values(
                    received_at=received_at, signal=signal, owner=owner, size=len(body), body=body
                )
            )
        key = result.inserted_primary_key
        assert key is not None, "a single-row insert reports the key it assigned"
        return JournalEntry(key[0], received_at, signal, body, owner)

    def entries(
        self,
        *,
        owner: str | None = None,
        exclude: Collection[int] = (),
        max_bytes: int | None = None,
        limit: int = 16,
        shard: tuple[int, int] = (0, 1),
    ) -> list[JournalEntry]:
        query = select(_journal.c.seq, _journal.c.size).where(_waiting)
        if owner is not None:
            query = query.where(_journal.c.owner == owner)
        return self._load(query, exclude, max_bytes, limit, shard)

    def orphans(
        self,
        *,
        dead_before: float,
        not_owner: str,
        exclude: Collection[int] = (),
        max_bytes: int | None = None,
        limit: int = 16,
        shard: tuple[int, int] = (0, 1),
    ) -> list[JournalEntry]:
        alive = select(_unpackers.c.owner).where(_unpackers.c.heartbeat >= dead_before)
        query = select(_journal.c.seq, _journal.c.size).where(
            _waiting
            & _journal.c.owner.not_in(alive)
            & (_journal.c.owner != not_owner)
            & (_journal.c.received_at < dead_before)
        )
        return self._load(query, exclude, max_bytes, limit, shard)

    def _load(
        self,
        query: Select[int, int],
        exclude: Collection[int],
        max_bytes: int | None,
        limit: int,
        shard: tuple[int, int],
    ) -> list[JournalEntry]:
        if exclude:
            query = query.where(_journal.c.seq.not_in(list(exclude)))
        if shard[1] > 1:
            query = query.where(_journal.c.seq % shard[1] == shard[0])  # as shard_of
        with self._engine.connect() as conn:
            chosen: list[int] = []
            total = 0
            for seq, size in conn.execute(query.order_by(_journal.c.seq).limit(limit)):
                if chosen and max_bytes is not None and total + size > max_bytes:
                    break
                chosen.append(seq)
                total += size
            if not chosen:
                return []
            bodies = select(
                _journal.c.seq,
                _journal.c.received_at,
                _journal.c.signal,
                _journal.c.body,
                _journal.c.owner,
            )
            rows = conn.execute(
                bodies.where(_journal.c.seq.in_(chosen) & _waiting).order_by(_journal.c.seq)
            )
            return [JournalEntry(*row) for row in rows]

    def shard_of(self, seq: int, shards: int) -> int:
        return seq % shards  # numbers are consecutive

    def consume(self, conn: Connection, entries: Sequence[JournalEntry]) -> bool:
        seqs = [entry.seq for entry in entries]
        deleted = conn.execute(
            _journal.delete().where(_journal.c.seq.in_(seqs) & _waiting)
        ).rowcount
        return deleted == len(seqs)

    def release(self, entries: Sequence[JournalEntry]) -> None:
        """Nothing to do: :meth:`consume` deleted the rows."""

    def quarantine(self, seq: int, reason: str) -> None:
        with self._write_transaction() as conn:
            conn.execute(_journal.update().where(_journal.c.seq == seq).values(failed=reason))

    def quarantined(self) -> list[QuarantinedEntry]:
        columns = (
            _journal.c.seq,
            _journal.c.received_at,
            _journal.c.signal,
            _journal.c.size,
            _journal.c.failed,
        )
        query = select(*columns).where(_journal.c.failed.is_not(None)).order_by(_journal.c.seq)
        with self._engine.connect() as conn:
            return [QuarantinedEntry(*row) for row in conn.execute(query)]

    def requeue(self, seq: int) -> bool:
        with self._write_transaction() as conn:
            query = _journal.update().where(
                (_journal.c.seq == seq) & _journal.c.failed.is_not(None)
            )
            return conn.execute(query.values(failed=None)).rowcount == 1

    def forget_quarantined(self, conn: Connection, before: float, limit: int) -> int:
        expired = (
            select(_journal.c.seq)
            .where(_journal.c.failed.is_not(None) & (_journal.c.received_at < before))
            .order_by(_journal.c.seq)
            .limit(limit)
        )
        return conn.execute(_journal.delete().where(_journal.c.seq.in_(expired))).rowcount

    def oldest(self, conn: Connection) -> float | None:
        return conn.execute(select(func.min(_journal.c.received_at)).where(_waiting)).scalar()

    def backlog(self, owner: str) -> int:
        query = select(func.coalesce(func.sum(_journal.c.size), 0)).where(
            _waiting & (_journal.c.owner == owner)
        )
        with self._engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def wait_settled(self, timeout: float) -> bool:
        with self._engine.connect() as conn:
            last = conn.execute(select(func.max(_journal.c.seq)).where(_waiting)).scalar()
        if last is None:
            return True
        query = select(_journal.c.seq).where(_waiting & (_journal.c.seq <= last)).limit(1)

        def waiting() -> bool:
            with self._engine.connect() as conn:
                return conn.execute(query).first() is not None

        return settle_by_polling(waiting, timeout)

    def tidy(self) -> None:
        """Nothing to do: a crash leaves no half-done entry in a table."""


def settle_by_polling(waiting: Callable[[], bool], timeout: float, poll: float = 0.005) -> bool:
    """Poll ``waiting`` until it is False (True) or ``timeout`` passes (False, with a warning)."""
    deadline = time.monotonic() + timeout
    while waiting():
        if time.monotonic() > deadline:
            log.warning(
                "acknowledged export requests are still waiting in the ingest journal after %.0f s; "
                "they are stored as rows once a collector (tracescore serve) runs",
                timeout,
            )
            return False
        time.sleep(poll)
    return True


def beat(conn: Connection, owner: str, now: float) -> None:
    """Record that ``owner``'s unpacker is alive."""
    if (
        conn.execute(
            _unpackers.update().where(_unpackers.c.owner == owner).values(heartbeat=now)
        ).rowcount
        == 0
    ):
        conn.execute(insert(_unpackers).values(owner=owner, heartbeat=now))


def forget(conn: Connection, owner: str) -> None:
    """An unpacker that stops cleanly leaves no heartbeat behind."""
    conn.execute(_unpackers.delete().where(_unpackers.c.owner == owner))
