"""PostgreSQL's indexes of the traces in one state key their time alone, not the state too, and
its ``ix_traces_last_seen`` holds the settled traces only (#49).

``ix_traces_pending_last_seen``, ``ix_traces_pending_since``, ``ix_traces_ready_last_seen`` and
``ix_traces_claimed_last_seen`` each hold the traces in one state (``WHERE state = '…'``), so the
state leading their key was the same text in every entry: 8 bytes an entry, padded, written
again for each version of a trace's row in that state. They are rebuilt on the time alone; their
reads (each spelling its state) use them as before. They hold only the traces not yet scored, so
rebuilding them takes as long as the backlog is large, not the database.

``ix_traces_last_seen`` held an entry of every version of every trace's row, four as it went
pending, ready, claimed and scored (85 bytes a trace after the capacity benchmark). It now holds
the scored, failed and pruned traces, one entry each; the reads in last-seen order (the trace
list, the feedback scan) read the other states from their own indexes, which hold them in the
same order (``store/traces.py``, ``in_last_seen_order``). Rebuilding it reads every trace once.

SQLite is left as it is: its planner prefers such an index to ``ix_traces_state_end`` only with
``state`` leading it (``store/tables.py``).

There is no downgrade: a database is never downgraded (``store/migrate.py``).

Revision ID: 0028_trace_indexes
Revises: 0027_spans_trace_index
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0028_trace_indexes"
down_revision = "0027_spans_trace_index"
branch_labels = None
depends_on = None

_INDEXES = (
    ("ix_traces_pending_last_seen", "last_seen", "pending"),
    ("ix_traces_pending_since", "pending_since", "pending"),
    ("ix_traces_ready_last_seen", "last_seen", "ready"),
    ("ix_traces_claimed_last_seen", "last_seen", "claimed"),
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for name, column, state in _INDEXES:
        bind.exec_driver_sql(f"DROP INDEX {name}")
        bind.exec_driver_sql(f"CREATE INDEX {name} ON traces ({column}) WHERE state = '{state}'")
    bind.exec_driver_sql("DROP INDEX ix_traces_last_seen")
    bind.exec_driver_sql(
        "CREATE INDEX ix_traces_last_seen ON traces (last_seen) "
        "WHERE state IN ('scored', 'failed', 'pruned')"
    )


def downgrade() -> None:
    raise NotImplementedError("0028_trace_indexes has no downgrade (see the module)")
