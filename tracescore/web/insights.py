"""The failure-modes pages' data: the latest pass's groups (or, before any, what the page waits
for), one group's signature and runs, and the form that asks for a pass now."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tracescore.insights.config import InsightsConfig
from tracescore.insights.task import LEASE_NAME, PassRequests
from tracescore.pipeline.bindings import has_pass_threshold
from tracescore.pipeline.config import ScorerBinding
from tracescore.store import Database, connect
from tracescore.store.insights import failure_group, group_runs, list_groups
from tracescore.store.leases import lease_expiry

BARS = "▁▂▃▄▅▆▇█"
PAGE = 100
ASKED = {
    "started": "A pass is due now: its groups replace these when it ends (reload in a minute).",
    "running": "A pass is running already: its groups come at its end.",
    "off": "Passes are off here (insights.enabled: false): run `tracescore insights` instead.",
}
"""What the page says after its button was pressed (``?asked=<key>``)."""


def sparkline(counts: list[int]) -> str:
    """A trend as one line of block characters, tallest for the largest count."""
    top = max(counts, default=0)
    return "".join(BARS[min(7, count * 8 // (top + 1))] if top else BARS[0] for count in counts)


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "–"
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")


def failed_means(config: InsightsConfig, scorers: Sequence[ScorerBinding]) -> list[str]:
    """What counts as a failed run here, in words, from the ``insights.failed`` settings and
    the bindings' pass thresholds (a binding without one labels nothing ``fail``)."""
    failed = config.failed
    means = []
    if failed.below_threshold:
        held = [binding.name for binding in scorers if has_pass_threshold(binding)]
        means.append(
            f"a score below its binding's pass threshold ({', '.join(held)})"
            if held
            else "a score below its binding's pass threshold — but no binding has one: bind "
            "a scorer that states one (consistency) or give a binding a threshold"
        )
    if failed.scorer_errors:
        means.append("a scoring that failed (stored as error)")
    if failed.feedback_labels:
        means.append(f"human feedback labelled {', '.join(failed.feedback_labels)}")
    if failed.feedback_below is not None:
        means.append(f"human feedback whose value is below {failed.feedback_below:g}")
    return means


def sample_note(sampled: dict[str, Any] | None) -> str | None:
    """What the latest pass read of its window, in words, when it read or clustered only a
    sample (:func:`~tracescore.insights.passes.sampling`); None when it saw every run (or a
    pass stored before passes said)."""
    if not sampled:
        return None
    read, failed = sampled["read"], sampled["failed"]
    said = []
    if sampled["capped"]:
        of = f"at least {failed:,}" if failed > read else f"more than {read:,}"
        said.append(
            f"This pass read a sample: {read:,} of {of} failed runs in its window "
            "(insights.max_runs), the same runs for the same window."
        )
    clustered, silhouette = sampled["clustered"], sampled["silhouette"]
    if clustered < read:
        said.append(
            f"Its groups were found among {clustered:,} of the runs it read, spread evenly "
            "(insights.cluster_sample); the others joined the nearest group, or none."
        )
    if 0 < silhouette < clustered:
        said.append(f"The distance that separates groups was chosen on {silhouette:,} of them.")
    return " ".join(said) or None


def insights_page(
    engine: Database, config: InsightsConfig, scorers: Sequence[ScorerBinding], asked: str | None
) -> dict[str, Any]:
    with connect(engine) as connection:
        groups, _ = list_groups(connection, 200, None)
        next_pass = lease_expiry(connection, LEASE_NAME)
    shown = [
        {
            **group,
            "new": group["first_seen"] >= group["last_seen"],
            "sparkline": sparkline(group["details"].get("trend", [])),
        }
        for group in groups
    ]
    now = time.time()
    return {
        "groups": shown,
        "failed_means": failed_means(config, scorers),
        "enabled": config.enabled,
        "next_pass": "now" if next_pass is None or next_pass <= now else _when(next_pass),
        "interval_minutes": round(config.interval / 60),
        "window_hours": round(config.window / 3600, 1),
        "asked": ASKED.get(asked or ""),
        "sample_note": sample_note(groups[0]["details"].get("pass")) if groups else None,
    }


def _signature(details: dict[str, Any]) -> list[tuple[str, str, int]]:
    """A group's signature as (kind, value, percent of its runs) rows."""
    rows = []
    for feature, share in (details.get("signature") or {}).items():
        kind, _, value = str(feature).partition(":")
        rows.append((kind.replace("_", " "), value, round(float(share) * 100)))
    return rows


def group_page(engine: Database, group_id: str, cursor: str | None) -> dict[str, Any] | None:
    """A group, its signature and a page of its runs; None for an unknown group. ValueError for
    a bad cursor."""
    with connect(engine) as connection:
        group = failure_group(connection, group_id)
        if group is None:
            return None
        runs, next_cursor = group_runs(connection, group_id, PAGE, cursor)
    shown = [
        {
            **run,
            "ran": _when(run["started_at"] if run["started_at"] is not None else run["failed_at"]),
            "flagged": _when(run["failed_at"]),
        }
        for run in runs
    ]
    return {
        "group": group,
        "signature": _signature(group["details"]),
        "runs": shown,
        "next_cursor": next_cursor,
    }


def insights_pages(
    engine: Database,
    page: Callable[..., HTMLResponse],
    config: InsightsConfig,
    scorers: Sequence[ScorerBinding],
    requests: PassRequests | None,
) -> APIRouter:
    """``/ui/insights``, ``/ui/insights/{id}`` (rendered by ``page``, the dashboard's) and the
    form asking for a pass now (``requests``: this service's, None when passes are off)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/insights")
    def insights(asked: str | None = None) -> HTMLResponse:
        return page("insights.html", **insights_page(engine, config, scorers, asked))

    @router.post("/ui/insights/passes")
    async def request_pass() -> Response:
        if requests is None:
            return RedirectResponse("/ui/insights?asked=off", 303)
        if not await run_in_threadpool(requests.due_now, time.time()):
            return RedirectResponse("/ui/insights?asked=running", 303)
        requests.wake.set()
        return RedirectResponse("/ui/insights?asked=started", 303)

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
