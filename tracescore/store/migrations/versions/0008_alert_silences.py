"""Alert silences and acknowledgements (#34): the ``alert_silences`` table.

Revision ID: 0008_alert_silences
Revises: 0007_sources
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_alert_silences"
down_revision = "0007_sources"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alert_silences",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("rule", sa.String(100), nullable=False),
        sa.Column("segment", sa.JSON(), nullable=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_alert_silences_expires_at", "alert_silences", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_alert_silences_expires_at", table_name="alert_silences")
    op.drop_table("alert_silences")
