"""Durable storage: spans, logs, trace assembly state, and every other stage's tables.

Open a store with :func:`open_store`; it builds the engine, imports every module listed in
:data:`~tracescore.store.metadata.TABLE_MODULES` (so their SQLModel classes register on ``SQLModel.metadata``) and brings
the schema to this release's (:mod:`tracescore.store.migrate`). A stage adding tables (scores,
alerts, ...) defines SQLModel classes in its own module under ``tracescore/store/``, adds that
module's name to :data:`~tracescore.store.metadata.TABLE_MODULES` and adds a revision under ``store/migrations/versions``.
"""

from __future__ import annotations

from typing import TypeAlias

from sqlalchemy import Engine
from sqlalchemy.engine import Connection

from tracescore.store.engine import make_engine, normalize_url
from tracescore.store.metadata import store_metadata
from tracescore.store.migrations import SchemaError
from tracescore.store.spanstore import SpanStore, TraceSummary
from tracescore.store.trace_queue import ReadinessRules, TraceClaim, TraceQueue, TraceState

Database: TypeAlias = Engine
"""A handle on the store's database that callers outside ``store/`` pass to its query
functions, which open the connections and transactions they need."""


def open_store(
    url: str, rules: ReadinessRules | None = None, *, create: bool = True, migrate: bool = True
) -> SpanStore:
    """A :class:`SpanStore` on ``url`` (``sqlite:///file.db`` or ``postgresql://…``).

    With ``create`` (the default) the schema is brought to this release's: upgraded (an empty
    database gets every table), or, with ``migrate=False``, only checked, refusing an outdated
    one. Processes started by a service that already did so pass ``create=False``. A database
    a newer release upgraded is refused either way (:class:`SchemaError`).
    """
    store_metadata()  # every table class registered, as the schema check compares them
    store = SpanStore(make_engine(url), rules)
    if create:
        # Alembic is imported only here: the helper processes (create=False) never load it,
        # which keeps ~10 MB out of each unpacker and scoring process.
        from tracescore.store import migrate as schema

        if migrate:
            schema.upgrade(store.engine)
        else:
            schema.require_current(store.engine)
    return store


__all__ = [
    "Connection",
    "Database",
    "ReadinessRules",
    "SchemaError",
    "SpanStore",
    "TraceClaim",
    "TraceQueue",
    "TraceState",
    "TraceSummary",
    "make_engine",
    "normalize_url",
    "open_store",
]
