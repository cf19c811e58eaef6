"""Packed spans (#49): ids as bytes, span attributes compressed, no per-span service name.

Trace, span and record ids and the resource and scope hashes were hex text, twice their bytes
in every row and every index holding them; they become ``BLOB`` / ``bytea`` (the models'
``HexId``). A span's attribute map, most of its row, becomes its typed JSON compressed against a
dictionary of GenAI words (``tracescore/store/packed.py``: a tag byte, then the text or a
zstandard frame). ``spans.service_name`` goes: it is the span's resource's ``service.name``,
which ingest reads from the resource. On SQLite the spans table becomes ``WITHOUT ROWID``: the
table is its (trace_id, span_id) key's B-tree, where a rowid table kept the key twice.
``ix_traces_state_last_seen`` and ``ix_traces_state_pending_since`` become partial indexes of
the one state each of their reads names (pending, ready, claimed): nearly every trace is
scored, and their entries for those were never read.

SQLite cannot change a column's type: each table is copied into its new form, with the
conversions as SQL functions of this connection (``ts_unhex``, ``ts_pack``), the old one
dropped and the copy renamed; its indexes are made again. PostgreSQL changes the columns in
place (``ALTER COLUMN … TYPE bytea USING decode(…, 'hex')``, one rewrite per table), the
attribute maps first stored as text (tag ``0``), then compressed by this process in batches.
Both free the old pages only to later rows until ``VACUUM`` (``tracescore vacuum`` on SQLite).

There is no downgrade: the earlier releases' readers cannot read packed attributes, and a
database is never downgraded (``store/migrate.py``).

Revision ID: 0019_packed_spans
Revises: 0018_compact_storage
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from tracescore.store.packed import pack

revision = "0019_packed_spans"
down_revision = "0018_compact_storage"
branch_labels = None
depends_on = None

_IDS = {
    "resources": ("resource_id",),
    "scopes": ("scope_id",),
    "spans": ("trace_id", "span_id", "parent_span_id", "resource_id", "scope_id"),
    "logs": ("record_hash", "trace_id", "span_id", "resource_id", "scope_id"),
    "traces": ("trace_id",),
}
"""The hex id columns of each table, which become bytes."""

_SQLITE_TABLES = {
    "resources": """
CREATE TABLE {name} (
	resource_id BLOB NOT NULL,
	attributes TEXT NOT NULL,
	PRIMARY KEY (resource_id)
)""",
    "scopes": """
CREATE TABLE {name} (
	scope_id BLOB NOT NULL,
	name TEXT NOT NULL,
	version TEXT NOT NULL,
	attributes TEXT NOT NULL,
	PRIMARY KEY (scope_id)
)""",
    "spans": """
CREATE TABLE {name} (
	trace_id BLOB NOT NULL,
	span_id BLOB NOT NULL,
	parent_span_id BLOB,
	name TEXT NOT NULL,
	kind INTEGER NOT NULL,
	start_time_ns BIGINT NOT NULL,
	end_time_ns BIGINT NOT NULL,
	status_code INTEGER NOT NULL,
	status_message TEXT NOT NULL,
	trace_state TEXT NOT NULL,
	flags BIGINT NOT NULL,
	attributes BLOB NOT NULL,
	events TEXT,
	links TEXT,
	resource_id BLOB NOT NULL,
	scope_id BLOB NOT NULL,
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
	resource_id BLOB NOT NULL,
	scope_id BLOB NOT NULL,
	PRIMARY KEY (id)
)""",
    "traces": """
