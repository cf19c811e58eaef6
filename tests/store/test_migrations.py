"""Schema migrations on real SQLite files and the real PostgreSQL server.

The previous release's databases are committed fixtures (``tests/fixtures/previous_release``,
made by ``scripts/make_previous_release_db.py`` with that release's own code), so these tests
need no git history.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import yaml
from alembic import command
from sqlalchemy import DateTime, Engine, inspect, text
from sqlalchemy.exc import DBAPIError
from sqlmodel import SQLModel
from typer.testing import CliRunner

from tests.support.databases import fresh_pg_database
from tests.support.paths import FIXTURES
from tests.support.schema_drift import drift as schema_drift
from tests.support.server_process import start_server, wait_for
from tracescore.cli import app
from tracescore.ingest.files import load_traces
from tracescore.judge.cache import VerdictCache
from tracescore.store import SchemaError, migrate, open_store
from tracescore.store.column_types import from_utc_micros, unpack_json
from tracescore.store.engine import create_tables, make_engine
from tracescore.store.judge_cache import JudgeVerdict, load_verdict, save_verdict
from tracescore.store.migrations.baseline import BASELINE
from tracescore.store.packed import unpack
from tracescore.store.packed_text import unpack_text
from tracescore.store.score_series import NAMES as SERIES_NAMES
from tracescore.store.table_of import table_of

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
            connection.execute((PREVIOUS / "postgresql.sql").read_text())
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


def rows_by_key(
    engine: Engine, table: str, stored_as: str | None = None
) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Every row of a baseline table (its baseline columns still stored), keyed by its
    primary key; ``stored_as`` names the table where a revision renamed it. Times compare as
    instants: a revision may rewrite SQLite's text of one into the form bound times take
    (``0015_sqlite_time_text``); ids as hex and span attributes as their text, the form they
    had before ``0019_packed_spans`` stored them as bytes and packed."""
    stored = stored_as or table
    present = {c["name"] for c in inspect(engine).get_columns(stored)}
    referenced = (
        HASHED if "id" in {c["name"] for c in inspect(engine).get_columns("scopes")} else {}
    )
    selected = {
        c.name: value
        for c in BASELINE.tables[table].columns
        if (value := _baseline_value(stored, c.name, referenced, present)) is not None
    }
    times = {c.name for c in BASELINE.tables[table].columns if isinstance(c.type, DateTime)}
    key = [column.name for column in BASELINE.tables[table].primary_key]
    with engine.connect() as connection:
        result = (
            connection.execute(
                text(
                    f"SELECT {', '.join(f'{v} AS {n}' for n, v in selected.items())} FROM {stored}"
                )
            )
            .mappings()
            .all()
        )
    rows = [
        {name: _as_text(table, name, value, times) for name, value in row.items()} for row in result
    ]
    return {tuple(row[name] for name in key): tuple(row.items()) for row in rows}


HASHED = {"resources": "resource_id", "scopes": "scope_id"}
"""The hash keys of resources and scopes, which ``0023_compact_spans_traces`` named ``hash``
(spans and log records refer to their rows by an integer ``id`` since)."""


def _baseline_value(
    table: str, column: str, referenced: dict[str, str], present: set[str]
) -> str | None:
    """The SQL of a baseline column's value in ``table`` as stored now (None: no longer
    stored): a resource's or scope's hash, where a revision renamed it or a span refers to its
    row by id; a span's end time, from its start and duration; a score's names, from its
    series (``0024_score_series``)."""
    if referenced.get(table) == column:
        return "hash"
    if (table, column) == ("spans", "end_time_ns") and "duration_ns" in present:
        return "start_time_ns + duration_ns"
    if table == "scores" and column in SERIES_NAMES and "series_id" in present:
        return f"(SELECT {column} FROM score_series WHERE score_series.id = scores.series_id)"
    if column not in present:
        return None
    if column in referenced.values() and table in ("spans", "logs"):
        target = next(name for name, key in referenced.items() if key == column)
        return f"(SELECT hash FROM {target} WHERE {target}.id = {table}.{column})"
    return column


