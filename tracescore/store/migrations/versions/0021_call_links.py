"""Links between model calls across traces (#45): ``call_links``.

A loop traced one trace per model call is read in its answering call's trace with its steps'
traces; the keys that find those steps, and which traces an answering trace was read with, are
kept here so that another scoring process, a restart, a re-score and the trace page find them
(:mod:`tracescore.store.call_links`). Written only for such traces: an ordinary one adds no row.

Revision ID: 0021_call_links
Revises: 0020_compact_scores
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_call_links"
down_revision = "0020_compact_scores"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "call_links",
        sa.Column("key", sa.LargeBinary(), nullable=False),
        sa.Column("trace_id", sa.LargeBinary(), nullable=False),  # a HexId: the id's bytes
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key", "trace_id"),
    )
    op.create_index("ix_call_links_created_at", "call_links", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_call_links_created_at", table_name="call_links")
    op.drop_table("call_links")
