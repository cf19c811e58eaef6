"""Feedback triggers (#37): ``feedback_triggers``, a binding's judging of a run someone marked
wrong, written with the verdict so that it survives a restart.

Revision ID: 0012_feedback_triggers
Revises: 0011_conversation_score_turns
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_feedback_triggers"
down_revision = "0011_conversation_score_turns"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "feedback_triggers",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("span_id", sa.String(length=16), nullable=True),
        sa.Column("binding", sa.String(length=100), nullable=False),
        sa.Column("feedback_id", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=10), nullable=False),
        sa.Column("outcome", sa.String(length=20), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("due_at", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_feedback_triggers_state_due", "feedback_triggers", ["state", "due_at"], unique=False
    )
    op.create_index("ix_feedback_triggers_trace", "feedback_triggers", ["trace_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_feedback_triggers_trace", table_name="feedback_triggers")
    op.drop_index("ix_feedback_triggers_state_due", table_name="feedback_triggers")
    op.drop_table("feedback_triggers")
