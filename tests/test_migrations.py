"""Schema migrations on real SQLite files and the real PostgreSQL server.

The previous release's databases are committed fixtures (``tests/fixtures/previous_release``,
made by ``scripts/make_previous_release_db.py`` with that release's own code), so these tests
need no git history.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, text
from typer.testing import CliRunner

from tests.conftest import FIXTURES, fresh_pg_database
from tests.server_process import start_server
from tracescore.cli import app
from tracescore.ingest.files import load_traces
from tracescore.store import SchemaError, migrate, open_store
from tracescore.store.engine import make_engine
from tracescore.store.migrations.baseline import BASELINE

PREVIOUS = FIXTURES / "previous_release"
NEW_TRAFFIC = FIXTURES / "captures" / "openinference-openai"
KEPT = ("spans", "logs", "scores", "alert_states", "judge_verdicts")
"""What the previous release's fixture must hold for the upgrade test to mean anything."""


def previous_release(backend: str, tmp_path: Path) -> Iterator[str]:
    """A database written by the previous release (no ``alembic_version``), as a URL."""
    if backend == "sqlite":
        shutil.copy(PREVIOUS / "tracescore.db", tmp_path / "previous.db")
        yield f"sqlite:///{tmp_path / 'previous.db'}"
        return
    with fresh_pg_database() as url:
        plain = url.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(plain, autocommit=True) as connection:
            connection.execute((PREVIOUS / "postgresql.sql").read_text())  # type: ignore[arg-type]
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def previous_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from previous_release(request.param, tmp_path)


@pytest.fixture
def engines() -> Iterator[list[Engine]]:
    """Engines a test opens, disposed after it (PostgreSQL drops a database only when idle)."""
    opened: list[Engine] = []
    yield opened
    for engine in opened:
        engine.dispose()


def engine_for(url: str, engines: list[Engine]) -> Engine:
    engine = make_engine(url)
    engines.append(engine)
    return engine


def rows_by_key(engine: Engine, table: str) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Every row of a baseline table, keyed by its primary key."""
    key = [column.name for column in BASELINE.tables[table].primary_key]
    with engine.connect() as connection:
        result = connection.execute(text(f"SELECT * FROM {table}")).mappings().all()
    return {tuple(row[name] for name in key): tuple(row.items()) for row in result}


def snapshot(engine: Engine) -> dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]:
    return {table: rows_by_key(engine, table) for table in BASELINE.tables}


def drift(engine: Engine) -> list[Any]:
    """Alembic's comparison of the database with the models: empty when they agree."""
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, migrate.store_metadata()))


def schema_of(engine: Engine) -> dict[str, Any]:
    """The reflected schema, for comparing two databases directly: columns (type, nullability,
    default; by name, since an upgrade appends a column wherever the model declares it),
    primary keys and indexes of every table."""
    inspector = inspect(engine)
    return {
        table: {
            "columns": sorted(
                (c["name"], str(c["type"]), c["nullable"], c.get("default"))
                for c in inspector.get_columns(table)
            ),
            "primary_key": inspector.get_pk_constraint(table)["constrained_columns"],
            "indexes": sorted(
                (i["name"], tuple(i["column_names"]), bool(i["unique"]))
                for i in inspector.get_indexes(table)
            ),
        }
        for table in sorted(inspector.get_table_names())
    }


def journal_body_storage(engine: Engine) -> str | None:
    """PostgreSQL's storage mode of the journal bodies ('e': external, uncompressed)."""
    if engine.dialect.name != "postgresql":
        return None
    with engine.connect() as connection:
        return connection.execute(text(
            "SELECT attstorage FROM pg_attribute "
            "WHERE attrelid = 'ingest_journal'::regclass AND attname = 'body'"
        )).scalar_one()  # fmt: skip


# ------------------------------------------------------------------ revisions against models


def test_replayed_revisions_equal_the_models(db_url: str, engines: list[Engine]) -> None:
    """Every revision from nothing, one after another: the schema the models declare. (A model
    change without its revision fails here.)"""
    engine = engine_for(db_url, engines)
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), "head")
    assert drift(engine) == []
    assert migrate.schema_state(engine).pending == ()


def test_a_fresh_database_is_created_at_head_with_the_replayed_schema(
    db_url: str, tmp_path: Path, engines: list[Engine]
) -> None:
    """The fast path for an empty database (the models' tables, stamped at head) builds the
    same schema as replaying the revisions, compared table by table."""
    fresh = engine_for(db_url, engines)
    empty = migrate.schema_state(fresh)
    assert (empty.current, empty.has_tables) == (None, False)
    assert migrate.upgrade(fresh) == empty.pending
    state = migrate.schema_state(fresh)
    assert (state.current, state.pending) == (state.head, ())
    other = (
        fresh_pg_database() if fresh.dialect.name == "postgresql"
        else nullcontext(f"sqlite:///{tmp_path / 'replayed.db'}")
    )  # fmt: skip
    with other as url:
        replayed = engine_for(url, engines)
        with replayed.begin() as connection:
            command.upgrade(migrate.alembic_config(connection), "head")
        assert schema_of(fresh) == schema_of(replayed)
        assert journal_body_storage(fresh) == journal_body_storage(replayed)
        replayed.dispose()
    assert drift(fresh) == []
