"""Human feedback on runs (#24): the ``feedback`` table and the OTLP feedback scan's cursor.

Revision ID: 0002_feedback
Revises: 0001_baseline
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_feedback"
down_revision = "0001_baseline"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "feedback",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("span_id", sa.String(16), nullable=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("label", sa.String(50), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("source", sa.String(10), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_feedback_name_created", "feedback", ["name", "created_at"])
    op.create_index("ix_feedback_trace", "feedback", ["trace_id"])
    op.create_table(
        "feedback_scan",
        sa.Column("name", sa.String(50), primary_key=True),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("feedback_scan")
    op.drop_index("ix_feedback_trace", table_name="feedback")
    op.drop_index("ix_feedback_name_created", table_name="feedback")
    op.drop_table("feedback")
