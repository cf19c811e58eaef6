"""Failure signatures (#48): what a failed run's trace showed beyond its text, when the run
itself started, and its answer and reasons on the group's page.

``failure_run_texts`` gains ``signals`` (the answer repeats the system prompt, states an
identifier found nowhere in the run) and ``started_at``; ``failure_memberships`` gains
``started_at``, ``answer`` and ``reasons``. Rows of earlier passes keep nulls: the next pass
that reads their runs again fills what it can.

Revision ID: 0017_failure_signatures
Revises: 0016_judge_reservations
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_failure_signatures"
down_revision = "0016_judge_reservations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("failure_run_texts") as batch:
        batch.add_column(sa.Column("signals", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("started_at", sa.Float(), nullable=True))
    with op.batch_alter_table("failure_memberships") as batch:
        batch.add_column(sa.Column("started_at", sa.Float(), nullable=True))
        batch.add_column(sa.Column("answer", sa.Text(), nullable=True))
        batch.add_column(sa.Column("reasons", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("failure_memberships") as batch:
        batch.drop_column("reasons")
        batch.drop_column("answer")
        batch.drop_column("started_at")
    with op.batch_alter_table("failure_run_texts") as batch:
        batch.drop_column("started_at")
        batch.drop_column("signals")
