"""Compact spans (#49): spans and logs name their resource and scope by a small integer id, and
a span keeps its duration rather than its end time.

``resources`` and ``scopes`` were keyed by a 16-byte hash of their content, and every span and
log row held two of them (32 bytes and more of a span's ~240). Each table gets an integer
``id`` key; the hash stays, as ``hash`` under a unique index, the key a write finds an
existing resource or scope by; ``spans.resource_id``, ``spans.scope_id`` and the same columns
of ``logs`` become that integer (one or two bytes in a SQLite row, four on PostgreSQL).
``spans.end_time_ns`` becomes ``duration_ns``, the end less the start: SQLite stores an integer
in the bytes its value needs, three to five for a duration where an end time took eight.

SQLite cannot change a column's type: each table is copied into its new form, the references
looked up in the new ``resources`` and ``scopes`` by hash, the old table dropped and the copy
renamed; the logs' indexes are made again. PostgreSQL renames the hash columns, adds the
serial ids, and changes the span and log columns in place
(``ALTER COLUMN … TYPE integer USING``, one rewrite per table, through two functions of this
session that look the hash up). Both free the old pages only to later rows until ``VACUUM``
(``tracescore vacuum`` on SQLite).

There is no downgrade: a database is never downgraded (``store/migrate.py``), and the earlier
releases' readers look resources up by hash.

Revision ID: 0023_compact_spans_traces
Revises: 0021_call_links
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023_compact_spans_traces"
down_revision = "0021_call_links"
branch_labels = None
depends_on = None

_REFS = {
    "resources": ("resource_id", "attributes"),
    "scopes": ("scope_id", "name", "version", "attributes"),
}
"""The referenced tables: their hash key, then the columns kept as they are."""

_SQLITE_TABLES = {
    "resources": """
CREATE TABLE {name} (
	id INTEGER NOT NULL,
	hash BLOB NOT NULL,
	attributes TEXT NOT NULL,
	PRIMARY KEY (id)
)""",
    "scopes": """
CREATE TABLE {name} (
	id INTEGER NOT NULL,
	hash BLOB NOT NULL,
	name TEXT NOT NULL,
	version TEXT NOT NULL,
	attributes TEXT NOT NULL,
	PRIMARY KEY (id)
)""",
    "spans": """
CREATE TABLE {name} (
	trace_id BLOB NOT NULL,
	span_id BLOB NOT NULL,
	parent_span_id BLOB,
	name TEXT NOT NULL,
	kind INTEGER NOT NULL,
	start_time_ns BIGINT NOT NULL,
	duration_ns BIGINT NOT NULL,
	status_code INTEGER NOT NULL,
	status_message TEXT NOT NULL,
	trace_state TEXT NOT NULL,
	flags BIGINT NOT NULL,
	attributes BLOB NOT NULL,
	events TEXT,
	links TEXT,
	resource_id INTEGER NOT NULL,
	scope_id INTEGER NOT NULL,
	PRIMARY KEY (trace_id, span_id)
) WITHOUT ROWID""",
    "logs": """
CREATE TABLE {name} (
	id INTEGER NOT NULL,
	record_hash BLOB NOT NULL,
	trace_id BLOB,
	span_id BLOB,
	time_ns BIGINT NOT NULL,
	observed_time_ns BIGINT NOT NULL,
	event_name TEXT NOT NULL,
	severity_number INTEGER NOT NULL,
	severity_text TEXT NOT NULL,
	body TEXT,
	attributes TEXT NOT NULL,
	flags BIGINT NOT NULL,
	resource_id INTEGER NOT NULL,
	scope_id INTEGER NOT NULL,
	PRIMARY KEY (id)
)""",
}
"""Each table as the models declare it at this revision (SQLite's DDL), under a new name."""

_INDEXES = (
    ("ux_resources_hash", "resources", ("hash",), True),
    ("ux_scopes_hash", "scopes", ("hash",), True),
    ("ux_logs_record_hash", "logs", ("record_hash",), True),
    ("ix_logs_time", "logs", ("time_ns",), False),
    ("ix_logs_trace_event", "logs", ("trace_id", "event_name"), False),
)
"""The indexes of the tables SQLite copies, made again on the copies."""

_REFERRING = ("spans", "logs")
_RENAMED = {("spans", "end_time_ns"): "duration_ns"}
"""A span's end time becomes its duration (the end less the start)."""


def _columns(bind: sa.Connection, table: str) -> list[str]:
    return [column["name"] for column in sa.inspect(bind).get_columns(table)]


def _copy_sqlite(bind: sa.Connection, table: str, columns: list[str], selected: list[str]) -> None:
    copy = f"{table}_0023"
    bind.exec_driver_sql(_SQLITE_TABLES[table].format(name=copy))
    bind.exec_driver_sql(
        f"INSERT INTO {copy} ({', '.join(columns)}) SELECT {', '.join(selected)} FROM {table}"
    )
    bind.exec_driver_sql(f"DROP TABLE {table}")
    bind.exec_driver_sql(f"ALTER TABLE {copy} RENAME TO {table}")


def _upgrade_sqlite(bind: sa.Connection) -> None:
    for table, (key, *kept) in _REFS.items():
        _copy_sqlite(bind, table, ["hash", *kept], [key, *kept])
    for table in _REFERRING:
        columns = _columns(bind, table)
        converted = {
            "resource_id": f"(SELECT id FROM resources WHERE hash = {table}.resource_id)",
            "scope_id": f"(SELECT id FROM scopes WHERE hash = {table}.scope_id)",
        }
        if table == "spans":
            converted["end_time_ns"] = "end_time_ns - start_time_ns"
        _copy_sqlite(
            bind,
            table,
            [_RENAMED.get((table, c), c) for c in columns],
            [converted.get(c, c) for c in columns],
        )
    for name, table, indexed, unique in _INDEXES:
        op.create_index(name, table, list(indexed), unique=unique)


def _upgrade_postgresql(bind: sa.Connection) -> None:
    for table, (key, *_) in _REFS.items():
        bind.exec_driver_sql(f"ALTER TABLE {table} RENAME COLUMN {key} TO hash")
        bind.exec_driver_sql(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey")
        bind.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN id SERIAL PRIMARY KEY")
        bind.exec_driver_sql(
            f"CREATE FUNCTION pg_temp.ts_{table}_id(bytea) RETURNS integer "
            f"LANGUAGE sql STABLE AS 'SELECT id FROM {table} WHERE hash = $1'"
        )
    for name, table, indexed, unique in _INDEXES[:2]:
        op.create_index(name, table, list(indexed), unique=unique)
    for table in _REFERRING:
        duration = (
            ", ALTER COLUMN end_time_ns TYPE bigint USING end_time_ns - start_time_ns"
            if table == "spans"
            else ""
        )
        bind.exec_driver_sql(
            f"ALTER TABLE {table} "
            "ALTER COLUMN resource_id TYPE integer USING pg_temp.ts_resources_id(resource_id), "
            f"ALTER COLUMN scope_id TYPE integer USING pg_temp.ts_scopes_id(scope_id){duration}"
        )
    bind.exec_driver_sql("ALTER TABLE spans RENAME COLUMN end_time_ns TO duration_ns")
    for table in _REFS:
        bind.exec_driver_sql(f"DROP FUNCTION pg_temp.ts_{table}_id(bytea)")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        _upgrade_postgresql(bind)
    else:
        _upgrade_sqlite(bind)


def downgrade() -> None:
    raise NotImplementedError("0023_compact_spans_traces has no downgrade (see the module)")