def _as_text(table: str, column: str, value: Any, times: set[str]) -> Any:
    if column in times:
        return _instant(value)
    if isinstance(value, bytes | memoryview):
        if (table, column) == ("spans", "attributes"):
            return bytes(unpack(bytes(value))).decode()
        if (table, column) == ("scores", "steps"):
            return value  # packed JSON (0020_compact_scores): the snapshot parses it
        if (table, column) == ("scores", "reason"):
            return unpack_text(value)  # packed text (0024_score_series)
        return bytes(value).hex()
    return value


def _plain_id(value: Any) -> Any:
    """A hex id as text, whether stored as text or as its bytes."""
    return bytes(value).hex() if isinstance(value, (bytes, memoryview)) else value


def _instant(value: Any) -> Any:
    """A stored time as the instant it is (SQLite hands back its text, naive being UTC; a
    revision may store it as integer microseconds, ``0020_compact_scores``)."""
    if isinstance(value, int):
        return from_utc_micros(value)
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if isinstance(moment, datetime) and moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


def upgraded(
    tables: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]],
) -> dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]:
    """A snapshot with its scores' ``steps`` as parsed JSON and a code score's as revision
    ``0018_compact_storage`` leaves them: the marker, the step results computed when shown."""

    def steps_of(row: dict[str, Any]) -> Any:
        stored = row["steps"]
        if isinstance(stored, (bytes, memoryview)):
            steps = unpack_json(stored)
        else:
            steps = json.loads(stored) if isinstance(stored, str) else stored
        code = (
            row["status"] == "ok"
            and row["judge_model"] is None
            and row["input_tokens"] == 0
            and row.get("conversation_id") is None
            and row["scorer_id"] != "consistency"
        )
        return {"recompute": True} if code and steps is not None else steps

    scores = {
        key: tuple((name, steps_of(dict(row)) if name == "steps" else value) for name, value in row)
        for key, row in tables["scores"].items()
    }
    # ``0019_packed_spans``: a span's service name is its resource's, no longer a column.
    spans = {
        key: tuple((name, value) for name, value in row if name != "service_name")
        for key, row in tables["spans"].items()
    }
    # ``0025_queue_leases``: a claimed row's lease is a row of its queue's lease table.
    queues = {
        table: {
            key: tuple((name, value) for name, value in row if name not in LEASE_COLUMNS)
            for key, row in tables[table].items()
        }
        for table in ("traces", "conversations")
        if table in tables
    }
    return {**tables, "scores": scores, "spans": spans, **queues}


LEASE_COLUMNS = ("lease_token", "lease_owner", "lease_expires")


RENAMED = {"alert_leader": "leases"}
"""Baseline tables a later revision renamed (``0009_leases``)."""


def snapshot(engine: Engine) -> dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]:
    """Every baseline table's rows by key, under its baseline name (read from its new name once
    a revision renamed it)."""
    present = set(inspect(engine).get_table_names())
    return {
        table: rows_by_key(
            engine, table, RENAMED.get(table) if RENAMED.get(table) in present else None
        )
        for table in BASELINE.tables
    }


def drift(engine: Engine) -> list[Any]:
    """Alembic's comparison of the database with the models: empty when they agree."""
    with engine.connect() as connection:
        return schema_drift(connection)


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
        return connection.execute(
            text(
                "SELECT attstorage FROM pg_attribute "
                "WHERE attrelid = 'ingest_journal'::regclass AND attname = 'body'"
            )
        ).scalar_one()


# ------------------------------------------------------------------ revisions against models


def test_replayed_revisions_equal_the_models(empty_db_url: str, engines: list[Engine]) -> None:
    """Every revision from nothing, one after another: the schema the models declare. (A model
    change without its revision fails here.)"""
    engine = engine_for(empty_db_url, engines)
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), "head")
    assert drift(engine) == []
    assert migrate.schema_state(engine).pending == ()


