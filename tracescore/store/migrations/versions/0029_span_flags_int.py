"""PostgreSQL's span flags in 4 bytes, not 8 (#49).

A span's flags are OTLP's ``fixed32``; they were a ``bigint``. The column becomes an ``integer``
holding the signed integer of the same 32 bits (the span store converts both ways, and reads
the unsigned values of rows already stored alike), which leaves a span row's fixed-width columns
32 bytes, none of them padded: 31 bytes a four-span trace after the capacity benchmark. One
``ALTER COLUMN … TYPE`` rewrites the table and its index.

SQLite is left as it is: it stores an integer in the bytes its value needs, whatever its
column's declared type.

There is no downgrade: a database is never downgraded (``store/migrate.py``).

Revision ID: 0029_span_flags_int
Revises: 0028_trace_indexes
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0029_span_flags_int"
down_revision = "0028_trace_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    bind.exec_driver_sql(
        "ALTER TABLE spans ALTER COLUMN flags TYPE integer USING "
        "(CASE WHEN flags >= 2147483648 THEN flags - 4294967296 ELSE flags END)"
    )


def downgrade() -> None:
    raise NotImplementedError("0029_span_flags_int has no downgrade (see the module)")
