"""One text form for every stored time on SQLite (#46): ``YYYY-MM-DD HH:MM:SS.ffffff``.

SQLite keeps a datetime as text and compares it as text. Score rows and sampling decisions were
written by the store's bulk path, which left their times to the driver: ``2026-03-01
00:00:00+00:00`` (and ``….000123+00:00``), where every query binds SQLAlchemy's ``2026-03-01
00:00:00.000000``. The two forms of one instant do not compare equal, and ``+`` sorts before
``.``: a page of ``/api/v1/scores`` whose last row shared its time with the next rows skipped or
repeated them, and a range cut exactly at a stored time took or left the wrong rows. New rows
are written in SQLAlchemy's form; this rewrites the rows of earlier releases into it. The
driver only ever wrote UTC (``+00:00``), so the rewrite is a cut and, for a whole second, the
missing fraction. PostgreSQL stores ``timestamptz`` and has nothing to rewrite.

Revision ID: 0015_sqlite_time_text
Revises: 0014_score_label_length
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0015_sqlite_time_text"
down_revision = "0014_score_label_length"
branch_labels = None
depends_on = None

REWRITTEN = {"scores": ("created_at", "updated_at"), "sampling_decisions": ("created_at",)}
"""The time columns the bulk path wrote, by table."""


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table, columns in REWRITTEN.items():
        for column in columns:
            # 'YYYY-MM-DD HH:MM:SS+00:00' (25 characters) or 'YYYY-MM-DD HH:MM:SS.ffffff+00:00'
            op.execute(
                f"UPDATE {table} SET {column} = CASE length({column}) "
                f"WHEN 25 THEN substr({column}, 1, 19) || '.000000' "
                f"ELSE substr({column}, 1, 26) END "
                f"WHERE {column} LIKE '%+00:00'"
            )


def downgrade() -> None:
    """Nothing to undo: the rewritten text reads back as the same instants."""
