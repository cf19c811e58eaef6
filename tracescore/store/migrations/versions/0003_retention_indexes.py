"""Retention (#22): the indexes that let a pass find the oldest expired rows of each kind.

Revision ID: 0003_retention_indexes
Revises: 0002_feedback
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_retention_indexes"
down_revision = "0002_feedback"
branch_labels = None
depends_on = None

_INDEXES = (
    ("ix_logs_time", "logs", ["time_ns"]),
    ("ix_traces_state_end", "traces", ["state", "end_time_ns"]),
    ("ix_sampling_created", "sampling_decisions", ["created_at"]),
    ("ix_judge_verdicts_created_at", "judge_verdicts", ["created_at"]),
)


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for name, table, columns in _INDEXES:
        # A verdict cache used to create its table from the model, index included, before
        # any migration ran: that database is adopted at the baseline and comes through here.
        if name not in {index["name"] for index in inspector.get_indexes(table)}:
            op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _columns in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
