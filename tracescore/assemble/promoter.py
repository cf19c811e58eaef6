"""Background task keeping trace states current even when no worker is claiming.

Claiming already promotes ready traces first (see ``SpanStore.claim_ready``); this loop exists
so the read API and dashboards show ``ready`` on time, and costs one indexed UPDATE per tick.
"""

from __future__ import annotations

import asyncio
import logging

from tracescore.store import SpanStore

log = logging.getLogger(__name__)


def promote_interval(idle_timeout: float) -> float:
    """Tick often enough that readiness lags the idle timeout by at most half of it (≤ 1 s)."""
    return max(0.05, min(1.0, idle_timeout / 2))


async def promote_periodically(store: SpanStore, interval: float) -> None:
    while True:
        try:
            await asyncio.to_thread(store.promote_ready)
        except Exception:  # the database may be briefly unreachable; keep trying
            log.exception("promoting ready traces failed")
        await asyncio.sleep(interval)
