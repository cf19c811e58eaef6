"""Build the SQLAlchemy engine for a store URL: SQLite (WAL) by default, PostgreSQL by URL."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, MetaData, Table, create_engine, event, text
from sqlalchemy.engine import make_url


def normalize_url(url: str) -> str:
    """Map plain ``postgresql://`` / ``postgres://`` URLs to the psycopg 3 driver we ship."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


_SYNCHRONOUS = ("off", "normal", "full", "extra")


def _sqlite_pragmas(synchronous: str) -> Callable[[Any, Any], None]:
    """Connection setup: WAL lets readers (read API, claimers) run while ingest writes.

    ``synchronous=normal`` (the default) makes a commit durable against a crash of the process
    (kill -9 included) without an fsync per commit; ``full`` also survives power loss and OS
    crashes, at one fsync per export request.

    A 32 MiB page cache per connection (SQLite's default is 2 MiB): every stored score updates
    seven B-trees (the row and six indexes), and once the tables outgrow the cache each insert
    reads its pages back from the OS. Measured with the pipeline's capacity benchmark: 885-933
    -> 1,048-1,071 agent traces/s scored, at the same memory (the cache fills only with pages
    actually used).
    """

    def setup(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        # Takes effect only on a database without tables yet (a no-op afterwards): lets
        # retention hand the pages it frees back to the file system (tracescore.store.vacuum).
        cursor.execute("PRAGMA auto_vacuum=INCREMENTAL")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute(CACHE_PRAGMA)
        cursor.close()

    return setup


CACHE_PRAGMA = "PRAGMA cache_size=-32768"
"""A SQLite connection's page cache (see :func:`_sqlite_setup`)."""
SCAN_CACHE_PRAGMA = "PRAGMA cache_size=-2048"
"""The page cache while a connection scans a huge trace's rows (SQLite's default size): the
scan passes every page of the trace once, and would leave the cache full of them."""


def _json_text(value: object) -> str:
    """JSON columns' serializer: orjson, ~10× the standard library's speed on score steps (a
    JSON column is written for every score), and it writes non-finite floats as ``null`` where
    the standard library writes ``NaN``, which is no JSON and which PostgreSQL refuses."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite URLs may add ``?synchronous=normal|full`` (default normal)."""
    parsed = make_url(normalize_url(url))
    if parsed.get_backend_name() == "sqlite":
        synchronous = parsed.query.get("synchronous", "normal")
        if synchronous not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}")
        parsed = parsed.difference_update_query(["synchronous"])
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            parsed,
            connect_args={"check_same_thread": False},
            pool_size=8,
            max_overflow=8,
            json_serializer=_json_text,
        )
        event.listen(engine, "connect", _sqlite_pragmas(str(synchronous)))
        return engine
    if parsed.get_backend_name() == "postgresql":
        return create_engine(
            parsed, pool_size=8, max_overflow=8, pool_pre_ping=True, json_serializer=_json_text
        )
    raise ValueError(
        f"unsupported database URL scheme {parsed.drivername!r}: use sqlite or postgresql"
    )


def create_tables(
    engine: Engine, metadata: MetaData, tables: Sequence[Table] | None = None
) -> None:
    """``metadata.create_all`` that several processes may run at once on one database.

    Replicas starting together on an empty PostgreSQL would otherwise race on ``CREATE TABLE``
    (a duplicate-key error on ``pg_type``); a transaction-level advisory lock serialises them.
    SQLite serialises DDL by itself.
    """
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('tracescore.schema'))"))
        metadata.create_all(connection, tables=tables)
