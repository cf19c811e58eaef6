"""What differs between SQLite and PostgreSQL beyond the SQL text, in one place."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert


def dialect_insert(connection: Connection) -> Any:
    """The INSERT construct of the connection's dialect, which has ``on_conflict_*``."""
    return pg_insert if connection.dialect.name == "postgresql" else sqlite_insert


def as_utc(moment: datetime) -> datetime:
    """SQLite hands datetimes back naive; every stored time is UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
