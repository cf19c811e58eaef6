"""Ingest administration over HTTP: the journal's quarantined requests.

A request that was acknowledged but cannot be stored (see :func:`tracescore.ingest.unpack.unpack`)
is set aside rather than retried for ever; this is where an operator finds it, with the reason,
and puts it back in line once the cause is fixed (a new release, a database setting).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.concurrency import run_in_threadpool

from tracescore.restapi import LEGACY, ApiVersion, RowId, WindowParam
from tracescore.store import SpanStore
from tracescore.times import with_utc_text


def ingest_router(store: SpanStore, version: ApiVersion = LEGACY) -> APIRouter:
    router = version.router("/ingest", "ingest")

    @router.get("/quarantine", summary="Quarantined export requests", responses=version.listing)
    async def quarantined(page: WindowParam) -> dict[str, Any]:
        """Acknowledged export requests that could not be stored, oldest first."""
        entries = await run_in_threadpool(store.journal.quarantined)
        rows = [asdict(entry) for entry in entries]
        if not version.legacy:  # the aliases keep epoch seconds
            rows = [with_utc_text(row, "received_at") for row in rows]
        items, next_cursor = page.cut(rows)
        return version.page(items, "entries", next_cursor)

    @router.post("/quarantine/{seq}/requeue", summary="Put a quarantined request back in line")
    async def requeue(seq: RowId) -> dict[str, Any]:
        """Put a quarantined request back in line: the unpackers try to store it again (and
        quarantine it again if it still fails)."""
        if not await run_in_threadpool(store.journal.requeue, seq):
            raise HTTPException(404, f"no quarantined journal entry {seq}")
        return {"requeued": seq}

    return router
