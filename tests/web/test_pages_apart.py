"""Pages are found without walking the API's routes, and ``/ui/live`` answers without the
framework (issue 33, item 3: 200 tabs spent the ingest process's CPU on route matching), with
the same answers, refusals and headers as before."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from tracescore.config import parse_config
from tracescore.service import create_app
from tracescore.store import open_store
from tracescore.web.pages_app import is_page

KEY = "k3y-for-the-live-poll"


def _client(tmp_path: Path, keys: list[str]) -> TestClient:
    store = open_store(f"sqlite:///{tmp_path / 'pages.db'}")
    config = parse_config(f"server: {{read_processes: 0, api_keys: {keys}}}")
    return TestClient(create_app(config, store), raise_server_exceptions=False)


def test_only_the_overview_and_ui_paths_are_pages() -> None:
    assert is_page("/") and is_page("/ui/live") and is_page("/ui/traces/ab")
    assert not any(map(is_page, ["/api/v1/scores", "/v1/traces", "/healthz", "/ui", "/uix/a"]))


def test_the_live_poll_answers_as_a_route_did(tmp_path: Path) -> None:
    client = _client(tmp_path, [])
    live = client.get("/ui/live")
    assert live.status_code == 200 and set(live.json()) == {"version"}
    assert live.headers["cache-control"] == "no-store"
    assert live.headers["content-type"] == "application/json"
    assert int(live.headers["content-length"]) == len(live.content)  # no chunked answer
    head = client.head("/ui/live")
    assert head.status_code == 200 and head.content == b""
    refused = client.post("/ui/live")
    assert refused.status_code == 405 and refused.headers["allow"] == "GET"
    bad = client.get("/ui/live", params={"trace": "x' OR 1=1"})
    assert bad.status_code == 400 and bad.json() == {"detail": "trace id must be 32 hex characters"}
    # the rest of the app is where it was: pages, their 404s, the API, ingest's health
    assert client.get("/").status_code == 200
    assert client.get("/ui/nothing-here").status_code == 404
    assert client.get("/api/v1/scores").status_code == 200
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["database"] == "sqlite"


def test_the_live_poll_checks_the_key_first(tmp_path: Path) -> None:
    client = _client(tmp_path, [KEY])
    refused = client.get("/ui/live", params={"trace": "not-even-hex"})
    assert refused.status_code == 401  # the key before anything about the request
    assert client.get("/ui/live", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    for _ in range(30):
        client.get("/ui/live", headers={"Authorization": "Bearer wrong"})
    throttled = client.get("/ui/live", headers={"Authorization": "Bearer wrong"})
    assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) >= 1
