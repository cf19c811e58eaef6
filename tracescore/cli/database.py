"""Opening the database a command names (``--db URL``, else the config's ``store``), with the
exit codes every command uses: 1 the database is missing, cannot be opened or has a schema
this release cannot use, 2 a usage error (bad URL, bad config file).

A new command reuses :data:`DB_OPTION`, :data:`CONFIG_OPTION` and :func:`open_engine` or
:func:`open_existing_store`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tracescore.cli.common import fail

if TYPE_CHECKING:
    from tracescore.store import Database, ReadLimit


DB_OPTION = typer.Option(
    None,
    "--db",
    help="Database URL: sqlite:///file.db or postgresql://user@host/db.",
    show_default="the config's store, sqlite:///tracescore.db",
)
CONFIG_OPTION = typer.Option(
    None,
    "--config",
    help="YAML config file (for its store).",
    show_default="none: the embedded defaults",
)


def open_engine(db: str | None, config_file: Path | None, *, existing: bool = False) -> Database:
    """The engine of ``--db``, else of the config's ``store``; a bad URL or config exits 2.

    ``existing``: the command only reads (or prunes) the database, so a SQLite file that is not
    there exits 1 (see :func:`require_database`) instead of being created empty."""
    from tracescore.config import ConfigError, load_config
    from tracescore.store import make_engine
    from tracescore.store.opening import InvalidDatabaseUrl

    try:
        url = db or load_config(config_file).store.url
        if existing:
            require_database(url)
        return make_engine(url)
    except OSError as exc:
        fail(2, f"cannot read config file {config_file}: {exc.strerror}")
    except ConfigError as exc:
        fail(2, str(exc))
    except (InvalidDatabaseUrl, ValueError) as exc:
        fail(2, f"invalid database URL: {exc}")


def require_database(url: str) -> None:
    """Exit 1, naming the file, when ``url`` is a SQLite file that does not exist.

    For the commands that only read a database: opening a missing SQLite file creates it (and
    the engine its directory), after which the command would report an empty database, for a
    misspelt path too. PostgreSQL reports a missing database itself, on connecting.
    An invalid URL raises :data:`~tracescore.store.opening.InvalidDatabaseUrl`."""
    from tracescore.store.opening import sqlite_file

    path = sqlite_file(url)
    if path is not None and not path.exists():
        fail(
            1,
            f"no database at {path} ({url}): the file does not exist; `tracescore serve` "
            "or `tracescore db upgrade` creates it",
        )


@contextmanager
def database_errors() -> Iterator[None]:
    """Exit 1 with the reason when the database cannot be reached or its schema not used."""
    from tracescore.store import SchemaError
    from tracescore.store.opening import CannotOpenDatabase

    try:
        yield
    except CannotOpenDatabase as exc:
        fail(1, f"cannot open the database: {exc.orig}")
    except SchemaError as exc:
        fail(1, str(exc))


def open_existing_store(url: str, read_limit: ReadLimit | None = None) -> Any:
    """The existing store at ``url``, with every acknowledged request in it stored as rows (a
    collector that stopped may have left some in the ingest journal); a URL that cannot be used
    raises ``ValueError`` (a usage error), a database that does not exist, cannot be opened or
    has a schema this release cannot use exits 1. ``read_limit``: the configuration's
    ``assembly.read_limit()`` where a command reads traces."""
    from tracescore.config import ServerConfig
    from tracescore.ingest.unpack import drain
    from tracescore.store import open_store
    from tracescore.store.opening import InvalidDatabaseUrl

    try:
        require_database(url)
        with database_errors():
            store = open_store(url, read_limit=read_limit)
            drain(store, ServerConfig().max_attribute_chars)
        return store
    except InvalidDatabaseUrl as exc:
        raise ValueError(f"invalid database URL: {exc}") from None
