"""Dashboard login sessions: the table and its queries.

A session is a random id handed to the browser in a cookie; the table keeps only its SHA-256
(a read of the database yields no usable cookie), the fingerprint of the API key it was opened
with (so removing that key from the configuration ends its sessions), and its expiry. Being in
the database, a session opened on one replica or process works on every other, and a logout
(the row deleted) ends it everywhere at once.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from sqlalchemy import Index, delete, select
from sqlalchemy.engine import Engine
from sqlmodel import Field, SQLModel

from tracescore.store.table_of import table_of


class SessionRow(SQLModel, table=True):
    __tablename__ = "dashboard_sessions"
    __table_args__ = (Index("ix_dashboard_sessions_expires", "expires_at"),)

    id_hash: str = Field(primary_key=True, max_length=64)
    """SHA-256 (hex) of the session id the cookie holds."""
    key_fingerprint: str = Field(max_length=64)
    """Which configured key opened it (an HMAC of the key, never the key)."""
    created_at: datetime
    expires_at: datetime


_SESSIONS = table_of(SessionRow)


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class Sessions:
    """Open, find and end login sessions in the store's database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def open(self, key_fingerprint: str, lifetime: timedelta) -> str:
        """A new session's id (for the cookie), valid for ``lifetime``; expired rows go."""
        session_id = secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        with self.engine.begin() as connection:
            connection.execute(delete(_SESSIONS).where(_SESSIONS.c.expires_at < now))
            connection.execute(
                _SESSIONS.insert().values(
                    id_hash=_hash(session_id),
                    key_fingerprint=key_fingerprint,
                    created_at=now,
                    expires_at=now + lifetime,
                )
            )
        return session_id

    def fingerprint(self, session_id: str) -> str | None:
        """The key fingerprint of a live session with this id; None if there is none (never
        was, expired, or ended by a logout)."""
        with self.engine.connect() as connection:
            row = connection.execute(
                select(_SESSIONS.c.key_fingerprint, _SESSIONS.c.expires_at).where(
                    _SESSIONS.c.id_hash == _hash(session_id)
                )
            ).first()
        if row is None:
            return None
        expires = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=UTC)
        return row.key_fingerprint if expires > datetime.now(UTC) else None

    def end(self, session_id: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(delete(_SESSIONS).where(_SESSIONS.c.id_hash == _hash(session_id)))
