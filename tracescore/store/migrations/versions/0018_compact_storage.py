"""Compact score rows (#49): a code score's steps are computed when shown, not stored.

A code scorer's step results are a pure function of the run and the scorer's version, yet they
were two thirds of its row (657 bytes of ~1 KB: every step's result twice, in its step and in
``<step>_step_result``). Rows are now written with ``{"recompute": true}`` instead, beside what
no recomputation gives back (``input_cut``, ``cascade``, ``trigger``), and readers compute the
steps again from the trace (``tracescore/pipeline/recomputed_steps.py``). This converts the
stored rows the same way, with the writer's rule as stored rows show it: ``ok``, no judge model,
no input tokens, not a conversation's score, not ``consistency``'s (whose steps insights read in
SQL). Rows holding a kept key are rewritten one by one; the others by one UPDATE.

``ix_scores_conversation`` becomes partial (conversation scores only): nearly every score is a
run's, with a NULL there that the index held an entry for.

SQLite gives the freed pages back only on ``VACUUM`` (``tracescore vacuum``), PostgreSQL to its
own later rows (``VACUUM FULL`` returns them to the system). The downgrade restores the full
index; the steps left out stay left out (the readers of earlier releases show none for them).

Revision ID: 0018_compact_storage
Revises: 0017_failure_signatures
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_compact_storage"
down_revision = "0017_failure_signatures"
branch_labels = None
depends_on = None

KEPT = ("input_cut", "cascade", "trigger")
"""What a score's steps record besides step results (``score_rows.KEPT_STEPS`` then)."""
MARKER = {"recompute": True}

_SCORES = sa.table(
    "scores",
    sa.column("id", sa.String()),
    sa.column("steps", sa.JSON()),
    sa.column("status", sa.String()),
    sa.column("judge_model", sa.String()),
    sa.column("input_tokens", sa.Integer()),
    sa.column("conversation_id", sa.String()),
    sa.column("scorer_id", sa.String()),
)


def upgrade() -> None:
    c = _SCORES.c
    text = sa.cast(c.steps, sa.Text)
    code_scores = sa.and_(
        c.status == "ok",
        c.judge_model.is_(None),
        c.input_tokens == 0,
        c.conversation_id.is_(None),
        c.scorer_id != "consistency",
        c.steps.is_not(None),
        ~text.like('{"recompute"%'),
    )
    # A kept key's name in the text (a key, or a nested one, which the rewrite leaves out).
    keeps = sa.or_(*(text.like(f'%"{key}"%') for key in KEPT))
    bind = op.get_bind()
    rewritten = [
        {"row_id": row_id, "steps": {**MARKER, **{k: steps[k] for k in KEPT if k in steps}}}
        for row_id, steps in bind.execute(sa.select(c.id, c.steps).where(code_scores, keeps)).all()
        if isinstance(steps, dict)
    ]
    if rewritten:
        bind.execute(
            _SCORES.update()
            .where(c.id == sa.bindparam("row_id"))
            .values(steps=sa.bindparam("steps", type_=sa.JSON())),
            rewritten,
        )
    bind.execute(_SCORES.update().where(code_scores, ~keeps).values(steps=MARKER))
    op.drop_index("ix_scores_conversation", table_name="scores")
    op.create_index(
        "ix_scores_conversation",
        "scores",
        ["conversation_id"],
        sqlite_where=sa.text("conversation_id IS NOT NULL"),
        postgresql_where=sa.text("conversation_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_scores_conversation", table_name="scores")
    op.create_index("ix_scores_conversation", "scores", ["conversation_id"])
