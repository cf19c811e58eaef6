"""``tracescore db``: the database's schema (and its upkeep) from the command line.

Every command takes the database as ``--db URL`` or from a config's ``store``; a new command
reuses :data:`DB_OPTION`, :data:`CONFIG_OPTION` and :func:`open_engine`. Modules are imported
inside the commands, so ``tracescore --help`` stays fast.

Exit codes: 0 done, 1 the database is behind (``check``), cannot be opened or has a schema
this release cannot use, 2 a usage error (bad URL, bad config file).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from sqlalchemy import Engine

db_app = typer.Typer(
    help="The database: upgrade its schema, show and check its revision.", no_args_is_help=True
)

DB_OPTION = typer.Option(
    None, "--db", help="Database URL: sqlite:///file.db or postgresql://user@host/db.",
    show_default="the config's store, sqlite:///tracescore.db",
)
CONFIG_OPTION = typer.Option(
    None, "--config", help="YAML config file (for its store).",
    show_default="none: the embedded defaults",
)


def _exit(code: int, message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(code)


def open_engine(db: str | None, config_file: Path | None, *, existing: bool = False) -> Engine:
    """The engine of ``--db``, else of the config's ``store``; a bad URL or config exits 2.

    ``existing``: the command only reads (or prunes) the database, so a SQLite file that is not
    there exits 1 (see :func:`require_database`) instead of being created empty."""
    from sqlalchemy.exc import ArgumentError

    from tracescore.config import ConfigError, load_config
    from tracescore.store import make_engine

    try:
        url = db or load_config(config_file).store.url
        if existing:
            require_database(url)
        return make_engine(url)
    except OSError as exc:
        _exit(2, f"cannot read config file {config_file}: {exc.strerror}")
    except ConfigError as exc:
        _exit(2, str(exc))
    except (ArgumentError, ValueError) as exc:
        _exit(2, f"invalid database URL: {exc}")


def require_database(url: str) -> None:
    """Exit 1, naming the file, when ``url`` is a SQLite file that does not exist.

    For the commands that only read a database: opening a missing SQLite file creates it (and
    the engine its directory), after which the command would report an empty database, for a
    misspelt path too. PostgreSQL reports a missing database itself, on connecting.
    An invalid URL raises ``ArgumentError``."""
    from sqlalchemy.engine import make_url

    from tracescore.store import normalize_url

    parsed = make_url(normalize_url(url))
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return
    path = Path(parsed.database).expanduser().absolute()
    if not path.exists():
        _exit(1, f"no database at {path} ({url}): the file does not exist; `tracescore serve` "
                 "or `tracescore db upgrade` creates it")


def database_name(engine: Engine) -> str:
    """The database as people recognise it: its URL, without a password."""
    return engine.url.render_as_string(hide_password=True)


@contextmanager
def database_errors() -> Iterator[None]:
    """Exit 1 with the reason when the database cannot be reached or its schema not used."""
    from sqlalchemy.exc import OperationalError

    from tracescore.store import SchemaError

    try:
        yield
    except OperationalError as exc:
        _exit(1, f"cannot open the database: {exc.orig}")
    except SchemaError as exc:
        _exit(1, str(exc))


@db_app.command("upgrade")
def upgrade(db: str | None = DB_OPTION, config_file: Path | None = CONFIG_OPTION) -> None:
    """Bring the schema to this release's head (what serve does at start by default).

    Safe while replicas start: the upgrade holds the schema lock, they wait and find it done.
    """
    from tracescore.store import migrate

    engine = open_engine(db, config_file)
    with database_errors():
        applied = migrate.upgrade(engine)
        head = migrate.schema_state(engine).head
    if applied:
        typer.echo(f"upgraded to {head}: applied {', '.join(applied)}")
    else:
        typer.echo(f"already at head {head}")


@db_app.command("current")
def current(db: str | None = DB_OPTION, config_file: Path | None = CONFIG_OPTION) -> None:
    """Show the database and its schema's revision, and how far it is behind this release's."""
    from tracescore.store import migrate

    engine = open_engine(db, config_file, existing=True)
    with database_errors():
        typer.echo(f"{database_name(engine)}: {migrate.schema_state(engine).describe()}")


@db_app.command("check")
def check(db: str | None = DB_OPTION, config_file: Path | None = CONFIG_OPTION) -> None:
    """Exit 0 at this release's head; 1 behind (naming the pending revisions) or newer."""
    from tracescore.store import migrate

    engine = open_engine(db, config_file, existing=True)
    with database_errors():
        state = migrate.schema_state(engine)
    if state.pending:
        _exit(1, f"behind: the database schema is {state.describe()}; run `tracescore db upgrade`")
    typer.echo(f"up to date: {state.describe()}")


@db_app.command("prune")
def prune(db: str | None = DB_OPTION, config_file: Path | None = CONFIG_OPTION) -> None:
    """Run one retention pass now, as the config's retention section says, and print the rows
    removed per kind (a running service's own passes are unaffected)."""
    from tracescore.config import ConfigError, load_config
    from tracescore.retention.config import KINDS
    from tracescore.retention.prune import Pruner
    from tracescore.store import SpanStore
    from tracescore.store.vacuum import reclaim_space

    try:
        retention = load_config(config_file).retention
    except OSError as exc:
        _exit(2, f"cannot read config file {config_file}: {exc.strerror}")
    except ConfigError as exc:
        _exit(2, str(exc))
    engine = open_engine(db, config_file, existing=True)
    if not retention.durations():
        typer.echo("nothing to prune: retention gives no kind a duration (all kept forever)")
        return
    store = SpanStore(engine)
    with database_errors():
        report = Pruner(store.write_transaction, retention, store.journal.kept).run()
        reclaimed = reclaim_space(engine, store.write_transaction)
    for kind in KINDS:
        removed = report.removed.get(kind)
        typer.echo(f"{kind}: " + ("kept forever" if removed is None else f"{removed} removed"))
    if report.removed.get("traces"):
        typer.echo(f"traces: {report.removed['traces']} queue rows of pruned traces removed")
    typer.echo(f"took {report.seconds:.1f} s" + (f"; {reclaimed / 1e6:.1f} MB returned to the "
                                                 "file system" if reclaimed else ""))
