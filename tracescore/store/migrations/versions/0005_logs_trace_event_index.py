"""Logs indexed by (trace, event name): counting a trace's log records less its evaluation
records (what every ingest write does per trace it touches) reads the index alone again, as
counting them all did, instead of every record of the trace.

Revision ID: 0005_logs_trace_event_index
Revises: 0004_conversations
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

revision = "0005_logs_trace_event_index"
down_revision = "0004_conversations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_logs_trace_event", "logs", ["trace_id", "event_name"])
    op.drop_index("ix_logs_trace_id", table_name="logs")


def downgrade() -> None:
    op.create_index("ix_logs_trace_id", "logs", ["trace_id"])
    op.drop_index("ix_logs_trace_event", table_name="logs")
