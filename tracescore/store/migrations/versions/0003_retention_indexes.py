"""Retention (#22): the indexes that let a pass find the oldest expired rows of each kind.

Revision ID: 0003_retention_indexes
Revises: 0002_feedback
Create Date: 2026-11-25
"""

from __future__ import annotations

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
    for name, table, columns in _INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _columns in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
