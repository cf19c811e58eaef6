"""Leases named for what they are (#35): ``alert_leader`` becomes ``leases``.

The table held every single-instance task's lease (alert evaluation, retention, the OTLP feedback
scan), not only the alert evaluator's. Renamed in place, so a lease held while the release is
upgraded is still held afterwards; PostgreSQL's primary key constraint follows the name.

Revision ID: 0009_leases
Revises: 0008_alert_silences
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0009_leases"
down_revision = "0008_alert_silences"
branch_labels = None
depends_on = None


def _rename(old: str, new: str) -> None:
    op.rename_table(old, new)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE {new} RENAME CONSTRAINT {old}_pkey TO {new}_pkey")


def upgrade() -> None:
    _rename("alert_leader", "leases")


def downgrade() -> None:
    _rename("leases", "alert_leader")
