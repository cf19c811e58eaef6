"""``tracescore db``: the database's schema (and its upkeep) from the command line.

Every command takes the database as ``--db URL`` or from a config's ``store``; the options and
:func:`~tracescore.cli.database.open_engine` come from :mod:`tracescore.cli.database`. Modules are imported
inside the commands, so ``tracescore --help`` stays fast.

Exit codes: 0 done, 1 the database is behind (``check``), cannot be opened or has a schema
this release cannot use, 2 a usage error (bad URL, bad config file).
"""

from __future__ import annotations

from pathlib import Path

import typer

from tracescore.cli.common import fail
from tracescore.cli.database import (
    CONFIG_OPTION,
    DB_OPTION,
    database_errors,
    open_engine,
)

db_app = typer.Typer(
    help="The database: upgrade its schema, show and check its revision.", no_args_is_help=True
)


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
    from tracescore.store.opening import database_name

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
        fail(1, f"behind: the database schema is {state.describe()}; run `tracescore db upgrade`")
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
        fail(2, f"cannot read config file {config_file}: {exc.strerror}")
    except ConfigError as exc:
        fail(2, str(exc))
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
    typer.echo(
        f"took {report.seconds:.1f} s"
        + (f"; {reclaimed / 1e6:.1f} MB returned to the file system" if reclaimed else "")
    )
