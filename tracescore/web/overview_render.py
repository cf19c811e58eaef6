"""The overview page's HTML (its data from :mod:`tracescore.web.overview`), built where :mod:`tracescore.web.readers` runs it: in a reader
process, away from the event loop that acknowledges ingest.

Open tabs re-fetch the overview every few seconds under steady ingest; even shared between
tabs (one render per view and live version), a render is tens of milliseconds of queries and
templating, and in the service's threads it held the GIL its event loop needed to answer
``/v1/traces``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import HTTPException

from tracescore.monitor.config import AlertRule
from tracescore.settings import parse_duration
from tracescore.store import Database
from tracescore.web import overview
from tracescore.web.cache import ExpiringCache
from tracescore.web.rendering import render
from tracescore.web.timerange import (
    MOMENT_PATTERN,
    PRESETS,
    SPLITS,
    ViewState,
    Window,
    parse_moment,
)

VIEW_PARAMETERS = (
    "window",
    "since",
    "until",
    "bucket",
    "split",
    "binding",
    "scorer",
    "agent",
    "model",
)


def moment_param(value: str, name: str) -> datetime:
    try:
        return parse_moment(value)
    except ValueError:
        raise HTTPException(
            422, f"{name}: an ISO date and time such as 2026-05-04T12:00Z"
        ) from None


def duration_param(value: str, name: str) -> timedelta:
    try:
        return timedelta(seconds=parse_duration(value))
    except ValueError as exc:
        raise HTTPException(422, f"{name}: {exc}") from None


def overview_html(
    engine: Database,
    bindings: list[str],
    rules: list[AlertRule],
    aggregates: ExpiringCache,
    context: dict[str, Any],
    params: dict[str, str],
) -> str:
    """The overview for the query ``params`` (of :data:`VIEW_PARAMETERS`); HTTPException 422
    for a view that cannot be shown."""
    split = params.get("split")
    if split and split not in SPLITS:
        raise HTTPException(422, f"split: one of {', '.join(SPLITS)}")
    view = ViewState(**{name: params.get(name) or None for name in VIEW_PARAMETERS})
    now = datetime.now(UTC)
    size = duration_param(view.bucket, "bucket") if view.bucket else None
    active = None
    try:
        if view.since:
            end = moment_param(view.until, "until") if view.until else now
            span = Window.between(moment_param(view.since, "since"), end, size)
        else:
            active = view.window or overview.default_window(engine, aggregates, now)
            span = Window.ending_now(duration_param(active, "window"), size, now)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    data = overview.overview(engine, bindings, span, view, aggregates, rules)
    return render(
        "overview.html",
        current="overview.html",
        **context,
        **data,
        view=view,
        presets=PRESETS,
        active=active,
        chosen=view.window is None and not view.since,
        splits=SPLITS,
        moment_pattern=MOMENT_PATTERN,
    )