def test_a_fresh_database_is_created_at_head_with_the_replayed_schema(
    empty_db_url: str, tmp_path: Path, engines: list[Engine]
) -> None:
    """The fast path for an empty database (the models' tables, stamped at head) builds the
    same schema as replaying the revisions, compared table by table."""
    fresh = engine_for(empty_db_url, engines)
    empty = migrate.schema_state(fresh)
    assert (empty.current, empty.has_tables) == (None, False)
    assert migrate.upgrade(fresh) == empty.pending
    state = migrate.schema_state(fresh)
    assert (state.current, state.pending) == (state.head, ())
    other = (
        fresh_pg_database()
        if fresh.dialect.name == "postgresql"
        else nullcontext(f"sqlite:///{tmp_path / 'replayed.db'}")
    )
    with other as url:
        replayed = engine_for(url, engines)
        with replayed.begin() as connection:
            command.upgrade(migrate.alembic_config(connection), "head")
        assert schema_of(fresh) == schema_of(replayed)
        assert journal_body_storage(fresh) == journal_body_storage(replayed)
        replayed.dispose()
    assert drift(fresh) == []


# ------------------------------------------------------------------ the previous release


def test_previous_release_upgrades_in_place_and_keeps_ingesting_and_scoring(
    previous_url: str, tmp_path: Path, engines: list[Engine]
) -> None:
    """``tracescore serve`` on the previous release's database: it upgrades at start, every
    span, log record, score, alert state and verdict-cache entry stays as it was, and new
    traffic is stored and scored beside it."""
    engine = engine_for(previous_url, engines)
    before = snapshot(engine)
    assert all(before[table] for table in KEPT)
    assert migrate.schema_state(engine).current is None
    assert any(
        dict(row)["judge_model"] is None and dict(row)["steps"] for row in before["scores"].values()
    ), "the fixture holds code scores with steps for revision 0018 to convert"
    before = upgraded(before)
    new_traces = {trace.trace_id for trace in load_traces([NEW_TRAFFIC])}
    assert new_traces and not new_traces & {key[0] for key in before["traces"]}
    config = {"scorers": [{"name": "tone", "scorer": "tone"}], "workers": {"poll_interval": 0.05}}
    with start_server(tmp_path / "serve", db_url=previous_url, config=config) as server:
        for export in sorted(NEW_TRAFFIC.rglob("*.pb")):
            response = httpx.post(
                f"{server.base_url}/v1/traces",
                content=export.read_bytes(),
                headers={"Content-Type": "application/x-protobuf"},
            )
            assert response.status_code == 200, response.text
        wait_for(
            lambda: _scored_traces(engine, new_traces) == new_traces,
            60.0,
            lambda: f"every new trace scored ({_scored_traces(engine, new_traces)} of them)",
        )
    state = migrate.schema_state(engine)
    assert (state.current, state.pending) == (state.head, ())
    assert drift(engine) == []
    after = upgraded(snapshot(engine))
    for table, rows in before.items():
        kept = {key: after[table].get(key) for key in rows}
        if table == "alert_leader":
            # The leases: the new service's evaluator takes the old one over, and its other
            # single-instance tasks (the feedback scan, retention) add theirs beside it.
            assert set(rows) <= set(after[table])
            continue
        assert kept == rows, f"{table}: rows of the previous release changed"


def _scored_traces(engine: Engine, traces: set[str]) -> set[str]:
    """Which of ``traces`` have scores."""
    with engine.connect() as connection:
        found = connection.execute(text("SELECT DISTINCT trace_id FROM scores")).scalars()
        return {_plain_id(trace_id) for trace_id in found} & traces


