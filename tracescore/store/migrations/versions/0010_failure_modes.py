"""Failure modes (#38): the ``failure_groups``, ``failure_memberships`` and
``failure_run_texts`` tables.

Revision ID: 0010_failure_modes
Revises: 0009_leases
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_failure_modes"
down_revision = "0009_leases"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "failure_groups",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("named_by", sa.String(20), nullable=False),
        sa.Column("terms", sa.JSON(), nullable=True),
        sa.Column("first_seen", sa.Float(), nullable=False),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("previous_size", sa.Integer(), nullable=False),
        sa.Column("share", sa.Float(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=True),
    )
    op.create_index("ix_failure_groups_last_seen", "failure_groups", ["last_seen"])
    op.create_table(
        "failure_memberships",
        sa.Column("group_id", sa.String(32), primary_key=True),
        sa.Column("trace_id", sa.String(32), primary_key=True),
        sa.Column("span_id", sa.String(16), primary_key=True),
        sa.Column("failed_at", sa.Float(), nullable=False),
        sa.Column("agent", sa.String(200), nullable=True),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("flagged_by", sa.JSON(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
    )
    op.create_index(
        "ix_failure_memberships_group", "failure_memberships", ["group_id", "failed_at"]
    )

    op.create_table(
        "failure_run_texts",
        sa.Column("trace_id", sa.String(32), primary_key=True),
        sa.Column("span_id", sa.String(16), primary_key=True),
        sa.Column("failed_at", sa.Float(), nullable=False),
        sa.Column("agent", sa.String(200), nullable=True),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("request", sa.Text(), nullable=True),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("tools", sa.JSON(), nullable=True),
    )
    op.create_index("ix_failure_run_texts_failed_at", "failure_run_texts", ["failed_at"])


def downgrade() -> None:
    op.drop_index("ix_failure_run_texts_failed_at", table_name="failure_run_texts")
    op.drop_table("failure_run_texts")
    op.drop_index("ix_failure_memberships_group", table_name="failure_memberships")
    op.drop_table("failure_memberships")
    op.drop_index("ix_failure_groups_last_seen", table_name="failure_groups")
    op.drop_table("failure_groups")
