"""The failure-modes pages' data: the latest pass's groups, and one group's runs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import HTMLResponse

from tracescore.store import Database, connect
from tracescore.store.insights import failure_group, group_runs, list_groups

BARS = "▁▂▃▄▅▆▇█"
PAGE = 100


def sparkline(counts: list[int]) -> str:
    """A trend as one line of block characters, tallest for the largest count."""
    top = max(counts, default=0)
    return "".join(BARS[min(7, count * 8 // (top + 1))] if top else BARS[0] for count in counts)


def insights_page(engine: Database) -> dict[str, Any]:
    with connect(engine) as connection:
        groups, _ = list_groups(connection, 200, None)
    shown = [
        {
            **group,
            "new": group["first_seen"] >= group["last_seen"],
            "sparkline": sparkline(group["details"].get("trend", [])),
        }
        for group in groups
    ]
    return {"groups": shown}


def group_page(engine: Database, group_id: str, cursor: str | None) -> dict[str, Any] | None:
    """A group and a page of its runs; None for an unknown group. ValueError for a bad cursor."""
    with connect(engine) as connection:
        group = failure_group(connection, group_id)
        if group is None:
            return None
        runs, next_cursor = group_runs(connection, group_id, PAGE, cursor)
    shown = [
        {**run, "when": datetime.fromtimestamp(run["failed_at"], UTC).strftime("%Y-%m-%d %H:%M:%S")}
        for run in runs
    ]
    return {"group": group, "runs": shown, "next_cursor": next_cursor}


def insights_pages(engine: Database, page: Callable[..., HTMLResponse]) -> APIRouter:
    """``/ui/insights`` and ``/ui/insights/{id}``, rendered by ``page`` (the dashboard's)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/insights")
    def insights() -> HTMLResponse:
        return page("insights.html", **insights_page(engine))

    @router.get("/ui/insights/{group_id}")
    def insights_group(group_id: str, cursor: str | None = None) -> HTMLResponse:
        try:
            data = group_page(engine, group_id, cursor)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        if data is None:
            raise HTTPException(404, f"failure mode {group_id!r} not found")
        return page("insights_group.html", current="insights.html", **data)

    return router