def test_an_earlier_build_missing_the_unique_log_index_is_repaired_then_stamped(
    previous_url: str, engines: list[Engine]
) -> None:
    """Builds before ``ux_logs_record_hash`` could store a retried log record twice: the
    upgrade removes the second copy (the first stored is kept) and adds the index."""
    engine = engine_for(previous_url, engines)
    with engine.begin() as connection:
        connection.execute(text("DROP INDEX ux_logs_record_hash"))
        first = connection.execute(text("SELECT min(id) FROM logs")).scalar_one()
        copied = [c.name for c in BASELINE.tables["logs"].columns if c.name != "id"]
        connection.execute(
            text(
                f"INSERT INTO logs ({', '.join(copied)}) SELECT {', '.join(copied)} FROM logs "
                "WHERE id = :first"
            ),
            {"first": first},
        )
    before = rows_by_key(engine, "logs")
    assert migrate.upgrade(engine)[0] == migrate.BASELINE_REVISION
    indexes = {i["name"]: i for i in inspect(engine).get_indexes("logs")}
    assert indexes["ux_logs_record_hash"]["unique"]
    after = rows_by_key(engine, "logs")
    assert after == {key: row for key, row in before.items() if key != (max(before)[0],)}
    assert (first,) in after


def test_a_verdict_cache_database_made_before_its_table_had_a_migration_is_upgraded(
    empty_db_url: str, engines: list[Engine]
) -> None:
    """A verdict cache used to create its table from the model by itself (created_at index
    included, no ``alembic_version``): opening it now upgrades it through the migrations
    (the cache no longer makes DDL of its own), keeps its verdicts, and serves them."""
    engine = engine_for(empty_db_url, engines)
    create_tables(engine, SQLModel.metadata, [table_of(JudgeVerdict)])
    verdict = JudgeVerdict(
        key="k" * 64, scorer_id="s", scorer_version="1", step="analyze", model="m", text="{}"
    )
    save_verdict(engine, verdict)
    cache = VerdictCache(empty_db_url)
    assert cache.engine is not None
    engines.append(cache.engine)
    state = migrate.schema_state(cache.engine)
    assert state.current == state.head and not state.pending
    assert set(inspect(cache.engine).get_table_names()) >= {
        RENAMED.get(t, t) for t in BASELINE.tables
    }
    stored = load_verdict(cache.engine, "k" * 64)
    assert stored is not None and stored.text == "{}" and stored.scorer_id == "s"


def test_an_earlier_build_missing_a_column_is_refused_with_the_column_named(
    tmp_path: Path, engines: list[Engine]
) -> None:
    """A missing column is not guessed at: the upgrade stops, naming it, and stamps nothing."""
    (url,) = previous_release("sqlite", tmp_path)
    engine = engine_for(url, engines)
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE traces DROP COLUMN last_error"))
    with pytest.raises(SchemaError, match=r"lacks columns \(traces: last_error\)"):
        migrate.upgrade(engine)
    assert migrate.schema_state(engine).current is None


def test_a_failing_upgrade_leaves_the_database_as_it_was(
    previous_url: str, engines: list[Engine]
) -> None:
    """The upgrade is one transaction, on SQLite too: when a revision fails (here, a table it
    creates was already made by hand), nothing of it stays, not even the baseline's repairs."""
    engine = engine_for(previous_url, engines)
    later = sorted(set(migrate.store_metadata().tables) - set(BASELINE.tables))[0]
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE ingest_unpackers"))  # the baseline adds it back
        connection.execute(text(f"CREATE TABLE {later} (id INTEGER)"))
    schema, rows = schema_of(engine), {table: rows_by_key(engine, table) for table in KEPT}
    with pytest.raises(DBAPIError, match=later):
        migrate.upgrade(engine)
    assert schema_of(engine) == schema
    assert {table: rows_by_key(engine, table) for table in KEPT} == rows
    assert migrate.schema_state(engine).current is None


UPGRADE_AT = """
import sys, time
from tracescore.store import migrate
from tracescore.store.engine import create_tables, make_engine
from tracescore.store.judge_cache import JudgeVerdict, load_verdict, save_verdict
engine = make_engine(sys.argv[1])
while time.time() < float(sys.argv[2]):
    pass
print(",".join(migrate.upgrade(engine)))
"""


