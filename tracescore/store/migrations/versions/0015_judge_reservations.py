"""Judge caps that hold under concurrency (#46, item 4): ``judge_reservations``.

A binding with ``limits`` reserves each run before its judge is called and settles it with the
real cost after (:mod:`tracescore.store.reservations`), in place of counting the ``scores``
table, which saw a run only once it was stored.

Revision ID: 0015_judge_reservations
Revises: 0014_score_label_length
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_judge_reservations"
down_revision = "0014_score_label_length"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judge_reservations",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("binding", sa.String(length=100), nullable=False),
        sa.Column("taken_at", sa.Float(), nullable=False),
        sa.Column("estimate_usd", sa.Float(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("busy_until", sa.Float(), nullable=False),
        sa.Column("carried", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_judge_reservations_binding_taken", "judge_reservations", ["binding", "taken_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_judge_reservations_binding_taken", table_name="judge_reservations")
    op.drop_table("judge_reservations")
