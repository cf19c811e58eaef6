"""Every scoring of a conversation kept (#37): ``scores.conversation_turns``.

A conversation scored again after it went on used to replace its score (one row per
conversation and binding). Each scoring is now a row of its own, labelled with the turns it
covered. The rows of earlier releases are labelled too: a conversation's score hangs on its
last turn's trace, so the turns it covered are those that started no later than that turn;
where that turn is gone (retention), the conversation's turn count stands in.

Revision ID: 0011_conversation_score_turns
Revises: 0010_failure_modes
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_conversation_score_turns"
down_revision = "0010_failure_modes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("scores", sa.Column("conversation_turns", sa.Integer(), nullable=True))
    # The turn each score hangs on is the conversation_turns row of its trace ("anchor").
    op.execute(
        "UPDATE scores SET conversation_turns = ("
        "SELECT count(*) FROM conversation_turns t "
        "WHERE t.conversation_id = scores.conversation_id AND t.start_time_ns <= ("
        "SELECT a.start_time_ns FROM conversation_turns a "
        "WHERE a.conversation_id = scores.conversation_id AND a.trace_id = scores.trace_id)) "
        "WHERE conversation_id IS NOT NULL AND EXISTS ("
        "SELECT 1 FROM conversation_turns a "
        "WHERE a.conversation_id = scores.conversation_id AND a.trace_id = scores.trace_id)"
    )
    op.execute(
        "UPDATE scores SET conversation_turns = ("
        "SELECT c.turn_count FROM conversations c "
        "WHERE c.conversation_id = scores.conversation_id) "
        "WHERE conversation_id IS NOT NULL AND conversation_turns IS NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("scores") as batch:
        batch.drop_column("conversation_turns")
