"""Signing in to the dashboard and out of it: the login form and the session cookie.

The form posts the key in the body, never in the URL (URLs end up in logs); a valid key opens
a database-backed session (:class:`~tracescore.web.auth.DashboardKeys`), whose random id is
the cookie, so a logout ends it on every replica. Failed keys are throttled per address.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tracescore.auth import client_address
from tracescore.web.auth import COOKIE_NAME, DashboardKeys

Guard = Callable[[Request], Awaitable[None]]
"""A FastAPI dependency that lets a request through or raises its refusal."""
Page = Callable[..., HTMLResponse]
"""Renders a template as a page: ``page(template, status=200, **context)``."""


def local_path(target: str | None) -> str:
    """Only same-site paths may be redirected to after login (no ``//host`` or ``/\\host``)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    return target


def page_guard(keys: DashboardKeys) -> Guard:
    """The check of every page: a browser without a session goes to the login form, and back
    to the page afterwards."""

    async def signed_in_page(request: Request) -> None:
        # In a thread only when there is something to check (a session is a query).
        refusal = await run_in_threadpool(keys.refusal, request) if keys.enabled else None
        if refusal is not None and refusal.status_code == 429:
            raise refusal
        if refusal is not None:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            raise HTTPException(
                303, headers={"Location": f"/ui/login?next={quote(target, safe='')}"}
            )

    return signed_in_page


def sign_in_router(keys: DashboardKeys, page: Page, common: dict[str, Any]) -> APIRouter:
    """``/ui/login`` (the form and its post) and ``/ui/logout``, open by design."""
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/login")
    def login_form(next: str = "/") -> HTMLResponse:
        return page("login.html", **common, next=local_path(next), failed=False)

    @router.post("/ui/login")
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        key = form.get("key", [""])[0]
        target = local_path(form.get("next", ["/"])[0])
        if not keys.enabled:
            return RedirectResponse(target, 303)
        credential = keys.credential(key)
        subject = credential.subject(client_address(request))
        if left := keys.throttled(subject, "login"):
            raise HTTPException(
                429,
                "too many failed key checks from this address or for this key; retry later",
                headers={"Retry-After": str(math.ceil(left))},
            )
        if not credential.valid:
            keys.failed(subject, "login")
            return page("login.html", 401, **common, next=target, failed=True)
        session = await run_in_threadpool(keys.open_session, key)
        response = RedirectResponse(target, 303)
        response.set_cookie(
            COOKIE_NAME,
            session,
            max_age=int(keys.lifetime.total_seconds()),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response

    @router.post("/ui/logout")
    def logout(request: Request) -> Response:
        """Ends the session everywhere (its row is deleted), not only in this browser."""
        keys.end_session(request)
        response = RedirectResponse("/ui/login", 303)
        response.delete_cookie(COOKIE_NAME, path="/")
        return response

    return router
