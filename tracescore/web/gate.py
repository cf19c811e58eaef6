"""What every HTTP request passes before its route: the key check of a request that carries a
body, that body's size and time limits, ``HEAD`` answered wherever ``GET`` is, and a NUL in its
path or query read as the character stored text has in its place.

FastAPI reads (and parses) a route's JSON body parameter *before* it runs the route's
dependencies, the API-key check among them, and a route that takes ``request.body()`` reads
all of it whatever its size: a keyless 1 GiB ``POST /api/feedback`` once cost 3 GB before its
401. :class:`BodyGate` sits in front of the app instead: a request with a body is refused from
its headers alone (401, or a redirect to the login form for a dashboard form) unless it carries
a valid key or session, and an allowed one is received here in full, within
``server.max_form_bytes`` (413) and ``server.body_timeout`` (408), before the app sees it. The
connection of a refused request is closed, so the unread body is never read as a next request.

The OTLP/HTTP export paths are left to their own receiver (``ingest/http.py``): it already
checks the key before the body and streams bodies of up to ``server.max_body_bytes`` under its
own rules for slow senders.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Collection
from urllib.parse import quote

from fastapi import HTTPException
from fastapi.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracescore.auth import ApiKeys
from tracescore.restapi import PROBLEM_MEDIA_TYPE, problem_body
from tracescore.store.text import REPLACEMENT

LOGIN_PATH = "/ui/login"


def _declares_body(scope: Scope) -> bool:
    headers = dict(scope["headers"])
    length = headers.get(b"content-length", b"").strip()
    return b"transfer-encoding" in headers or (length != b"" and length != b"0")


async def _answer(send: Send, status: int, body: bytes, headers: dict[str, str]) -> None:
    """A complete response that closes the connection (the request's body is left unread)."""
    raw = [(name.lower().encode(), value.encode()) for name, value in headers.items()]
    raw += [(b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _problem(status: int, detail: str) -> bytes:
    """The body the API's handlers would give (:mod:`tracescore.restapi`): the gate answers
    before any of them runs."""
    return json.dumps(problem_body(status, detail)).encode()


_PROBLEM = {"Content-Type": PROBLEM_MEDIA_TYPE}


class BodyGate:
    """ASGI middleware: no request body is read before its key is checked, nor beyond its limits.

    ``keys`` decides (headers and cookies only); ``open_paths`` take bodies without a key (the
    login form); ``own_paths`` are passed through untouched (OTLP/HTTP export, see above).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        keys: ApiKeys,
        max_bytes: int,
        timeout: float,
        open_paths: Collection[str],
        own_paths: Collection[str],
    ) -> None:
        self.app = app
        self.keys = keys
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.open_paths = frozenset(open_paths)
        self.own_paths = frozenset(own_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in self.own_paths or not _declares_body(scope):
            await self.app(scope, receive, send)
            return
        if path not in self.open_paths:
            # In a thread: a session cookie is looked up in the database.
            refusal = await run_in_threadpool(self.keys.refusal, HTTPConnection(scope))
            if refusal is not None:
                await self._refuse(scope, send, refusal)
                return
        messages = await self._receive(scope, receive, send)
        if messages is None:
            return
        pending = iter(messages)

        async def replay() -> Message:
            # The body, then whatever the connection says next (a disconnect).
            return next(pending, None) or await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, send: Send, refusal: HTTPException) -> None:
        path: str = scope["path"]
        if refusal.status_code == 401 and path.startswith("/ui/"):  # a session that ended
            await _answer(send, 303, b"", {"Location": f"{LOGIN_PATH}?next={quote(path, safe='')}"})
        else:
            await _answer(
                send,
                refusal.status_code,
                _problem(refusal.status_code, refusal.detail),
                {**_PROBLEM, **(refusal.headers or {})},
            )

    async def _receive(self, scope: Scope, receive: Receive, send: Send) -> list[Message] | None:
        """The body's messages, or None once it has been answered (too large, too slow, gone)."""
        declared = dict(scope["headers"]).get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(send)
            return None
        messages: list[Message] = []
        size = 0
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    messages.append(message)
                    size += len(message.get("body", b""))
                    if size > self.max_bytes:
                        await self._too_large(send)
                        return None
                    if not message.get("more_body", False):
                        return messages
        except TimeoutError:
            await _answer(
                send,
                408,
                _problem(408, f"request body not received within {self.timeout:g} s"),
                _PROBLEM,
            )
            return None

    async def _too_large(self, send: Send) -> None:
        await _answer(
            send, 413, _problem(413, f"request body exceeds {self.max_bytes} bytes"), _PROBLEM
        )


class HeadAsGet:
    """ASGI middleware: ``HEAD`` answered as ``GET`` would be, without the body (RFC 9110
    requires HEAD wherever GET is; FastAPI routes declare GET only, so HEAD got 405)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


class NulAsStored:
    """ASGI middleware: a NUL in a request's path or query (``?agent=a%00b``) read as U+FFFD,
    the character stored text has in its place (:mod:`tracescore.store.text`): a filter for an
    agent named with a NUL then finds it, and PostgreSQL, which refuses a NUL in a bound
    parameter too, no longer fails the read with a 500. A bytes search per request when there
    is none."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query: bytes = scope["query_string"]
            path: str = scope["path"]
            if b"%00" in query or "\x00" in path:
                scope = {
                    **scope,
                    "query_string": query.replace(b"%00", _REPLACEMENT_QUOTED),
                    "path": path.replace("\x00", REPLACEMENT),
                }
        await self.app(scope, receive, send)


_REPLACEMENT_QUOTED = urllib.parse.quote(REPLACEMENT).encode()
