"""Scores labelled by what failed (#47): ``scores.label`` holds up to 100 characters.

The ``consistency`` scorer labels a run with the checks that failed on it, joined by ``+``
(``grounding+contradiction``; all seven are 67 characters), where labels were ``pass`` or
``fail``: 20 characters refused them on PostgreSQL.

Revision ID: 0014_score_label_length
Revises: 0013_rescore_jobs
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_score_label_length"
down_revision = "0013_rescore_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("scores") as batch:
        batch.alter_column("label", existing_type=sa.String(length=20), type_=sa.String(length=100))


def downgrade() -> None:
    with op.batch_alter_table("scores") as batch:
        batch.alter_column("label", existing_type=sa.String(length=100), type_=sa.String(length=20))
