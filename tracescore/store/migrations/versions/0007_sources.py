"""Sources (#31): the ``sources`` table, per (service, instrumentation scope) what the pipeline
made of its spans.

Revision ID: 0007_sources
Revises: 0006_dashboard_sessions
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_sources"
down_revision = "0006_dashboard_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sources",
        sa.Column("service", sa.String(200), primary_key=True),
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("spans", sa.BigInteger(), nullable=False),
        sa.Column("traces", sa.BigInteger(), nullable=False),
        sa.Column("runs", sa.BigInteger(), nullable=False),
        sa.Column("runs_with_content", sa.BigInteger(), nullable=False),
        sa.Column("unread_traces", sa.BigInteger(), nullable=False),
        sa.Column("convention", sa.String(50), nullable=True),
        sa.Column("reason", sa.String(40), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("first_seen", sa.Float(), nullable=False),
        sa.Column("last_seen", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sources")
