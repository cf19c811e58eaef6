"""Conversations (#23): the ``conversations`` queue, the ``conversation_turns`` table and the
conversation id of a conversation's score.

Revision ID: 0004_conversations
Revises: 0003_retention_indexes
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_conversations"
down_revision = "0003_retention_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("conversation_id", sa.String(200), primary_key=True),
        sa.Column("service_name", sa.String(200), nullable=True),
        sa.Column("agent_name", sa.String(200), nullable=True),
        sa.Column("turn_count", sa.BigInteger(), nullable=False),
        sa.Column("first_turn_ns", sa.BigInteger(), nullable=True),
        sa.Column("last_turn_ns", sa.BigInteger(), nullable=True),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("first_seen", sa.Float(), nullable=False),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.Column("pending_since", sa.Float(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("lease_token", sa.String(32), nullable=True),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_expires", sa.Float(), nullable=True),
        sa.Column("claimed_generation", sa.BigInteger(), nullable=True),
        sa.Column("scored_generation", sa.BigInteger(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.String(2000), nullable=True),
    )
    op.create_index("ix_conversations_state_last_seen", "conversations", ["state", "last_seen"])
    op.create_index(
        "ix_conversations_state_pending_since", "conversations", ["state", "pending_since"]
    )
    op.create_index("ix_conversations_last_turn", "conversations", ["last_turn_ns"])
    op.create_table(
        "conversation_turns",
        sa.Column("conversation_id", sa.String(200), primary_key=True),
        sa.Column("trace_id", sa.String(32), primary_key=True),
        sa.Column("span_id", sa.String(16), nullable=False),
        sa.Column("start_time_ns", sa.BigInteger(), nullable=False),
        sa.Column("user_text", sa.String(4000), nullable=False),
        sa.Column("answer_text", sa.String(4000), nullable=False),
        sa.Column("agent_name", sa.String(200), nullable=True),
        sa.Column("service_name", sa.String(200), nullable=True),
        sa.Column("recorded_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_conversation_turns_trace", "conversation_turns", ["trace_id"])
    op.add_column("scores", sa.Column("conversation_id", sa.String(200), nullable=True))
    op.create_index("ix_scores_conversation", "scores", ["conversation_id"])


def downgrade() -> None:
    op.drop_index("ix_scores_conversation", table_name="scores")
    with op.batch_alter_table("scores") as batch:
        batch.drop_column("conversation_id")
    op.drop_index("ix_conversation_turns_trace", table_name="conversation_turns")
    op.drop_table("conversation_turns")
    op.drop_index("ix_conversations_last_turn", table_name="conversations")
    op.drop_index("ix_conversations_state_pending_since", table_name="conversations")
    op.drop_index("ix_conversations_state_last_seen", table_name="conversations")
    op.drop_table("conversations")
