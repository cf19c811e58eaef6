"""The REST API's documentation: ``/api/openapi.json``, Swagger UI at ``/api/docs``, ReDoc at
``/redoc``, behind the same keys as the API, with nothing loaded from elsewhere.

The schema lists every route, so it is guarded like the routes it describes: with keys
configured, ``Authorization: Bearer <key>`` or the dashboard's login cookie (a browser cannot
send a bearer header on a page load; without the cookie the HTML pages send it to the login
form, the schema answers 401). FastAPI's own docs pages load Swagger UI and ReDoc from a CDN,
plus a favicon and Google Fonts: a collector that promises to fetch nothing from elsewhere, and
may run where nothing else is reachable, serves the copies the ``fastapi-offline`` package ships
instead, under ``/api/docs/static/``. ``server.docs: false`` turns all of it off (404).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import fastapi_offline
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from tracescore.web.auth import DashboardKeys

OPENAPI_URL = "/api/openapi.json"
SWAGGER_URL = "/api/docs"
REDOC_URL = "/redoc"
STATIC_URL = "/api/docs/static"
_ASSETS = Path(fastapi_offline.__file__).parent / "static"
_ASSET_NAMES = frozenset(path.name for path in _ASSETS.iterdir() if path.is_file())


def docs_router(app: FastAPI, keys: DashboardKeys) -> APIRouter:
    """Routes serving ``app``'s schema and the two documentation pages, guarded by ``keys``."""
    router = APIRouter(include_in_schema=False)

    def key_or_cookie(request: Request) -> None:
        keys.require(request)

    def signed_in_page(request: Request) -> None:
        if keys.refusal(request) is not None:
            raise HTTPException(
                303, headers={"Location": f"/ui/login?next={quote(request.url.path, safe='')}"}
            )

    @router.get(OPENAPI_URL, dependencies=[Depends(key_or_cookie)])
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @router.get(SWAGGER_URL, dependencies=[Depends(signed_in_page)])
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=OPENAPI_URL,
            title=f"{app.title} API",
            swagger_js_url=f"{STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC_URL}/favicon.png",
            # Swagger UI would otherwise send the schema to validator.swagger.io for a badge.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @router.get(REDOC_URL, dependencies=[Depends(signed_in_page)])
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=OPENAPI_URL,
            title=f"{app.title} API",
            redoc_js_url=f"{STATIC_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{STATIC_URL}/favicon.png",
            with_google_fonts=False,
        )

    @router.get(f"{STATIC_URL}/{{name}}", dependencies=[Depends(key_or_cookie)])
    def asset(name: str) -> FileResponse:
        if name not in _ASSET_NAMES:  # only the shipped files, never a path
            raise HTTPException(404)
        return FileResponse(_ASSETS / name, headers={"Cache-Control": "private, max-age=86400"})

    return router
