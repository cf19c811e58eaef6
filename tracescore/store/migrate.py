"""Bring a database's schema to this release's: the Alembic revisions in ``store/migrations``.

Three kinds of database reach :func:`upgrade`:

- an empty one gets every table from the models (``create_all``) and is stamped at head: one
  round of DDL instead of replaying each revision, which matters to a test suite that creates
  hundreds of databases. A test proves the result equals the replayed revisions' schema.
- one created before migrations existed (tables, no ``alembic_version``) is brought to the
  baseline in place (:func:`~tracescore.store.migrations.baseline.adopt`), stamped there, then
  upgraded like any other;
- a versioned one gets the revisions it lacks.

Replicas starting together upgrade once: the work runs under a lock (PostgreSQL: an advisory
lock held by the upgrade's transaction; SQLite: the store's writer lock file) and each replica
reads the schema's revision only once it holds it. A database stamped with a revision this
release does not know was upgraded by a newer one and is refused: downgrades are not supported.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.script.revision import RevisionError
from alembic.util import CommandError
from sqlalchemy import Connection, Engine, inspect

from tracescore.store.metadata import store_metadata
from tracescore.store.migrations import SchemaError
from tracescore.store.migrations.baseline import BASELINE, adopt
from tracescore.store.writelock import exclusive_transaction

log = logging.getLogger(__name__)

BASELINE_REVISION = "0001_baseline"
"""The revision that stands for the schema of databases created before migrations existed."""

_SCRIPTS = Path(__file__).with_name("migrations")


def alembic_config(connection: Connection | None = None) -> AlembicConfig:
    """Alembic's configuration for the shipped revisions; ``env.py`` runs on ``connection``."""
    config = AlembicConfig()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.attributes["connection"] = connection
    return config


def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


@dataclass(frozen=True)
class SchemaState:
    """Where a database's schema stands against this release's revisions."""

    current: str | None
    """The revision the database is stamped with; None when it has no ``alembic_version``."""
    head: str
    """This release's newest revision."""
    pending: tuple[str, ...]
    """Revisions an upgrade applies, oldest first (the baseline included for an unversioned
    database)."""
    has_tables: bool
    """Whether any of the store's tables exist (an unversioned database with tables was created
    by a build before migrations)."""

    def describe(self) -> str:
        """One line for people: the revision, and how far behind head it is."""
        if self.current is not None:
            where = f"at revision {self.current}"
        elif self.has_tables:
            where = "unversioned (created before schema migrations)"
        else:
            where = "empty"
        if not self.pending:
            return f"{where} (head)"
        count = len(self.pending)
        return (
            f"{where}, {count} revision{'s' if count > 1 else ''} behind head {self.head} "
            f"(pending: {', '.join(self.pending)})"
        )


def read_state(connection: Connection) -> SchemaState:
    """The schema state of the database ``connection`` is on; :class:`SchemaError` when it was
    upgraded by a newer release."""
    scripts = _scripts()
    head = scripts.get_current_head()
    assert head is not None, "the shipped migrations have a head revision"
    stamped = MigrationContext.configure(connection).get_current_heads()
    current = stamped[0] if stamped else None
    if len(stamped) > 1 or (current is not None and not _known(scripts, current)):
        raise SchemaError(
            f"the database schema is at revision {', '.join(stamped)}, which this tracescore "
            f"(schema head {head}) does not know: a newer release upgraded it. Run that release "
            "or a later one; downgrading a schema is not supported."
        )
    pending = tuple(
        script.revision
        for script in reversed(list(scripts.iterate_revisions(head, current or "base")))
    )
    has_tables = bool(set(inspect(connection).get_table_names()) & set(BASELINE.tables))
    return SchemaState(current, head, pending, has_tables)


def _known(scripts: ScriptDirectory, revision: str) -> bool:
    try:
        return scripts.get_revision(revision) is not None
    except (CommandError, RevisionError):
        return False


def schema_state(engine: Engine) -> SchemaState:
    with engine.connect() as connection:
        return read_state(connection)


def upgrade(engine: Engine) -> tuple[str, ...]:
    """Bring the database to head; returns the revisions applied (none when it already was).

    Raises :class:`SchemaError` for a database a newer release upgraded, or an unversioned one
    missing columns of the baseline.
    """
    with _schema_lock(engine) as connection:
        state = read_state(connection)
        if not state.pending:
            return ()
        config = alembic_config(connection)
        if state.current is None and not state.has_tables:
            store_metadata().create_all(connection)
            command.stamp(config, "head")
        else:
            if state.current is None:
                adopt(connection)
                command.stamp(config, BASELINE_REVISION)
            command.upgrade(config, "head")
    if state.current is None and not state.has_tables:
        log.info("database schema created at %s", state.head)
    else:
        log.info("database schema upgraded from %s to %s", state.describe(), state.head)
    return state.pending


def require_current(engine: Engine) -> None:
    """Refuse (:class:`SchemaError`) a database that is not at this release's head, for a
    service told not to upgrade (``store.migrate: false``)."""
    state = schema_state(engine)
    if state.pending:
        raise SchemaError(
            f"the database schema is {state.describe()}; store.migrate is false, so tracescore "
            "does not upgrade it at start: run `tracescore db upgrade` first"
        )


def _schema_lock(engine: Engine) -> AbstractContextManager[Connection]:
    """A connection in a transaction that holds the schema lock (the key ``create_tables``
    takes too, so tables created outside migrations never race an upgrade). The whole upgrade
    is that one transaction, so a failing revision leaves the database as it was."""
    return exclusive_transaction(engine, "tracescore.schema")
