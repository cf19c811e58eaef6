"""PostgreSQL's span rows without padding, its trace rows with 4-byte counters, and its
``ix_traces_state_end`` of settled traces only (#49).

PostgreSQL aligns each fixed-width value of a row to its size: declared after the ids and the
name, a span's kind, times and flags padded it by about 9 bytes. The table is copied into the
models' order (8-byte integers, 4-byte, 2-byte, then the variable-width columns), its kind and
status code as ``smallint``; the old table is dropped, the copy renamed and its primary key
made on it (compact, as any index built on rows already there).

A trace's span and log counts and its write generations (the current one, the claimed and the
scored) become 4-byte integers (``ALTER COLUMN … TYPE integer``, one rewrite of the table and
its indexes): 16 bytes less in each of the four versions a trace's row is written in.

``ix_traces_state_end`` held an entry of every version of every trace: four per trace as it
went pending, ready, claimed and scored, none of them removable before the queue vacuum came
by. Only retention reads it, for scored, failed and pruned traces, so it now holds those only;
the backlog gauges count the other states from their own indexes.

SQLite is left as it is: it stores an integer in the bytes its value needs, whatever its
column's place or declared type, and its ``ix_traces_state_end`` stays whole (its planner
uses a partial index only for a query spelling the index's very condition).

There is no downgrade: a database is never downgraded (``store/migrate.py``).

Revision ID: 0026_aligned_spans
Revises: 0025_queue_leases
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0026_aligned_spans"
down_revision = "0025_queue_leases"
branch_labels = None
depends_on = None

_SPANS = """
CREATE TABLE spans_0026 (
    start_time_ns bigint NOT NULL,
    duration_ns bigint NOT NULL,
    flags bigint NOT NULL,
    resource_id integer NOT NULL,
    scope_id integer NOT NULL,
    kind smallint NOT NULL,
    status_code smallint NOT NULL,
    trace_id bytea NOT NULL,
    span_id bytea NOT NULL,
    parent_span_id bytea,
    name text NOT NULL,
    status_message text NOT NULL,
    trace_state text NOT NULL,
    attributes bytea NOT NULL,
    events text,
    links text
)"""
"""``spans`` as the models declare it on PostgreSQL, under a new name."""

_COLUMNS = (
    "start_time_ns, duration_ns, flags, resource_id, scope_id, kind, status_code, trace_id, "
    "span_id, parent_span_id, name, status_message, trace_state, attributes, events, links"
)

_COUNTERS = ("span_count", "log_count", "generation", "claimed_generation", "scored_generation")
"""The ``traces`` columns that become 4-byte integers."""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    bind.exec_driver_sql(_SPANS)
    bind.exec_driver_sql(f"INSERT INTO spans_0026 ({_COLUMNS}) SELECT {_COLUMNS} FROM spans")
    bind.exec_driver_sql("DROP TABLE spans")
    bind.exec_driver_sql("ALTER TABLE spans_0026 RENAME TO spans")
    bind.exec_driver_sql(
        "ALTER TABLE spans ADD CONSTRAINT spans_pkey PRIMARY KEY (trace_id, span_id)"
    )
    bind.exec_driver_sql("ANALYZE spans")  # the planner's statistics went with the old table
    bind.exec_driver_sql(
        "ALTER TABLE traces "
        + ", ".join(f"ALTER COLUMN {column} TYPE integer" for column in _COUNTERS)
    )
    bind.exec_driver_sql("DROP INDEX ix_traces_state_end")
    bind.exec_driver_sql(
        "CREATE INDEX ix_traces_state_end ON traces (state, end_time_ns) "
        "WHERE state IN ('scored', 'failed', 'pruned')"
    )


def downgrade() -> None:
    raise NotImplementedError("0026_aligned_spans has no downgrade (see the module)")
