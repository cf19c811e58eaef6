"""Baseline: the schema of the first versioned release (commit c2edaf4).

Revision ID: 0001_baseline
Revises:
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from tracescore.store.migrations.baseline import create

revision = "0001_baseline"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create(op.get_bind())
