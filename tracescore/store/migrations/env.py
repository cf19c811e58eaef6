"""Alembic's entry point: runs revisions on the connection :mod:`tracescore.store.migrate` passes.

Only the online mode exists: tracescore applies revisions itself, at start or through
``tracescore db upgrade``, never by printing SQL for someone to run.
"""

from __future__ import annotations

from alembic import context

from tracescore.store.metadata import store_metadata

if context.is_offline_mode():
    raise RuntimeError("tracescore migrations run on a live connection (tracescore db upgrade)")

context.configure(
    connection=context.config.attributes["connection"],
    target_metadata=store_metadata(),
    # SQLite alters a table by copying it; batch operations do that, and work on PostgreSQL too.
    render_as_batch=True,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
