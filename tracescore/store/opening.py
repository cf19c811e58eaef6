"""What can go wrong opening a database, in the store's terms, for the commands that report it.

The command line and the supervisor turn these into exit codes and one-line messages; they
name the exceptions through this module so that SQLAlchemy stays inside ``store/``.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError

from tracescore.store.engine import normalize_url
from tracescore.store.handles import Database

InvalidDatabaseUrl = ArgumentError
"""A URL no database driver understands (a usage error: exit 2)."""
CannotOpenDatabase = OperationalError
"""The database did not answer or refused the connection (exit 1); ``.orig`` is the driver's."""


def sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names, absolute; None for another database or an in-memory one.
    Raises :data:`InvalidDatabaseUrl` for a URL that is none."""
    parsed = make_url(normalize_url(url))
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser().absolute()


def database_name(database: Database) -> str:
    """The database as people recognise it: its URL, without a password."""
    return database.url.render_as_string(hide_password=True)
