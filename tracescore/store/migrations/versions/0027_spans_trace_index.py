"""PostgreSQL's spans indexed by their trace id alone, without the (trace id, span id) key (#49).

The primary key held an entry for every span, 63 bytes each after the random inserts of a
busy collector: 252 bytes a four-span trace, a quarter of the spans' disk. ``ix_spans_trace``
keys the trace id only, and PostgreSQL keeps equal keys as one key and a list of rows: 91 bytes
a four-span trace. Every read of spans is by trace. The key's other use, skipping a retried span
already stored, is done by the insert itself (:mod:`tracescore.store.span_insert`).

SQLite is left as it is: its ``spans`` is the key's B-tree itself (``WITHOUT ROWID``), with no
index beside it.

There is no downgrade: a database is never downgraded (``store/migrate.py``).

Revision ID: 0027_spans_trace_index
Revises: 0026_aligned_spans
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0027_spans_trace_index"
down_revision = "0026_aligned_spans"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    bind.exec_driver_sql("CREATE INDEX ix_spans_trace ON spans (trace_id)")
    bind.exec_driver_sql("ALTER TABLE spans DROP CONSTRAINT spans_pkey")


def downgrade() -> None:
    raise NotImplementedError("0027_spans_trace_index has no downgrade (see the module)")
