"""Build the SQLAlchemy engine for a store URL: SQLite (WAL) by default, PostgreSQL by URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url


def normalize_url(url: str) -> str:
    """Map plain ``postgresql://`` / ``postgres://`` URLs to the psycopg 3 driver we ship."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers (the read API, claimers) run while ingest writes; synchronous=FULL makes
    # every acknowledged commit survive a power loss, not just a process crash.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(url: str) -> Engine:
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url, connect_args={"check_same_thread": False}, pool_size=8, max_overflow=8
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_backend_name() == "postgresql":
        return create_engine(url, pool_size=8, max_overflow=8, pool_pre_ping=True)
    raise ValueError(f"unsupported database URL scheme {parsed.drivername!r}: use sqlite or postgresql")
