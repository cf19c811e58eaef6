"""The ``call_links`` table: what links model calls across traces, beyond one process's memory.

A hand-written loop traced one trace per model call is read in its answering call's trace
together with its steps' traces (:mod:`tracescore.extract.linked`). Each scoring process
remembers the steps it read in a bounded memory; this table is what the others, a restarted
process, or the same process once its memory forgot, find them by. Rows are written only for
what needs them: the keys of a step traced on its own (its pending tool calls, its response
id), and which traces an answering trace was read together with, so that a re-score or the
trace page reads them again. An ordinary trace, whose calls are answered within it, writes
none.

A row is an opaque 16-byte key (a digest :mod:`~tracescore.extract.linked` makes; it names its
kind) and a trace id, both bytes: about 50 bytes with its index entry. Lookups go through the
primary key, one query for every key a claimed batch missed in memory. Rows expire with the
spans (retention's ``spans`` duration), by the time they were written.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Iterable, Mapping

from sqlalchemy import Index, LargeBinary, select
from sqlmodel import Field, SQLModel

from tracescore.spans import Trace
from tracescore.store.aging import AgedRows
from tracescore.store.column_types import HexId
from tracescore.store.dialect import dialect_insert
from tracescore.store.handles import Database, WriteTransaction
from tracescore.store.spanstore import SpanStore
from tracescore.store.table_of import table_of


class CallLinkRow(SQLModel, table=True):
    """One link: a key (a pending tool call, a step's response id, a joined trace) and a trace
    it leads to."""

    __tablename__ = "call_links"
    __table_args__ = (Index("ix_call_links_created_at", "created_at"),)

    key: bytes = Field(primary_key=True, sa_type=LargeBinary)
    trace_id: str = Field(primary_key=True, sa_type=HexId)
    created_at: float
    """Epoch seconds the row was written: retention removes it with the spans."""


CALL_LINKS = table_of(CallLinkRow)


class StoredLinks:
    """The links of a store's database: what :class:`~tracescore.extract.linked.CallLinks`
    asks on a miss (:class:`~tracescore.extract.linked.LinkStore`)."""

    def __init__(
        self,
        database: Database,
        write_transaction: WriteTransaction,
        load: Callable[[list[str]], Mapping[str, Trace]] | None = None,
    ) -> None:
        self._database = database
        self._write_transaction = write_transaction
        self._load = load

    @classmethod
    def of(cls, store: SpanStore) -> StoredLinks:
        """The links of ``store``, loading the traces they name from it."""
        return cls(
            store.engine,
            store.write_transaction,
            functools.partial(store.load_traces, settle=False),
        )

    def load(self, trace_ids: list[str]) -> Mapping[str, Trace]:
        """The stored traces of ``trace_ids`` that still have spans (none without a store)."""
        return self._load(trace_ids) if self._load is not None and trace_ids else {}

    def find(self, keys: Collection[str]) -> dict[str, list[str]]:
        """The trace ids stored under each of ``keys`` (hex digests) that has any."""
        found: dict[str, list[str]] = {}
        wanted = sorted(set(keys))
        c = CALL_LINKS.c
        with self._database.connect() as connection:
            for start in range(0, len(wanted), _CHUNK):
                chunk = [bytes.fromhex(key) for key in wanted[start : start + _CHUNK]]
                rows = connection.execute(select(c.key, c.trace_id).where(c.key.in_(chunk)))
                for key, trace_id in rows:
                    found.setdefault(bytes(key).hex(), []).append(trace_id)
        return found

    def add(self, links: Iterable[tuple[str, str]]) -> None:
        """Store (key, trace id) pairs; a pair stored already is left as it is (a trace read
        again, by another process or after a restart, writes the same pairs)."""
        now = time.time()
        rows = [
            {"key": bytes.fromhex(key), "trace_id": trace_id, "created_at": now}
            for key, trace_id in sorted(set(links))
        ]
        if not rows:
            return
        with self._write_transaction() as connection:
            statement = dialect_insert(connection)(CALL_LINKS).on_conflict_do_nothing()
            connection.execute(statement, rows)


_CHUNK = 500
"""Keys per query: within SQLite's bound-parameter limit, and one query for any usual batch."""


# --- retention/prune ---------------------------------------------------------------------------

LINKS_BY_AGE = AgedRows(CALL_LINKS, ("key", "trace_id"), "created_at")
