"""Every list route that pages by ``next_cursor`` returns each stored row exactly once, on SQLite
and PostgreSQL, when 500 rows share a handful of sort-key values (issue 46, item 1): a page
boundary then falls inside a run of equal times, where a cursor that compares the time in
another form than the one stored skips or repeats the rest of the run.

Score rows go through the scoring worker's own bulk write (the path that stored SQLite times as
``+00:00`` text); rows an earlier release stored that way are the migration test's
(tests/store/test_time_text_migration.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.support.paged_rows import ROWS, SEEDS
from tracescore.config import parse_config
from tracescore.service import create_app
from tracescore.store import SpanStore


@pytest.fixture
def client(store: SpanStore) -> Iterator[TestClient]:
    config = parse_config("scorers:\n  - {name: quality, scorer: completeness}\n")
    with TestClient(create_app(config, store), raise_server_exceptions=False) as client:
        yield client


_ITEM_KEY = {"traces": "trace_id", "insights/g1/runs": "trace_id", "compare": "trace_id"}


@pytest.mark.parametrize("route", sorted(SEEDS))
def test_paging_returns_every_row_once(client: TestClient, store: SpanStore, route: str) -> None:
    url, stored = SEEDS[route](store)
    key = _ITEM_KEY.get(route, "id")
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(ROWS):  # more pages than rows: a cursor that repeats a page ends the loop
        response = client.get(url, params={"cursor": cursor} if cursor else {})
        assert response.status_code == 200, response.text
        body = response.json()
        seen += [item[key] for item in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)), f"{len(seen) - len(set(seen))} rows repeated"
    assert set(seen) == stored, f"{len(stored - set(seen))} of {ROWS} rows never listed"


def test_every_paged_route_is_covered(client: TestClient) -> None:
    """A new list route with a ``next_cursor`` needs a seed here: found from the schema."""
    schema = client.app.openapi()  # type: ignore[attr-defined]
    paged = {
        path.removeprefix("/api/v1/")
        for path, item in schema["paths"].items()
        if path.startswith("/api/v1/")
        and any(p["name"] == "cursor" for p in item.get("get", {}).get("parameters", []))
    }
    covered = {route.replace("g1", "{group_id}") for route in SEEDS}
    # The runs of one trace are rebuilt from its spans, not stored rows: tests/service/test_api_runs.py;
    # the short lists built whole page by offset (restapi.Window): tests/service/test_api_walk.py
    built_whole = {
        "traces/{trace_id}/runs",
        "sources",
        "ingest/quarantine",
        "alerts",
        "alerts/silences",
        "coverage",
        "scores/summary",
        "review-queue",
    }
    assert paged - covered - built_whole == set()
