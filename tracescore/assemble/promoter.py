"""Background task keeping trace states current even when no worker is claiming.

Claiming already promotes ready traces first (see :meth:`TraceQueue.claim`); this loop exists
so the read API and dashboards show ``ready`` on time, and costs one indexed UPDATE per tick.
"""

from __future__ import annotations

from tracescore.backoff import Backoff, repeat
from tracescore.store import SpanStore


def promote_interval(idle_timeout: float) -> float:
    """Tick often enough that readiness lags the idle timeout by at most half of it (≤ 1 s)."""
    return max(0.05, min(1.0, idle_timeout / 2))


async def promote_periodically(store: SpanStore, interval: float) -> None:
    """Promote every ``interval`` seconds; while the database is down, back off (1 s doubling
    to 30 s) and log when that starts and ends, not a traceback per tick."""
    await repeat(store.queue.promote, interval, Backoff("promoter: the database"))
