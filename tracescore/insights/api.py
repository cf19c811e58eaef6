"""``GET /api/insights`` (the failure modes of the latest pass, largest first, paged),
``GET /api/insights/{id}/runs`` (a group's runs, latest failure first, paged) and
``POST /api/insights/passes`` (a pass now)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query
from fastapi.concurrency import run_in_threadpool

from tracescore.insights.task import PassRequests
from tracescore.restapi import LEGACY, ApiVersion, GroupId
from tracescore.store import Database, connect
from tracescore.store.insights import failure_group, group_runs, list_groups
from tracescore.times import utc_text, with_utc_text

MAX_PAGE = 500


def _group_out(group: Mapping[str, Any]) -> dict[str, Any]:
    """A group as ``/api/v1`` answers it: its times (and its window's) as RFC 3339 text."""
    details = group["details"]
    if isinstance(details, dict) and isinstance(details.get("window"), list):
        details = {**details, "window": [utc_text(moment) for moment in details["window"]]}
    return with_utc_text(group, "first_seen", "last_seen") | {"details": details}


def insights_router(
    engine: Database, version: ApiVersion = LEGACY, requests: PassRequests | None = None
) -> APIRouter:
    """The routes; ``requests``: this service's on-demand passes (None: passes are off)."""
    router = version.router("/insights", "insights")

    @router.get("", summary="Failure modes, largest first", responses=version.listing)
    def insights(
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
        cursor: str | None = None,
        include_gone: bool = False,
    ) -> dict[str, Any]:
        """The groups of failed runs the latest pass found: name, description, size, share of
        the failed runs, size at the pass before, first seen, agents, models, the scorers that
        flagged them, trend over the window, example runs and the signature its runs share
        (``details.signature``: feature -> share of its runs) and how much of its window the
        pass saw (``details.pass``: ``failed``, a lower bound when ``capped``, ``read``,
        ``clustered``, ``silhouette``). ``include_gone`` adds groups earlier passes found and
        the latest did not (size 0)."""
        try:
            with connect(engine) as connection:
                items, next_cursor = list_groups(connection, limit, cursor, include_gone)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        if not version.legacy:  # the alias keeps epoch seconds
            return version.page([_group_out(item) for item in items], "items", next_cursor)
        return version.page(items, "items", next_cursor)

    @router.get("/{group_id}/runs", summary="A failure mode's runs", responses=version.listing)
    def runs(
        group_id: Annotated[GroupId, Path()],
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """The runs of one group at the latest pass, latest failure first, each with its
        trace and span ids, agent, model, who flagged it, a summary line, when the run itself
        started (``started_at``), its failing answer and the scorers' reasons."""
        try:
            with connect(engine) as connection:
                if failure_group(connection, group_id) is None:
                    raise HTTPException(404, f"failure mode {group_id!r} not found")
                items, next_cursor = group_runs(connection, group_id, limit, cursor)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        if not version.legacy:  # the alias keeps epoch seconds
            rows = [with_utc_text(item, "failed_at", "started_at") for item in items]
            return version.page(rows, "items", next_cursor)
        return version.page(items, "items", next_cursor)

    @router.post(
        "/passes",
        summary="Run a pass now",
        status_code=202,
        responses={
            202: {"description": "the pass is due: it starts here now, or on another replica"},
            409: {"description": "a pass is running, or insights.enabled is false"},
        },
    )
    async def request_pass() -> dict[str, Any]:
        """Start a pass now instead of at its time (the next scheduled one then follows it by
        ``insights.interval``). 202: the pass is due, and starts on this replica at once (or
        on another within a minute); its groups replace the latest at its end
        (``GET …/insights``). 409 while a pass runs (its groups come soon), or with
        ``insights.enabled: false``."""
        if requests is None:
            raise HTTPException(409, "insights passes are off here (insights.enabled: false)")
        if not await run_in_threadpool(requests.due_now, time.time()):
            raise HTTPException(409, "an insights pass is running: its groups come at its end")
        requests.wake.set()
        return {"status": "accepted"}

    return router
