"""``GET /api/sources``: what tracescore made of each (service, instrumentation scope) it reads.

The answer to a user's first question, "does it read my traces": per source, the spans and
traces the pipeline read, the runs rebuilt from them and how many carry content, the convention
that read them and, when they gave nothing to score, the reason in words to act on. The
dashboard's sources page lists the same rows (:func:`source_rows`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from tracescore.restapi import LEGACY, ApiVersion, WindowParam
from tracescore.store import Database
from tracescore.store.sources import list_sources
from tracescore.times import utc_text


def source_rows(engine: Database, service: str | None = None) -> list[dict[str, Any]]:
    """Every source as the API and the page show it: times as ISO 8601 in UTC, those with a
    reason first."""
    with engine.connect() as connection:
        found = list_sources(connection, service)
    return [
        asdict(source)
        | {
            "first_seen": utc_text(source.first_seen),
            "last_seen": utc_text(source.last_seen),
        }
        for source in found
    ]


def sources_router(engine: Database, version: ApiVersion = LEGACY) -> APIRouter:
    router = version.router("/sources", "sources")

    @router.get(
        "", summary="What tracescore made of each source it reads", responses=version.listing
    )
    async def sources(page: WindowParam, service: str | None = None) -> dict[str, Any]:
        """Per (service, instrumentation scope): spans and traces read, runs rebuilt, runs with
        content, the convention detected, and why the latest unread trace gave nothing
        (``reason`` a code, ``detail`` what to change); the sources with a reason first.
        Traces that no scorer binding sampled are not read, so not counted."""
        items, next_cursor = page.cut(await run_in_threadpool(source_rows, engine, service))
        return version.page(items, "sources", next_cursor)

    return router
