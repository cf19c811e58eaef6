"""Background task keeping PostgreSQL's trace queue table and ingest journal near their live
size (:func:`~tracescore.store.vacuum.vacuum_queue`): every state a trace passes through leaves a
dead row version, and every journal entry unpacked a dead request body, which autovacuum, on its
default thresholds, reclaims only once a fifth of the table is dead."""

from __future__ import annotations

from tracescore.backoff import Backoff, repeat
from tracescore.store import SpanStore
from tracescore.store.vacuum import vacuum_queue

CHECK_INTERVAL = 1.0
"""Seconds between two looks at the queue's dead rows (one read of the server's statistics): as
often as the server updates them."""


async def vacuum_queue_periodically(store: SpanStore) -> None:
    """Vacuum the queue and the journal whenever enough of them is dead; while the database is down, back off."""
    await repeat(
        lambda: vacuum_queue(store.engine), CHECK_INTERVAL, Backoff("queue vacuum: the database")
    )
