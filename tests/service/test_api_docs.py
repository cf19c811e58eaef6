"""The API's schema and docs pages need the API's key, and load nothing from another host.

The app runs in-process on a real socket (uvicorn) over a real SQLite file; the key check is the
real one, as is the dashboard login that sets the cookie browsers use for the docs pages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.live_app import serve_app
from tracescore.config import parse_config
from tracescore.service import create_app
from tracescore.store import open_store

KEY = "docs-key-5b1e"
PAGES = ("/api/docs", "/redoc")
# Anything in an HTML page that makes a browser fetch: attributes and CSS url(...), plus any
# absolute or protocol-relative URL written anywhere (a script may build a request from one).
_FETCHED = re.compile(
    r"""(?:src|href|action)\s*=\s*["']([^"']+)|url\(\s*["']?([^"')]+)|((?:https?:)?//[\w.-]+)"""
)


@contextmanager
def served(tmp_path: Path, server: str) -> Iterator[httpx.Client]:
    config = parse_config(f"store: sqlite:///{tmp_path / 'docs.db'}\nserver:\n{server}")
    store = open_store(config.store.url)
    try:
        with (
            serve_app(create_app(config, store)) as base_url,
            httpx.Client(base_url=base_url, timeout=30) as client,
        ):
            yield client
    finally:
        store.close()


def fetched_urls(html: str) -> list[str]:
    return [next(group for group in match.groups() if group) for match in _FETCHED.finditer(html)]


def test_docs_need_the_api_key_or_the_dashboard_cookie(tmp_path: Path) -> None:
    with served(tmp_path, f"  api_keys: [{KEY}]\n") as client:
        assert client.get("/api/openapi.json").status_code == 401
        assert (
            client.get("/api/openapi.json", headers={"Authorization": "Bearer wrong"}).status_code
            == 401
        )
        for page in PAGES:
            refused = client.get(page)
            assert (refused.status_code, refused.headers["location"]) == (
                303,
                f"/ui/login?next={page.replace('/', '%2F')}",
            )
            assert KEY not in refused.text
        assert client.get("/api/docs/static/swagger-ui-bundle.js").status_code == 401

        schema = client.get("/api/openapi.json", headers={"Authorization": f"Bearer {KEY}"})
        assert schema.status_code == 200
        assert "/api/traces/{trace_id}" in schema.json()["paths"]

        login = client.post(
            "/ui/login",
            content=f"key={KEY}&next=/api/docs",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert (login.status_code, login.headers["location"]) == (303, "/api/docs")
        for page in PAGES:  # the cookie the login set is sent from here on
            assert client.get(page).status_code == 200
        assert client.get("/api/openapi.json").status_code == 200


def test_docs_pages_load_nothing_from_another_host(tmp_path: Path) -> None:
    with served(tmp_path, "  api_keys: []\n") as client:  # no keys: open, like the API
        for page in PAGES:
            response = client.get(page)
            assert response.status_code == 200
            urls = fetched_urls(response.text)
            assert urls, "nothing found to check: the page's markup changed"
            external = [url for url in urls if not url.startswith("/") or url.startswith("//")]
            assert not external, (page, external)
            for url in urls:  # and each local one is really served
                asset = client.get(url)
                assert asset.status_code == 200, (url, asset.status_code)
                assert len(asset.content) > 100
        assert client.get("/api/docs/static/..%2Fcore.py").status_code == 404
        assert client.get("/api/docs/static/core.py").status_code == 404


@pytest.mark.parametrize("keys", ["[]", f"[{KEY}]"])
def test_docs_false_turns_them_off(tmp_path: Path, keys: str) -> None:
    with served(tmp_path, f"  docs: false\n  api_keys: {keys}\n") as client:
        headers = {"Authorization": f"Bearer {KEY}"}
        for path in ("/api/openapi.json", *PAGES, "/api/docs/static/swagger-ui-bundle.js"):
            assert client.get(path, headers=headers).status_code == 404, path
        assert client.get("/healthz").status_code == 200