CREATE TABLE {name} (
	trace_id BLOB NOT NULL,
	service_name TEXT NOT NULL,
	root_name TEXT NOT NULL,
	has_root BOOLEAN NOT NULL,
	span_count BIGINT NOT NULL,
	log_count BIGINT NOT NULL,
	generation BIGINT NOT NULL,
	start_time_ns BIGINT,
	end_time_ns BIGINT,
	first_seen FLOAT NOT NULL,
	last_seen FLOAT NOT NULL,
	pending_since FLOAT NOT NULL,
	state VARCHAR(16) NOT NULL,
	lease_token VARCHAR(32),
	lease_owner TEXT,
	lease_expires FLOAT,
	claimed_generation BIGINT,
	scored_generation BIGINT,
	attempts INTEGER NOT NULL,
	last_error TEXT,
	PRIMARY KEY (trace_id)
)""",
}
"""Each table as the models declare it at this revision (SQLite's DDL), under a new name."""

_INDEXES = (
    ("ux_logs_record_hash", "logs", ("record_hash",), True),
    ("ix_logs_time", "logs", ("time_ns",), False),
    ("ix_logs_trace_event", "logs", ("trace_id", "event_name"), False),
    ("ix_traces_state_end", "traces", ("state", "end_time_ns"), False),
    ("ix_traces_last_seen", "traces", ("last_seen",), False),
)
"""The indexes of the tables SQLite copies, made again on the copies."""

_IN_STATE = (
    ("ix_traces_pending_last_seen", "last_seen", "pending"),
    ("ix_traces_pending_since", "pending_since", "pending"),
    ("ix_traces_ready_last_seen", "last_seen", "ready"),
    ("ix_traces_claimed_last_seen", "last_seen", "claimed"),
)
"""The partial indexes replacing ``ix_traces_state_last_seen`` and
``ix_traces_state_pending_since``: promotion and claims read the traces of one state each."""

_PACK_BATCH = 5_000
"""Spans whose attributes PostgreSQL's pass compresses per statement."""


def _unhex(value: str | None) -> bytes | None:
    return None if value is None else bytes.fromhex(value)


def _columns(bind: sa.Connection, table: str) -> list[str]:
    return [column["name"] for column in sa.inspect(bind).get_columns(table)]


def _upgrade_sqlite(bind: sa.Connection) -> None:
    driver = bind.connection.driver_connection
    driver.create_function("ts_unhex", 1, _unhex, deterministic=True)  # type: ignore[union-attr]
    driver.create_function("ts_pack", 1, pack, deterministic=True)  # type: ignore[union-attr]
    for table, ddl in _SQLITE_TABLES.items():
        kept = [c for c in _columns(bind, table) if table != "spans" or c != "service_name"]
        converted = [
            f"ts_unhex({column})"
            if column in _IDS[table]
            else "ts_pack(attributes)"
            if (table, column) == ("spans", "attributes")
            else column
            for column in kept
        ]
        copy = f"{table}_0019"
        bind.exec_driver_sql(ddl.format(name=copy))
        bind.exec_driver_sql(
            f"INSERT INTO {copy} ({', '.join(kept)}) SELECT {', '.join(converted)} FROM {table}"
        )
        bind.exec_driver_sql(f"DROP TABLE {table}")
        bind.exec_driver_sql(f"ALTER TABLE {copy} RENAME TO {table}")
    for name, table, columns, unique in _INDEXES:
        op.create_index(name, table, list(columns), unique=unique)
    _index_by_state()


def _index_by_state() -> None:
    for name, column, state in _IN_STATE:
        where = sa.text(f"state = '{state}'")
        op.create_index(
            name, "traces", ["state", column], sqlite_where=where, postgresql_where=where
        )


def _upgrade_postgresql(bind: sa.Connection) -> None:
    op.drop_index("ix_traces_state_last_seen", table_name="traces")
    op.drop_index("ix_traces_state_pending_since", table_name="traces")
    for table, columns in _IDS.items():
        changes = [
            f"ALTER COLUMN {column} TYPE bytea USING decode({column}, 'hex')" for column in columns
        ]
        if table == "spans":
            changes += [
                "DROP COLUMN service_name",
                "ALTER COLUMN attributes TYPE bytea "
                "USING '\\x00'::bytea || convert_to(attributes, 'UTF8')",
            ]
        bind.exec_driver_sql(f"ALTER TABLE {table} {', '.join(changes)}")
    _index_by_state()
    _pack_postgresql(bind)


def _pack_postgresql(bind: sa.Connection) -> None:
    """Compress the attribute maps stored as text (tag 0) by the column's change, a batch of
    spans at a time in key order."""
    find = sa.text(
        "SELECT trace_id, span_id, attributes FROM spans "
        "WHERE (trace_id, span_id) > (:trace_id, :span_id) ORDER BY trace_id, span_id LIMIT :n"
    )
    store = sa.text(
        "UPDATE spans SET attributes = packed.attributes "
        "FROM unnest(CAST(:trace_ids AS bytea[]), CAST(:span_ids AS bytea[]), "
        "CAST(:attributes AS bytea[])) AS packed(trace_id, span_id, attributes) "
        "WHERE spans.trace_id = packed.trace_id AND spans.span_id = packed.span_id"
    )
    after: Sequence[bytes] = (b"", b"")
    while True:
        rows = bind.execute(find, {"trace_id": after[0], "span_id": after[1], "n": _PACK_BATCH})
        batch = [(bytes(t), bytes(s), bytes(a)) for t, s, a in rows]
        if not batch:
            return
        changed = [
            (trace_id, span_id, stored)
            for trace_id, span_id, text in batch
            if (stored := pack(text[1:].decode())) != text
        ]
        if changed:
            trace_ids, span_ids, attributes = map(list, zip(*changed, strict=True))
            bind.execute(
                store, {"trace_ids": trace_ids, "span_ids": span_ids, "attributes": attributes}
            )
        after = batch[-1][:2]


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        _upgrade_postgresql(bind)
    else:
        _upgrade_sqlite(bind)


def downgrade() -> None:
    raise NotImplementedError("0019_packed_spans has no downgrade (see the module)")
