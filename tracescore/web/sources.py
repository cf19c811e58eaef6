"""``GET /api/sources``: what tracescore made of each (service, instrumentation scope) it reads.

The answer to a user's first question, "does it read my traces": per source, the spans and
traces the pipeline read, the runs rebuilt from them and how many carry content, the convention
that read them and, when they gave nothing to score, the reason in words to act on. The
dashboard's sources page lists the same rows (:func:`source_rows`).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from tracescore.restapi import LEGACY, ApiVersion
from tracescore.store import Database
from tracescore.store.sources import list_sources


def source_rows(engine: Database, service: str | None = None) -> list[dict[str, Any]]:
    """Every source as the API and the page show it: times as ISO 8601 in UTC, those with a
    reason first."""
    with engine.connect() as connection:
        found = list_sources(connection, service)
    return [
        asdict(source)
        | {
            "first_seen": _iso(source.first_seen),
            "last_seen": _iso(source.last_seen),
        }
        for source in found
    ]


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def sources_router(engine: Database, version: ApiVersion = LEGACY) -> APIRouter:
    router = APIRouter(
        prefix=f"{version.prefix}/sources", tags=["sources"], deprecated=version.legacy or None
    )

    @router.get(
        "", summary="What tracescore made of each source it reads", responses=version.listing
    )
    async def sources(service: str | None = None) -> dict[str, Any]:
        """Per (service, instrumentation scope): spans and traces read, runs rebuilt, runs with
        content, the convention detected, and why the latest unread trace gave nothing
        (``reason`` a code, ``detail`` what to change); the sources with a reason first.
        Traces that no scorer binding sampled are not read, so not counted."""
        return version.page(await run_in_threadpool(source_rows, engine, service), "sources")

    return router
