"""A read that failed because the database is unavailable is answered 503 with
``Retry-After``, as ingest answers, instead of a 500 with a traceback per request: a client or
browser can tell "try again" from a bug.

One handler for the API's routes, the pages and the live poll (each registers
:meth:`ReadOutage.answer` for :class:`~tracescore.store.outage.DatabaseError`), so an outage is
logged once, whichever of them met it first.
"""

from __future__ import annotations

import logging
import time

from fastapi import Request, Response
from fastapi.responses import PlainTextResponse

from tracescore.ingest.intake import RETRY_AFTER_SECONDS
from tracescore.restapi import problem
from tracescore.store.outage import database_unavailable

log = logging.getLogger(__name__)


class ReadOutage:
    """Answers a request whose database access failed because the database is unavailable
    (down, restarting, unreachable) with 503 and ``Retry-After``.

    Logged once per outage: the first refused request after ``_QUIET_SECONDS`` without one.
    Any other database error (a bug, a bad query) is re-raised: a 500 with its traceback."""

    _QUIET_SECONDS = 30.0

    def __init__(self) -> None:
        self._last = -self._QUIET_SECONDS

    async def answer(self, request: Request, exc: Exception) -> Response:
        if not database_unavailable(exc):
            raise exc
        now = time.monotonic()
        if now - self._last >= self._QUIET_SECONDS:
            log.warning(
                "reads answer 503 while the database is unavailable (%s: %s)",
                type(exc).__name__,
                str(exc).splitlines()[0] if str(exc) else "",
            )
        self._last = now
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS), "Cache-Control": "no-store"}
        message = "the database is unavailable; retry later"
        if request.url.path.startswith("/api/"):
            return problem(503, message, headers=headers)
        return PlainTextResponse(message, 503, headers=headers)
