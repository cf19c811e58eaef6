"""The dashboard: HTML pages served by the collector at ``/`` and under ``/ui/``.

Pages are rendered on the server (Jinja2 with autoescaping: trace content is untrusted and
is only ever shown as text) and kept live by a small script of our own that polls
``/ui/live`` and re-fetches the page when a score arrives. Responses carry a strict
Content-Security-Policy, so even markup that slipped through could neither run inline
script nor load anything from elsewhere.
"""

from __future__ import annotations

import re
from datetime import timedelta
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from tracescore.config import Config
from tracescore.monitor.config import parse_duration
from tracescore.monitor.queries import ScoreFilter
from tracescore.store import SpanStore
from tracescore.web import pages, queries
from tracescore.web.auth import COOKIE_NAME, DashboardKeys, session_token
from tracescore.web.cache import ExpiringCache
from tracescore.web.rendering import render

_TRACE_ID = re.compile(r"^[0-9a-fA-F]{32}$")
STATIC_FILES = {"style.css": "text/css", "live.js": "text/javascript"}
WINDOWS = ("15m", "1h", "6h", "24h", "7d", "30d")
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
    return HTMLResponse(render(template, **context), status_code=status, headers=SECURITY_HEADERS)


def _local_path(target: str | None) -> str:
    """Only same-site paths may be redirected to after login (no ``//host`` or ``/\\host``)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    return target


def _duration(value: str, name: str) -> timedelta:
    try:
        return timedelta(seconds=parse_duration(value))
    except ValueError as exc:
        raise HTTPException(422, f"{name}: {exc}") from None


def web_router(config: Config, store: SpanStore) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    keys = DashboardKeys(config.server.api_keys)
    bindings = [binding.name for binding in config.scorers]
    aggregates = ExpiringCache()

    def signed_in_page(request: Request) -> None:
        """Pages send a browser without a session to the login form, and back afterwards."""
        if not keys.allows(request):
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            raise HTTPException(
                303, headers={"Location": f"/ui/login?next={quote(target, safe='')}"}
            )

    common = {"auth": keys.enabled, "poll_ms": LIVE_POLL_MS}

    @router.get("/", dependencies=[Depends(signed_in_page)])
    def overview(
        window: str = "24h",
        bucket: str | None = None,
        scorer: str | None = None,
        agent: str | None = None,
        model: str | None = None,
    ) -> HTMLResponse:
        length = _duration(window, "window")
        try:
            span = pages.Window.ending_now(length, _duration(bucket, "bucket") if bucket else None)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        where = ScoreFilter(scorer=scorer or None, agent=agent or None, model=model or None)
        data = pages.overview(store.engine, bindings, span, where, aggregates)
        return _page(
            "overview.html", **common, **data, windows=WINDOWS, window_name=window,
            bucket_name=bucket, where=where,
        )  # fmt: skip

    @router.get("/ui/traces/{trace_id}", dependencies=[Depends(signed_in_page)])
    def trace(trace_id: str) -> HTMLResponse:
        if not _TRACE_ID.match(trace_id):
            raise HTTPException(400, "trace id must be 32 hex characters")
        data = pages.trace_page(store, trace_id.lower())
        if data is None:
            return _page("missing.html", 404, **common, trace_id=trace_id.lower())
        return _page("trace.html", **common, **data)

    @router.get("/ui/live", dependencies=[Depends(keys.require)])
    def live(trace: str | None = None) -> JSONResponse:
        """What pages poll: a value that changes when there is something new (for ``trace``:
        a new or rescored score of that trace)."""
        if trace is not None and not _TRACE_ID.match(trace):
            raise HTTPException(400, "trace id must be 32 hex characters")
        with store.engine.connect() as connection:
            if trace is None:
                version = queries.live_version(connection)
            else:
                version = queries.trace_version(connection, trace.lower())
        return JSONResponse({"version": version}, headers={"Cache-Control": "no-store"})

    @router.get("/ui/login")
    def login_form(next: str = "/") -> HTMLResponse:  # noqa: A002 - the conventional name
        return _page("login.html", **common, next=_local_path(next), failed=False)

    @router.post("/ui/login")
    async def login(request: Request) -> Response:
        """The form posts the key in the body, never in the URL (URLs end up in logs)."""
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        key = form.get("key", [""])[0]
        target = _local_path(form.get("next", ["/"])[0])
        if not keys.enabled:
            return RedirectResponse(target, 303)
        if not keys.valid_key(key):
            return _page("login.html", 401, **common, next=target, failed=True)
        response = RedirectResponse(target, 303)
        response.set_cookie(
            COOKIE_NAME, session_token(key), httponly=True, samesite="strict",
            secure=request.url.scheme == "https", path="/",
        )  # fmt: skip
        return response

    @router.post("/ui/logout")
    def logout() -> Response:
        response = RedirectResponse("/ui/login", 303)
        response.delete_cookie(COOKIE_NAME, path="/")
        return response

    @router.get("/ui/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC_FILES:
            raise HTTPException(404)
        body = resources.files("tracescore.web").joinpath("static", name).read_bytes()
        return Response(
            body, media_type=STATIC_FILES[name],
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )  # fmt: skip

    return router
