"""The ingest journal as the collector and its unpackers use it, whichever kind keeps it.

:mod:`tracescore.store.journal` defines the two kinds (a table, or spool files beside a SQLite
database) behind one protocol; this class picks the kind for a database and adds what both
share: OTLP/JSON bodies marked as such, quarantine reasons made storable, unpacker heartbeats.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from pathlib import Path

from sqlalchemy import Connection, Engine

from tracescore.store import journal
from tracescore.store.journal import Journal, JournalEntry, QuarantinedEntry, SqlJournal
from tracescore.store.spool import SpoolJournal
from tracescore.store.text import TextGuard


class IngestJournal:
    def __init__(
        self, engine: Engine, write_transaction: Callable[[], AbstractContextManager[Connection]]
    ) -> None:
        database = engine.url.database
        self.kept: Journal = (
            SpoolJournal(Path(f"{database}-ingest"), engine, write_transaction)
            if engine.dialect.name == "sqlite" and database and database != ":memory:"
            else SqlJournal(engine, write_transaction)
        )
        """The kind that keeps the entries (the store consumes them in its own writes)."""
        self._write_transaction = write_transaction

    def append(self, signal: str, body: bytes, owner: str, *, json: bool = False) -> JournalEntry:
        """Commit an export request's body (OTLP/protobuf, or OTLP/JSON with ``json``); durable
        on return."""
        return self.kept.append(signal, journal.JSON_MARK + body if json else body, owner)

    def entries(
        self,
        *,
        owner: str | None = None,
        exclude: Collection[int] = (),
        max_bytes: int | None = None,
        limit: int = 16,
        shard: tuple[int, int] = (0, 1),
    ) -> list[JournalEntry]:
        """See :meth:`tracescore.store.journal.Journal.entries`."""
        return self.kept.entries(
            owner=owner, exclude=exclude, max_bytes=max_bytes, limit=limit, shard=shard
        )

    def orphans(
        self,
        *,
        dead_before: float,
        not_owner: str,
        exclude: Collection[int] = (),
        max_bytes: int | None = None,
        shard: tuple[int, int] = (0, 1),
    ) -> list[JournalEntry]:
        """See :meth:`tracescore.store.journal.Journal.orphans`."""
        return self.kept.orphans(
            dead_before=dead_before,
            not_owner=not_owner,
            exclude=exclude,
            max_bytes=max_bytes,
            shard=shard,
        )

    def shard_of(self, seq: int, shards: int) -> int:
        """Which of ``shards`` unpackers of a collector takes the entry ``seq``."""
        return self.kept.shard_of(seq, shards)

    def backlog(self, owner: str) -> int:
        """Bytes of ``owner``'s entries not unpacked yet."""
        return self.kept.backlog(owner)

    def heartbeat(self, owner: str, *, stopping: bool = False) -> None:
        """Mark ``owner``'s unpacker alive now (or gone, when ``stopping``): another collector
        takes over the entries of one that stopped beating."""
        with self._write_transaction() as conn:
            if stopping:
                journal.forget(conn, owner)
            else:
                journal.beat(conn, owner, time.time())

    def quarantine(self, seq: int, reason: str) -> None:
        """Set aside an entry that cannot be stored (see :func:`tracescore.ingest.unpack.unpack`)."""
        self.kept.quarantine(seq, TextGuard().text(reason))

    def quarantined(self) -> list[QuarantinedEntry]:
        """Entries set aside because they could not be stored, oldest first."""
        return self.kept.quarantined()

    def requeue(self, seq: int) -> bool:
        """Put a quarantined entry back in line to be stored again; False if there is none."""
        return self.kept.requeue(seq)

    def tidy(self) -> None:
        """Clean up what a crash left (unpackers run it as they start)."""
        self.kept.tidy()

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until the export requests acknowledged so far are rows (False on timeout)."""
        return self.kept.wait_settled(timeout)
