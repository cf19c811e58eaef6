"""Durable storage: spans, logs, trace assembly state, and every other stage's tables.

Open a store with :func:`open_store`; it builds the engine, imports every module listed in
:data:`~tracescore.store.metadata.TABLE_MODULES` (so their SQLModel classes register on ``SQLModel.metadata``) and brings
the schema to this release's (:mod:`tracescore.store.migrate`). A stage adding tables (scores,
alerts, ...) defines SQLModel classes in its own module under ``tracescore/store/``, adds that
module's name to :data:`~tracescore.store.metadata.TABLE_MODULES` and adds a revision under ``store/migrations/versions``.
"""

from __future__ import annotations

from tracescore.store.engine import make_engine, normalize_url
from tracescore.store.handles import Connection, Database, begin, connect
from tracescore.store.leased_queue import TraceState
from tracescore.store.metadata import store_metadata
from tracescore.store.migrations import SchemaError
from tracescore.store.spanstore import SpanStore, TraceSummary
from tracescore.store.trace_cut import ReadLimit
from tracescore.store.trace_queue import ReadinessRules, TraceClaim, TraceQueue


def open_store(
    url: str,
    rules: ReadinessRules | None = None,
    *,
    create: bool = True,
    migrate: bool = True,
    read_limit: ReadLimit | None = None,
) -> SpanStore:
    """A :class:`SpanStore` on ``url`` (``sqlite:///file.db`` or ``postgresql://…``).

    With ``create`` (the default) the schema is brought to this release's: upgraded (an empty
    database gets every table), or, with ``migrate=False``, only checked, refusing an outdated
    one. Processes started by a service that already did so pass ``create=False``. A database
    a newer release upgraded is refused either way (:class:`SchemaError`). ``read_limit``:
    how much of one trace a read loads (``assembly.read_limit()``; default its defaults).
    """
    store_metadata()  # every table class registered, as the schema check compares them
    store = SpanStore(make_engine(url), rules, read_limit)
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
    "ReadLimit",
    "ReadinessRules",
    "SchemaError",
    "SpanStore",
    "TraceClaim",
    "TraceQueue",
    "TraceState",
    "TraceSummary",
    "begin",
    "connect",
    "make_engine",
    "normalize_url",
    "open_store",
]
