"""The dashboard: HTML pages served by the collector at ``/`` and under ``/ui/``.

Pages are rendered on the server (Jinja2 with autoescaping: trace content is untrusted and
is only ever shown as text) and kept live by a small script of our own that polls
``/ui/live`` and re-fetches the page when a score arrives. Responses carry a strict
Content-Security-Policy, so even markup that slipped through could neither run inline
script nor load anything from elsewhere.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from tracescore.auth import client_address
from tracescore.config import Config
from tracescore.settings import parse_duration
from tracescore.store import SpanStore, score_reads
from tracescore.store.score_reads import ScoreFilter
from tracescore.web import alerting
from tracescore.web import overview as overview_page
from tracescore.web.auth import COOKIE_NAME, DashboardKeys
from tracescore.web.cache import ExpiringCache
from tracescore.web.compare import compare_page
from tracescore.web.conversations import conversation_pages
from tracescore.web.readers import ReadProcesses
from tracescore.web.rendering import render
from tracescore.web.review import review_router
from tracescore.web.runs import chart_around, runs_page
from tracescore.web.silencing import DURATIONS, silence_forms
from tracescore.web.sources import source_rows
from tracescore.web.timerange import PRESETS, SPLITS, ViewState, Window, parse_moment

_TRACE_ID = re.compile(r"^[0-9a-fA-F]{32}$")
STATIC_FILES = {"style.css": "text/css", "live.js": "text/javascript"}
LIVE_POLL_MS = 1000
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("current", template)  # the navigation marks the page it is on
    return HTMLResponse(render(template, **context), status_code=status, headers=SECURITY_HEADERS)


def _local_path(target: str | None) -> str:
    """Only same-site paths may be redirected to after login (no ``//host`` or ``/\\host``)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    return target


def _moment(value: str, name: str) -> datetime:
    try:
        return parse_moment(value)
    except ValueError:
        raise HTTPException(
            422, f"{name}: an ISO date and time such as 2026-05-04T12:00Z"
        ) from None


def _duration(value: str, name: str) -> timedelta:
    try:
        return timedelta(seconds=parse_duration(value))
    except ValueError as exc:
        raise HTTPException(422, f"{name}: {exc}") from None


VIEW_PARAMETERS = ("window", "since", "until", "bucket", "split", "binding", "scorer", "agent",
                   "model")
OVERVIEW_TTL = 2.0
"""Seconds a rendered overview is shared by the viewers asking for it at the same live version."""


def web_router(
    config: Config, store: SpanStore, keys: DashboardKeys, reads: ReadProcesses
) -> APIRouter:
    """The pages; ``reads`` builds trace pages in reader processes, off the ingest path."""
    router = APIRouter(include_in_schema=False)
    bindings = [binding.name for binding in config.scorers]
    rules = list(config.alerts.rules)
    aggregates = ExpiringCache()
    overviews = ExpiringCache(size=64)

    def signed_in_page(request: Request) -> None:
        """Pages send a browser without a session to the login form, and back afterwards."""
        refusal = keys.refusal(request)
        if refusal is not None and refusal.status_code == 429:
            raise refusal
        if refusal is not None:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            raise HTTPException(
                303, headers={"Location": f"/ui/login?next={quote(target, safe='')}"}
            )

    common = {"auth": keys.enabled, "poll_ms": LIVE_POLL_MS}

    @router.get("/", dependencies=[Depends(signed_in_page)])
    def overview(request: Request) -> HTMLResponse:
        """Open tabs re-fetch the overview whenever the live version moves: each version of
        each view is rendered once and shared, for at most :data:`OVERVIEW_TTL` seconds (the
        alerts on it are read per render)."""
        with store.engine.connect() as connection:
            version = score_reads.live_version(connection)
        view = {name: request.query_params[name] for name in VIEW_PARAMETERS
                if name in request.query_params}  # fmt: skip
        shown = overviews.get(
            (tuple(sorted(view.items())), version), OVERVIEW_TTL, lambda: render_overview(**view)
        )
        return HTMLResponse(shown.body, shown.status_code, headers=SECURITY_HEADERS)

    def render_overview(
        window: str | None = None,
        since: str | None = None,
        until: str | None = None,
        bucket: str | None = None,
        split: str | None = None,
        binding: str | None = None,
        scorer: str | None = None,
        agent: str | None = None,
        model: str | None = None,
    ) -> HTMLResponse:
        if split and split not in SPLITS:
            raise HTTPException(422, f"split: one of {', '.join(SPLITS)}")
        view = ViewState(
            window=window or None, since=since or None, until=until or None,
            bucket=bucket or None, split=split or None, binding=binding or None,
            scorer=scorer or None, agent=agent or None, model=model or None,
        )
        now = datetime.now(UTC)
        size = _duration(view.bucket, "bucket") if view.bucket else None
        active = None
        try:
            if view.since:
                end = _moment(view.until, "until") if view.until else now
                span = Window.between(_moment(view.since, "since"), end, size)
            else:
                active = view.window or overview_page.default_window(store.engine, aggregates, now)
                span = Window.ending_now(_duration(active, "window"), size, now)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        data = overview_page.overview(store.engine, bindings, span, view, aggregates, rules)
        return _page(
            "overview.html", **common, **data, view=view, presets=PRESETS, active=active,
            chosen=view.window is None and not view.since, splits=SPLITS,
        )

    def alerts_page(rule: str | None, status: int = 200, error: str | None = None) -> HTMLResponse:
        with store.engine.connect() as connection:
            version = score_reads.live_version(connection)
            data = alerting.alerts_page(connection, rules, datetime.now(UTC), rule)
        return _page("alerts.html", status, **common, **data, version=version, error=error,
                     durations=DURATIONS)  # fmt: skip

    @router.get("/ui/alerts", dependencies=[Depends(signed_in_page)])
    def alerts(rule: str | None = None) -> HTMLResponse:
        return alerts_page(rule or None)

    router.include_router(
        silence_forms(store.engine, lambda status, error: alerts_page(None, status, error)),
        dependencies=[Depends(signed_in_page)],
    )

    @router.get("/ui/sources", dependencies=[Depends(signed_in_page)])
    def sources() -> HTMLResponse:
        return _page("sources.html", **common, sources=source_rows(store.engine))

    @router.get("/ui/runs", dependencies=[Depends(signed_in_page)])
    def runs(
        since: str,
        until: str | None = None,
        binding: str | None = None,
        scorer: str | None = None,
        version: str | None = None,
        agent: str | None = None,
        model: str | None = None,
        service: str | None = None,
    ) -> HTMLResponse:
        start = _moment(since, "since")
        end = _moment(until, "until") if until else datetime.now(UTC)
        where = ScoreFilter(
            binding=binding or None, scorer=scorer or None, scorer_version=version or None,
            agent=agent or None, model=model or None, service=service or None,
            since=start, until=end,
        )
        data = runs_page(store.engine, where)
        return _page("runs.html", **common, **data, where=where,
                     chart_url=chart_around(where, datetime.now(UTC)))

    @router.get("/ui/compare", dependencies=[Depends(signed_in_page)])
    def compare(
        binding: str | None = None,
        a: str | None = None,
        b: str | None = None,
        threshold: str | None = None,
    ) -> HTMLResponse:
        """``threshold`` is text: the form sends it empty when the stored labels are meant."""
        try:
            cut = float(threshold) if threshold else None
        except ValueError:
            raise HTTPException(422, "threshold: a number") from None
        data = compare_page(store.engine, binding or None, a or None, b or None, cut)
        return _page("compare.html", **common, **data)

    @router.get("/ui/traces/{trace_id}", dependencies=[Depends(signed_in_page)])
    async def trace(trace_id: str) -> HTMLResponse:
        if not _TRACE_ID.match(trace_id):
            raise HTTPException(400, "trace id must be 32 hex characters")
        shown = await reads.trace_page(trace_id.lower(), common)
        if shown is None:
            return _page("missing.html", 404, **common, trace_id=trace_id.lower())
        return HTMLResponse(shown, headers=SECURITY_HEADERS)

    @router.get("/ui/live", dependencies=[Depends(keys.require)])
    def live(trace: str | None = None) -> JSONResponse:
        """What pages poll: a value that changes when there is something new (for ``trace``:
        a new or rescored score of that trace)."""
        if trace is not None and not _TRACE_ID.match(trace):
            raise HTTPException(400, "trace id must be 32 hex characters")
        with store.engine.connect() as connection:
            if trace is None:
                version = score_reads.live_version(connection)
            else:
                version = score_reads.trace_version(connection, trace.lower())
        return JSONResponse({"version": version}, headers={"Cache-Control": "no-store"})

    @router.get("/ui/login")
    def login_form(next: str = "/") -> HTMLResponse:
        return _page("login.html", **common, next=_local_path(next), failed=False)

    @router.post("/ui/login")
    async def login(request: Request) -> Response:
        """The form posts the key in the body, never in the URL (URLs end up in logs)."""
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        key = form.get("key", [""])[0]
        target = _local_path(form.get("next", ["/"])[0])
        if not keys.enabled:
            return RedirectResponse(target, 303)
        client = client_address(request)
        if left := keys.throttled(client, "login"):
            raise HTTPException(429, "too many failed key checks from this address; retry later",
                                headers={"Retry-After": str(math.ceil(left))})
        if not keys.valid_key(key):
            keys.failed(client, "login")
            return _page("login.html", 401, **common, next=target, failed=True)
        session = await run_in_threadpool(keys.open_session, key)
        response = RedirectResponse(target, 303)
        response.set_cookie(
            COOKIE_NAME, session, max_age=int(keys.lifetime.total_seconds()), httponly=True,
            samesite="strict", secure=request.url.scheme == "https", path="/",
        )
        return response

    @router.post("/ui/logout")
    def logout(request: Request) -> Response:
        """Ends the session everywhere (its row is deleted), not only in this browser."""
        keys.end_session(request)
        response = RedirectResponse("/ui/login", 303)
        response.delete_cookie(COOKIE_NAME, path="/")
        return response

    router.include_router(
        conversation_pages(
            store, lambda template, status=200, **data: _page(template, status, **common, **data),
            scored=any(binding.target == "conversation" for binding in config.scorers),
        ),
        dependencies=[Depends(signed_in_page)],
    )
    router.include_router(
        review_router(config, store, lambda template, status=200, **data: _page(template, status, **common, **data)),
        dependencies=[Depends(signed_in_page)],
    )

    @router.get("/ui/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC_FILES:
            raise HTTPException(404)
        body = resources.files("tracescore.web").joinpath("static", name).read_bytes()
        return Response(
            body, media_type=STATIC_FILES[name],
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    return router
