"""The alerts page's forms: silence or acknowledge a firing alert, end a silence early.

Plain HTML forms posted to the server behind the dashboard's login cookie, like the review
page's (see :mod:`tracescore.web.review` for why another site cannot post them); the same
:class:`~tracescore.monitor.silences.SilenceIn` as the REST API validates them, and the page
answers a bad form with itself and the reason, not an error page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from tracescore.monitor.silences import SilenceIn, add_silence, remove_silence
from tracescore.store import Database
from tracescore.web.review import form_fields

AlertsPage = Callable[[int, str], HTMLResponse]
"""Renders the alerts page with a status and an error message: ``page(422, "why")``."""
DURATIONS = ("1h", "4h", "1d")
"""The durations the page offers."""


def _asked(form: dict[str, str]) -> SilenceIn:
    """The posted form as a silence; ``scope=rule`` covers every segment of the rule."""
    try:
        segment = json.loads(form.get("segment") or "null")
    except ValueError:
        raise ValueError("segment: not JSON") from None
    return SilenceIn.model_validate(
        {
            "rule": form.get("rule", ""),
            "kind": form.get("kind", "silence"),
            "segment": segment if form.get("scope") != "rule" else None,
            "duration": form.get("duration", ""),
            "note": form.get("note", "").strip(),
            "author": form.get("author", "").strip(),
        }
    )


def silence_forms(engine: Database, page: AlertsPage) -> APIRouter:
    """Routes of the alerts page's forms; the caller guards them with the dashboard's login."""
    router = APIRouter(include_in_schema=False)

    @router.post("/ui/alerts/silences")
    async def silence(request: Request) -> Response:
        form = form_fields(await request.body())
        try:
            asked = _asked(form)
        except ValidationError as exc:
            message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            return await run_in_threadpool(page, 422, message)
        except ValueError as exc:
            return await run_in_threadpool(page, 422, str(exc))

        await run_in_threadpool(add_silence, engine, asked, datetime.now(UTC).timestamp())
        return RedirectResponse("/ui/alerts", 303)

    @router.post("/ui/alerts/silences/{silence_id}/end")
    def end(silence_id: int) -> Response:
        remove_silence(engine, silence_id)  # already gone: what was asked holds
        return RedirectResponse("/ui/alerts", 303)

    return router
