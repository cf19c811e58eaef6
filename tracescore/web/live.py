"""``/ui/live``, what every open page polls each second, answered without the framework.

A poll is a key check and a value shared by every tab for :data:`VERSION_TTL`; through
FastAPI it cost ~250 µs of the ingest process's CPU (route walk, dependency solving, response
classes), 50 ms a second for 200 open tabs, taken from the event loop that acknowledges
OTLP. As a bare ASGI app the same answer costs a few tens of µs.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import orjson
from fastapi import HTTPException
from fastapi.concurrency import run_in_threadpool
from fastapi.exception_handlers import http_exception_handler
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from tracescore.store import SpanStore, score_reads
from tracescore.web.auth import DashboardKeys
from tracescore.web.shared import SharedValues

LIVE_PATH = "/ui/live"
LIVE_POLL_MS = 1000
"""How often an open page asks ``/ui/live`` whether there is something new."""
VERSION_TTL = LIVE_POLL_MS / 1000
"""Seconds a live version is shared by every page polling it: one query per interval,
whatever the number of open tabs."""
TRACE_ID = re.compile(r"^[0-9a-fA-F]{32}$")
ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]
"""How an app answers an exception (FastAPI's exception handlers)."""
_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]


class LiveVersions:
    """The live version (of all scores, or of one trace's), read once per :data:`VERSION_TTL`
    for every page that asks: the overview keys its shared render on it too."""

    def __init__(self, store: SpanStore) -> None:
        self._store = store
        self._shared = SharedValues(VERSION_TTL, size=256)

    async def get(self, trace_id: str | None) -> str:
        return await self._shared.get(trace_id, lambda: run_in_threadpool(self._read, trace_id))

    def _read(self, trace_id: str | None) -> str:
        with self._store.engine.connect() as connection:
            if trace_id is None:
                return score_reads.live_version(connection)
            return score_reads.trace_version(connection, trace_id)


class LivePoll:
    """The ASGI app of ``GET /ui/live[?trace=<id>]``: ``{"version": …}``, which changes when
    there is something new (for ``trace``: a new or rescored score of that trace). Refusals
    are FastAPI's (a 401 or 429, never a redirect: a script reads the answer); the errors in
    ``errors`` are answered by their handlers, as the app's routes are (a database outage:
    503 and ``Retry-After``)."""

    def __init__(
        self,
        versions: LiveVersions,
        keys: DashboardKeys,
        errors: dict[type[Exception], ErrorHandler],
    ) -> None:
        self._versions = versions
        self._keys = keys
        self._errors = errors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            version = await self._version(request)
        except HTTPException as refusal:
            response = await http_exception_handler(request, refusal)
            await response(scope, receive, send)
            return
        except Exception as error:
            handler = next((h for t, h in self._errors.items() if isinstance(error, t)), None)
            if handler is None:
                raise
            response = await handler(request, error)
            await response(scope, receive, send)
            return
        body = orjson.dumps({"version": version})
        headers = [*_HEADERS, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _version(self, request: Request) -> str:
        if request.method != "GET":
            raise HTTPException(405, headers={"Allow": "GET"})
        if self._keys.enabled:  # in a thread only with keys: the check may read a session
            await run_in_threadpool(self._keys.require, request)
        trace = request.query_params.get("trace")
        if trace is not None and not TRACE_ID.match(trace):
            raise HTTPException(400, "trace id must be 32 hex characters")
        return await self._versions.get(trace.lower() if trace else None)
