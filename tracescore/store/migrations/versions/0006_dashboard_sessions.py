"""Dashboard login sessions (issue 33): a random id per login, with an expiry, that a logout
ends on every replica (the cookie was a fixed HMAC of the key: no expiry, no revocation).

Revision ID: 0006_dashboard_sessions
Revises: 0005_logs_trace_event_index
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_dashboard_sessions"
down_revision = "0005_logs_trace_event_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dashboard_sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("key_fingerprint", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_dashboard_sessions_expires", "dashboard_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_dashboard_sessions_expires", table_name="dashboard_sessions")
    op.drop_table("dashboard_sessions")
