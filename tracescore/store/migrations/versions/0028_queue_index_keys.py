"""PostgreSQL's indexes of the traces in one state key their time alone, not the state too (#49).

``ix_traces_pending_last_seen``, ``ix_traces_pending_since``, ``ix_traces_ready_last_seen`` and
``ix_traces_claimed_last_seen`` each hold the traces in one state (``WHERE state = '…'``), so the
state leading their key was the same text in every entry: 8 bytes an entry, padded, written
again for each version of a trace's row in that state. They are rebuilt on the time alone; their
reads (each spelling its state) use them as before. They hold only the traces not yet scored, so
rebuilding them takes as long as the backlog is large, not the database.

SQLite is left as it is: its planner prefers such an index to ``ix_traces_state_end`` only with
``state`` leading it (``store/tables.py``).

There is no downgrade: a database is never downgraded (``store/migrate.py``).

Revision ID: 0028_queue_index_keys
Revises: 0027_spans_trace_index
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0028_queue_index_keys"
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


def downgrade() -> None:
    raise NotImplementedError("0028_queue_index_keys has no downgrade (see the module)")
