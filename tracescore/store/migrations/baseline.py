"""The schema of the first versioned release (commit c2edaf4), frozen: never edit it.

Revision ``0001_baseline`` creates these tables; databases created before migrations existed
(tables, no ``alembic_version``) are brought to exactly this schema by :func:`adopt` and then
stamped at the baseline, so their rows stay where they are. Later changes are revisions of
their own, never edits here: the models in ``tracescore/store`` move on, this copy does not.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from tracescore.store.migrations import SchemaError

_BIG_SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
"""An auto-numbered 64-bit key (SQLite auto-numbers only a column declared INTEGER PRIMARY KEY)."""

BASELINE = sa.MetaData()

sa.Table(
    "resources",
    BASELINE,
    sa.Column("resource_id", sa.String(32), primary_key=True),
    sa.Column("attributes", sa.Text(), nullable=False),
)
sa.Table(
    "scopes",
    BASELINE,
    sa.Column("scope_id", sa.String(32), primary_key=True),
    sa.Column("name", sa.Text(), nullable=False),
    sa.Column("version", sa.Text(), nullable=False),
    sa.Column("attributes", sa.Text(), nullable=False),
)
sa.Table(
    "spans",
    BASELINE,
    sa.Column("trace_id", sa.String(32), primary_key=True),
    sa.Column("span_id", sa.String(16), primary_key=True),
    sa.Column("parent_span_id", sa.String(16), nullable=True),
    sa.Column("name", sa.Text(), nullable=False),
    sa.Column("kind", sa.Integer(), nullable=False),
    sa.Column("start_time_ns", sa.BigInteger(), nullable=False),
    sa.Column("end_time_ns", sa.BigInteger(), nullable=False),
    sa.Column("status_code", sa.Integer(), nullable=False),
    sa.Column("status_message", sa.Text(), nullable=False),
    sa.Column("trace_state", sa.Text(), nullable=False),
    sa.Column("flags", sa.BigInteger(), nullable=False),
    sa.Column("service_name", sa.Text(), nullable=False),
    sa.Column("attributes", sa.Text(), nullable=False),
    sa.Column("events", sa.Text(), nullable=True),
    sa.Column("links", sa.Text(), nullable=True),
    sa.Column("resource_id", sa.String(32), nullable=False),
    sa.Column("scope_id", sa.String(32), nullable=False),
)
_journal = sa.Table(
    "ingest_journal",
    BASELINE,
    sa.Column("seq", _BIG_SERIAL, primary_key=True, autoincrement=True),
    sa.Column("received_at", sa.Float(), nullable=False),
    sa.Column("signal", sa.String(8), nullable=False),
    sa.Column("owner", sa.String(32), nullable=False),
    sa.Column("size", sa.Integer(), nullable=False),
    sa.Column("body", sa.LargeBinary(), nullable=False),
    sa.Column("failed", sa.Text(), nullable=True),
    sa.Index("ix_ingest_journal_owner", "owner", "seq"),
)
# Protobuf bodies barely compress: PostgreSQL stores them as they are (see store/tables.py).
sa.event.listen(
    _journal,
    "after_create",
    sa.DDL("ALTER TABLE ingest_journal ALTER COLUMN body SET STORAGE EXTERNAL").execute_if(
        dialect="postgresql"
    ),
)
sa.Table(
    "ingest_consumed",
    BASELINE,
    sa.Column("seq", sa.BigInteger(), primary_key=True, autoincrement=False),
    sa.Column("owner", sa.String(32), primary_key=True),
)
sa.Table(
    "ingest_unpackers",
    BASELINE,
    sa.Column("owner", sa.String(32), primary_key=True),
    sa.Column("heartbeat", sa.Float(), nullable=False),
)
sa.Table(
    "logs",
    BASELINE,
    sa.Column("id", _BIG_SERIAL, primary_key=True, autoincrement=True),
    sa.Column("record_hash", sa.String(32), nullable=False),
    sa.Column("trace_id", sa.String(32), nullable=True),
    sa.Column("span_id", sa.String(16), nullable=True),
    sa.Column("time_ns", sa.BigInteger(), nullable=False),
    sa.Column("observed_time_ns", sa.BigInteger(), nullable=False),
    sa.Column("event_name", sa.Text(), nullable=False),
    sa.Column("severity_number", sa.Integer(), nullable=False),
    sa.Column("severity_text", sa.Text(), nullable=False),
    sa.Column("body", sa.Text(), nullable=True),
    sa.Column("attributes", sa.Text(), nullable=False),
    sa.Column("flags", sa.BigInteger(), nullable=False),
    sa.Column("resource_id", sa.String(32), nullable=False),
    sa.Column("scope_id", sa.String(32), nullable=False),
    sa.Index("ix_logs_trace_id", "trace_id"),
    sa.Index("ux_logs_record_hash", "record_hash", unique=True),
)
sa.Table(
    "traces",
    BASELINE,
    sa.Column("trace_id", sa.String(32), primary_key=True),
    sa.Column("service_name", sa.Text(), nullable=False),
    sa.Column("root_name", sa.Text(), nullable=False),
    sa.Column("has_root", sa.Boolean(), nullable=False),
    sa.Column("span_count", sa.BigInteger(), nullable=False),
    sa.Column("log_count", sa.BigInteger(), nullable=False),
    sa.Column("generation", sa.BigInteger(), nullable=False),
    sa.Column("start_time_ns", sa.BigInteger(), nullable=True),
    sa.Column("end_time_ns", sa.BigInteger(), nullable=True),
    sa.Column("first_seen", sa.Float(), nullable=False),
    sa.Column("last_seen", sa.Float(), nullable=False),
    sa.Column("pending_since", sa.Float(), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("lease_token", sa.String(32), nullable=True),
    sa.Column("lease_owner", sa.Text(), nullable=True),
    sa.Column("lease_expires", sa.Float(), nullable=True),
    sa.Column("claimed_generation", sa.BigInteger(), nullable=True),
    sa.Column("scored_generation", sa.BigInteger(), nullable=True),
    sa.Column("attempts", sa.Integer(), nullable=False),
    sa.Column("last_error", sa.Text(), nullable=True),
    sa.Index("ix_traces_state_last_seen", "state", "last_seen"),
    sa.Index("ix_traces_state_pending_since", "state", "pending_since"),
    sa.Index("ix_traces_last_seen", "last_seen"),
)
sa.Table(
    "judge_verdicts",
    BASELINE,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("scorer_id", sa.String(), nullable=False),
    sa.Column("scorer_version", sa.String(), nullable=False),
    sa.Column("step", sa.String(), nullable=False),
    sa.Column("model", sa.String(), nullable=False),
    sa.Column("text", sa.String(), nullable=False),
    sa.Column("input_tokens", sa.Integer(), nullable=False),
    sa.Column("output_tokens", sa.Integer(), nullable=False),
    sa.Column("cost_usd", sa.Float(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("ix_judge_verdicts_scorer_id", "scorer_id"),
)
sa.Table(
    "scores",
    BASELINE,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("trace_id", sa.String(32), nullable=False),
    sa.Column("span_id", sa.String(16), nullable=False),
    sa.Column("binding", sa.String(100), nullable=False),
    sa.Column("scorer_id", sa.String(200), nullable=False),
    sa.Column("scorer_version", sa.String(50), nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("score", sa.Float(), nullable=True),
    sa.Column("label", sa.String(20), nullable=True),
    sa.Column("reason", sa.Text(), nullable=True),
    sa.Column("error", sa.Text(), nullable=True),
    sa.Column("steps", sa.JSON(), nullable=True),
    sa.Column("judge_model", sa.String(200), nullable=True),
    sa.Column("input_tokens", sa.Integer(), nullable=False),
    sa.Column("output_tokens", sa.Integer(), nullable=False),
    sa.Column("cost_usd", sa.Float(), nullable=False),
    sa.Column("latency_ms", sa.Float(), nullable=False),
    sa.Column("run_kind", sa.String(10), nullable=False),
    sa.Column("service", sa.String(200), nullable=True),
    sa.Column("agent", sa.String(200), nullable=True),
    sa.Column("model", sa.String(200), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("ix_scores_binding_created", "binding", "created_at"),
    sa.Index("ix_scores_scorer_created", "scorer_id", "created_at"),
    sa.Index("ix_scores_created", "created_at"),
    sa.Index("ix_scores_trace", "trace_id"),
    sa.Index("ix_scores_agent_created", "agent", "created_at"),
    sa.Index("ix_scores_status_created", "status", "created_at"),
)
sa.Table(
    "sampling_decisions",
    BASELINE,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("trace_id", sa.String(32), nullable=False),
    sa.Column("span_id", sa.String(16), nullable=False),
    sa.Column("binding", sa.String(100), nullable=False),
    sa.Column("sampled", sa.Boolean(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("ix_sampling_binding_created", "binding", "created_at"),
)
sa.Table(
    "sampling_tallies",
    BASELINE,
    sa.Column("binding", sa.String(100), primary_key=True),
    sa.Column("minute", sa.DateTime(timezone=True), primary_key=True),
    sa.Column("unsampled", sa.BigInteger(), nullable=False),
)
sa.Table(
    "alert_states",
    BASELINE,
    sa.Column("key", sa.String(32), primary_key=True),
    sa.Column("rule", sa.String(100), nullable=False),
    sa.Column("segment", sa.JSON(), nullable=False),
    sa.Column("state", sa.String(10), nullable=False),
    sa.Column("since", sa.Float(), nullable=False),
    sa.Column("evaluated_at", sa.Float(), nullable=False),
    sa.Column("value", sa.Float(), nullable=True),
    sa.Column("summary", sa.Text(), nullable=False),
    sa.Column("details", sa.JSON(), nullable=True),
    sa.Column("notified", sa.Boolean(), nullable=False),
    sa.Column("last_fired_at", sa.Float(), nullable=True),
    sa.Column("version", sa.Integer(), nullable=False),
    sa.Index("ix_alert_states_rule", "rule"),
)
sa.Table(
    "alert_events",
    BASELINE,
    sa.Column("id", _BIG_SERIAL, primary_key=True, autoincrement=True),
    sa.Column("key", sa.String(32), nullable=False),
    sa.Column("rule", sa.String(100), nullable=False),
    sa.Column("segment", sa.JSON(), nullable=False),
    sa.Column("status", sa.String(10), nullable=False),
    sa.Column("at", sa.Float(), nullable=False),
    sa.Column("payload", sa.JSON(), nullable=False),
    sa.Column("pending", sa.Boolean(), nullable=False),
    sa.Column("pending_channels", sa.JSON(), nullable=False),
    sa.Column("attempts", sa.Integer(), nullable=False),
    sa.Column("last_error", sa.Text(), nullable=True),
    sa.Index("ix_alert_events_at", "at"),
    sa.Index("ix_alert_events_pending", "pending"),
)
sa.Table(
    "alert_leader",
    BASELINE,
    sa.Column("name", sa.String(50), primary_key=True),
    sa.Column("owner", sa.String(200), nullable=False),
    sa.Column("expires_at", sa.Float(), nullable=False),
)


def create(connection: Connection) -> None:
    """Every baseline table and index, on an empty database."""
    BASELINE.create_all(connection)


def adopt(connection: Connection) -> None:
    """Bring a database of an earlier, unversioned build to the baseline, keeping its rows.

    Missing tables are created with their indexes, and missing indexes added to existing
    tables. Builds before ``ux_logs_record_hash`` could store an exporter's retried log record
    twice; those copies are removed (the first stored is kept) so the unique index can exist.
    A missing column is not guessed at: it stops the upgrade with the table and columns named.
    """
    inspector = sa.inspect(connection)
    existing = set(inspector.get_table_names())
    missing_columns = {
        table.name: sorted(
            set(table.columns.keys()) - {c["name"] for c in inspector.get_columns(table.name)}
        )
        for table in BASELINE.sorted_tables
        if table.name in existing
    }
    lacking = {name: columns for name, columns in missing_columns.items() if columns}
    if lacking:
        described = "; ".join(f"{name}: {', '.join(columns)}" for name, columns in lacking.items())
        raise SchemaError(
            f"this database predates the baseline schema and lacks columns ({described}), which "
            "tracescore cannot fill in: start on a new database"
        )
    BASELINE.create_all(
        connection, tables=[t for t in BASELINE.sorted_tables if t.name not in existing]
    )
    for table in BASELINE.sorted_tables:
        if table.name not in existing:
            continue
        present = {index["name"] for index in inspector.get_indexes(table.name)}
        for index in table.indexes:
            if index.name in present:
                continue
            if index.name == "ux_logs_record_hash":
                _drop_duplicate_log_records(connection)
            index.create(connection)


def _drop_duplicate_log_records(connection: Connection) -> None:
    connection.execute(
        sa.text("DELETE FROM logs WHERE id NOT IN (SELECT min(id) FROM logs GROUP BY record_hash)")
    )
