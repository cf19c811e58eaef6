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


def upgrade() -> None:
    op.rename_table("alert_leader", "leases")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE leases RENAME CONSTRAINT alert_leader_pkey TO leases_pkey")


def downgrade() -> None:
    op.rename_table("leases", "alert_leader")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE alert_leader RENAME CONSTRAINT leases_pkey TO alert_leader_pkey")
