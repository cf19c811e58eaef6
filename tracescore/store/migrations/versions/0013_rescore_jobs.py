"""A changed scorer re-scores by itself (#37, item 5): ``rescore_jobs``.

One row per binding with ``rescore_on_change``: the scorer fingerprint last seen and the
progress of the re-score its latest change started (:mod:`tracescore.store.rescores`).

Revision ID: 0013_rescore_jobs
Revises: 0012_feedback_triggers
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_rescore_jobs"
down_revision = "0012_feedback_triggers"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rescore_jobs",
        sa.Column("binding", sa.String(length=100), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("scorer_version", sa.String(length=50), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("old_version", sa.String(length=50), nullable=True),
        sa.Column("new_version", sa.String(length=60), nullable=True),
        sa.Column("runs", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("rescored", sa.Integer(), nullable=False),
        sa.Column("errored", sa.Integer(), nullable=False),
        sa.Column("skipped_budget", sa.Integer(), nullable=False),
        sa.Column("skipped_rate", sa.Integer(), nullable=False),
        sa.Column("missing", sa.Integer(), nullable=False),
        sa.Column("estimate_usd", sa.Float(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("binding"),
    )


def downgrade() -> None:
    op.drop_table("rescore_jobs")
