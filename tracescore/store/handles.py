"""The database handles the rest of the tree holds, so that SQLAlchemy stays inside ``store/``.

A caller keeps a :data:`Database` (the engine a store was opened on) and passes it, or a
:data:`Connection` one of the helpers below opened, to the owner modules' query functions; it
never builds a statement, and a schema change touches only the table's owner module.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from sqlalchemy import Connection, Engine

Database = Engine
"""A pool of connections to one store's database."""

WriteTransaction = Callable[[], AbstractContextManager[Connection]]
"""Opens a store's write transaction (:meth:`~tracescore.store.spanstore.SpanStore.write_transaction`)."""


def connect(database: Database) -> AbstractContextManager[Connection]:
    """A connection for several reads in a row (no write is committed on it)."""
    return database.connect()


def begin(database: Database) -> AbstractContextManager[Connection]:
    """A connection in a transaction, committed when the block ends without an exception.

    On SQLite, writes that may race ingest go through
    :meth:`~tracescore.store.spanstore.SpanStore.write_transaction` instead."""
    return database.begin()


__all__ = ["Connection", "Database", "WriteTransaction", "begin", "connect"]
