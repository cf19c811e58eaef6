"""Leases in tables of their own (#49): ``trace_leases`` and ``conversation_leases``.

A claimed trace's or conversation's lease (its token, holder and expiry) was three columns of
its row, set by the claim and cleared by the completion: every claimed row grew by ~70 bytes
and shrank again, which left SQLite's pages split and a third empty, and made PostgreSQL's
claimed versions that much wider. Each queue now keeps its leases in a narrow table holding
only the rows claimed now (:mod:`tracescore.store.leased_queue`). The upgrade copies the
leases of the rows claimed at that moment, then drops the three columns (``ALTER TABLE … DROP
COLUMN``, on SQLite a rewrite of the table's rows in place).

There is no downgrade: a database is never downgraded (``store/migrate.py``).

Revision ID: 0025_queue_leases
Revises: 0023_compact_spans_traces
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025_queue_leases"
down_revision = "0024_score_series"
branch_labels = None
depends_on = None

_QUEUES = {
    "traces": ("trace_leases", "trace_id"),
    "conversations": ("conversation_leases", "conversation_id"),
}
_MOVED = ("lease_token", "lease_owner", "lease_expires")


def upgrade() -> None:
    bind = op.get_bind()
    op.create_table(
        "trace_leases",
        sa.Column("trace_id", sa.LargeBinary(), nullable=False),  # a HexId: the id's bytes
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.Column("owner", sa.Text(), nullable=False),
        sa.Column("expires", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("trace_id"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "conversation_leases",
        sa.Column("conversation_id", sa.String(length=200), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("expires", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("conversation_id"),
    )
    for table, (leases, key) in _QUEUES.items():
        bind.exec_driver_sql(
            f"INSERT INTO {leases} ({key}, token, owner, expires) "
            f"SELECT {key}, lease_token, COALESCE(lease_owner, ''), COALESCE(lease_expires, 0) "
            f"FROM {table} WHERE state = 'claimed' AND lease_token IS NOT NULL"
        )
        for column in _MOVED:
            bind.exec_driver_sql(f"ALTER TABLE {table} DROP COLUMN {column}")


def downgrade() -> None:
    raise NotImplementedError("0025_queue_leases has no downgrade (see the module)")