def test_replicas_starting_together_upgrade_once(previous_url: str, engines: list[Engine]) -> None:
    """Four processes upgrade the previous release's database at the same moment: one applies
    the revisions, the others wait for the lock and find it done."""
    engine = engine_for(previous_url, engines)
    pending = migrate.schema_state(engine).pending
    before = snapshot(engine)
    start = time.time() + 4.0  # every process has imported tracescore by then
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", UPGRADE_AT, previous_url, str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outcomes = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0] * 4, outcomes
    applied = sorted(out.strip() for out, _err in outcomes)
    assert applied == ["", "", "", ",".join(pending)]
    assert migrate.schema_state(engine).pending == ()
    assert upgraded(snapshot(engine)) == upgraded(before)


# ------------------------------------------------------------------ refusals and the CLI


def serve_exit(
    url: str, tmp_path: Path, config: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """``tracescore serve`` expected to refuse to start: its exit code and output."""
    config_file = tmp_path / "refused.yaml"
    config_file.write_text(yaml.safe_dump(config))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tracescore.cli",
            "serve",
            "--config",
            str(config_file),
            "--http-port",
            "0",
            "--grpc-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_migrate_false_refuses_an_outdated_database_and_names_the_command(
    tmp_path: Path, engines: list[Engine]
) -> None:
    (url,) = previous_release("sqlite", tmp_path)
    engine = engine_for(url, engines)
    before = schema_of(engine)
    refused = serve_exit(url, tmp_path, {"store": {"url": url, "migrate": False}})
    assert refused.returncode == 1
    assert "store.migrate is false" in refused.stderr
    assert "run `tracescore db upgrade` first" in refused.stderr
    assert "unversioned (created before schema migrations)" in refused.stderr
    assert schema_of(engine) == before  # nothing was changed
    with pytest.raises(SchemaError):
        open_store(url, migrate=False)
    migrate.upgrade(engine)
    open_store(url, migrate=False).close()  # at head, it starts


def test_a_database_upgraded_by_a_newer_release_is_refused(
    sqlite_url: str, tmp_path: Path, engines: list[Engine]
) -> None:
    engine = engine_for(sqlite_url, engines)
    migrate.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    for migrate_at_start in (True, False):
        with pytest.raises(SchemaError, match="9999_from_the_future, which this tracescore"):
            open_store(sqlite_url, migrate=migrate_at_start)
    refused = serve_exit(sqlite_url, tmp_path, {"store": sqlite_url})
    assert refused.returncode == 1
    assert "a newer release upgraded it" in refused.stderr
    assert "downgrading a schema is not supported" in refused.stderr
    checked = CliRunner().invoke(app, ["db", "check", "--db", sqlite_url])
    assert checked.exit_code == 1 and "a newer release upgraded it" in checked.output


def test_db_commands_tell_where_the_schema_stands(
    previous_url: str, tmp_path: Path, engines: list[Engine]
) -> None:
    runner = CliRunner()
    head = migrate.schema_state(engine_for(previous_url, engines)).head
    behind = runner.invoke(app, ["db", "check", "--db", previous_url])
    assert behind.exit_code == 1
    assert "behind: the database schema is unversioned" in behind.output
    assert f"behind head {head} (pending: {migrate.BASELINE_REVISION}, " in behind.output
    config = tmp_path / "db.yaml"
    config.write_text(yaml.safe_dump({"store": previous_url}))
    upgraded = runner.invoke(app, ["db", "upgrade", "--config", str(config)])
    assert upgraded.exit_code == 0 and f"upgraded to {head}: applied" in upgraded.output
    again = runner.invoke(app, ["db", "upgrade", "--db", previous_url])
    assert again.exit_code == 0 and f"already at head {head}" in again.output
    current = runner.invoke(app, ["db", "current", "--db", previous_url])
    assert current.exit_code == 0 and current.output.strip().endswith(
        f": at revision {head} (head)"
    )
    checked = runner.invoke(app, ["db", "check", "--db", previous_url])
    assert checked.exit_code == 0 and "up to date" in checked.output
    bad = runner.invoke(app, ["db", "check", "--db", "mysql://nowhere/x"])
    assert bad.exit_code == 2 and "invalid database URL" in bad.output
