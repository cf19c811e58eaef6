"""The dashboard's pages as an application of their own, reached without the API's routes.

FastAPI matches a request by walking every included route in order (FastAPI 0.165: about 5 µs a
route, ~300 µs for a path near the end of tracescore's). Open dashboards ask for ``/ui/live``
every second and the overview every few seconds: 200 tabs spent more of the ingest process's
CPU finding their routes than answering them, beside the event loop that acknowledges OTLP.
Here a path under ``/ui/`` (or ``/`` itself) goes straight to an app that holds only the
pages, and ``/ui/live`` to its own bare ASGI app (:mod:`tracescore.web.live`).
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from tracescore.web.live import LIVE_PATH, ErrorHandler


def pages_app(router: APIRouter, errors: dict[type[Exception], ErrorHandler]) -> FastAPI:
    """An app serving ``router``'s pages, answering ``errors`` as the main app does (its
    HTTP errors keep FastAPI's handling, as pages do there)."""
    pages = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    pages.include_router(router)
    for error, handler in errors.items():
        pages.add_exception_handler(error, handler)
    return pages


def is_page(path: str) -> bool:
    return path == "/" or path.startswith("/ui/")


class PagesApart:
    """ASGI middleware: ``/ui/live`` goes to ``live``, other HTTP requests for a page to
    ``pages``, everything else on to the main app. Installed innermost, so the body gate,
    ``HEAD`` handling and NUL replacement in front of it apply to pages as to the rest."""

    def __init__(self, app: ASGIApp, pages: ASGIApp, live: ASGIApp) -> None:
        self.app = app
        self.pages = pages
        self.live = live

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_page(path := scope["path"]):
            await self.app(scope, receive, send)
        elif path == LIVE_PATH:
            await self.live(scope, receive, send)
        else:
            await self.pages(scope, receive, send)
