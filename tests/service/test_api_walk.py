"""A walk of every ``/api/v1`` list route (issue 50): each answers ``{items, next_cursor}``
with a working cursor, writes every time one way (RFC 3339 in UTC with ``Z``; a number is a
time only where its name ends in ``_ns``), refuses a bad ``limit`` with a 422 problem, and
names an unknown binding a 404. The deprecated ``/api/...`` aliases say so in their headers.

The routes are found from the schema, so a new list route is walked without a change here;
the rows are the paging test's seeds (real rows through the store's own writes) plus what the
API itself records (silences, feedback), on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.paged_rows import SEEDS
from tests.support.score_streams import score_row
from tracescore.config import parse_config
from tracescore.monitor.silences import SilenceIn, add_silence
from tracescore.service import create_app
from tracescore.store import SpanStore
from tracescore.store.scores import upsert_scores

RFC3339_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")
ANY_TIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d")
TIME_NAMES = re.compile(r"(^|_)(at|seen|since|until|bucket|turn|time|window)$")
"""Field names that hold a time (``created_at``, ``first_seen``, ``bucket``, ``start_time``...)."""

FROM_SPANS = {"traces/{trace_id}/runs"}
"""Rebuilt from a stored trace's spans, not from rows: tests/service/test_api_runs.py walks it."""
TIMELESS = {"compare"}
"""Pairs of two versions' scores on one run: no time in them."""
EMPTY_HERE = {"ingest/quarantine", "sources", "alerts", "coverage"}
"""Lists these rows leave empty (quarantined requests, sources and coverage come from ingest
and scoring, alert states from the monitor): their envelope,
times and parameters are walked, their paging is the Window's (tested below with silences)."""


@pytest.fixture
def client(store: SpanStore) -> Iterator[TestClient]:
    config = parse_config(
        "scorers:\n  - {name: quality, scorer: completeness}\n"
        "alerts:\n  rules:\n    - {name: low, type: threshold, binding: quality, below: 0.5}\n"
        "    - {name: other, type: threshold, binding: quality, below: 0.2}\n"
    )
    with TestClient(create_app(config, store), raise_server_exceptions=False) as client:
        yield client


def _list_routes(client: TestClient) -> list[str]:
    """Every ``/api/v1`` GET route that answers a list (the schema says so), its path
    parameters filled with the seeded group."""
    schema = client.app.openapi()  # type: ignore[attr-defined]
    found = []
    for path, item in schema["paths"].items():
        get = item.get("get")
        if not path.startswith("/api/v1/") or get is None or path[8:] in FROM_SPANS:
            continue
        body = get["responses"]["200"].get("content", {}).get("application/json", {})
        if "next_cursor" in body.get("schema", {}).get("properties", {}):
            found.append(path.removeprefix("/api/v1/"))
    return found


def _query(route: str) -> dict[str, str]:
    """The parameters a route needs to list anything."""
    if route == "compare":
        return {"binding": "quality", "a": "1", "b": "2"}
    return {}


def _times(value: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    """Every field of an answer that holds (or looks like) a time, with where it is."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}"
            if TIME_NAMES.search(str(key)) and not isinstance(item, dict | list):
                yield path, item
            else:
                yield from _times(item, path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _times(item, f"{where}[{index}]")
    elif isinstance(value, str) and ANY_TIME.match(value):
        yield where, value


def _seed(client: TestClient, store: SpanStore) -> None:
    for seed in SEEDS.values():
        seed(store)
    for rule in ("low", "other"):
        answer = client.post("/api/v1/alerts/silences", json={"rule": rule, "duration": "1h"})
        assert answer.status_code == 201, answer.text


def test_every_list_route_pages_and_writes_times_one_way(
    client: TestClient, store: SpanStore
) -> None:
    _seed(client, store)
    routes = _list_routes(client)
    assert {"scores", "feedback", "traces", "sources", "review-queue", "alerts/silences"} <= set(
        routes
    )
    for route in routes:
        url = f"/api/v1/{route.replace('{group_id}', 'g1')}"
        answer = client.get(url, params={**_query(route), "limit": "1"})
        assert answer.status_code == 200, (route, answer.text)
        body = answer.json()
        assert set(body) >= {"items", "next_cursor"}, route
        if route not in EMPTY_HERE:
            assert len(body["items"]) == 1 and body["next_cursor"], route
            following = client.get(url, params={**_query(route), "cursor": body["next_cursor"]})
            assert following.status_code == 200 and following.json()["items"], route
            assert following.json()["items"][0] != body["items"][0], route
        times = list(_times(body))
        if route not in EMPTY_HERE | TIMELESS:
            assert times, f"{route}: no time found to check"
        for where, value in times:
            assert value is None or (isinstance(value, str) and RFC3339_Z.match(value)), (
                f"{route}{where} = {value!r}"
            )
        bad = client.get(url, params={**_query(route), "limit": "abc"})
        assert bad.status_code == 422, (route, bad.status_code)
        assert bad.headers["content-type"] == "application/problem+json"


def test_a_number_names_its_unit(client: TestClient, store: SpanStore) -> None:
    """Epoch numbers only where the field's name says so: the trace list's ``first_seen`` is
    text now, its span times stay ``*_ns``."""
    SEEDS["traces"](store)
    item = client.get("/api/v1/traces", params={"limit": 1}).json()["items"][0]
    assert RFC3339_Z.match(item["first_seen"]) and RFC3339_Z.match(item["last_seen"])
    numbers = [key for key, value in item.items() if isinstance(value, float)]
    assert numbers == [], numbers


NAMED_ROUTES = [
    "/api/v1/calibration?binding=nope",
    "/api/v1/coverage?binding=nope",
    "/api/v1/review-queue?binding=nope",
    "/api/v1/compare?binding=nope",
    "/api/v1/scores?binding=nope",
    "/api/v1/scores/summary?binding=nope",
    "/api/v1/alerts?rule=nope",
    "/api/v1/alerts/silences?rule=nope",
]
"""Every ``/api/v1`` parameter that names something the configuration declares (a binding,
an alert rule). ``agent``, ``service``, ``model`` and ``scorer`` filter on what runs
reported, and ``/feedback?binding=`` takes free evaluation names too: those match nothing."""


@pytest.mark.parametrize("url", NAMED_ROUTES)
def test_an_unknown_name_is_404(client: TestClient, url: str) -> None:
    answer = client.get(url)
    assert answer.status_code == 404, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert "nope" in answer.json()["detail"]


def test_a_known_name_without_rows_is_200(client: TestClient) -> None:
    for url in NAMED_ROUTES:
        known = url.replace("binding=nope", "binding=quality").replace("rule=nope", "rule=low")
        if "compare" not in known:  # compare needs two versions' scores: its own 404
            assert client.get(known).status_code == 200, known


def test_a_binding_gone_from_the_configuration_keeps_its_scores_readable(
    client: TestClient, store: SpanStore
) -> None:
    """Stored scores under a name the configuration no longer binds are history, not a typo."""
    with store.write_transaction() as connection:
        upsert_scores(connection, [score_row(datetime.now(UTC), 0.5, binding="retired")])  # type: ignore[list-item]
    for url in ("/api/v1/scores", "/api/v1/scores/summary", "/api/v1/calibration"):
        assert client.get(url, params={"binding": "retired"}).status_code == 200, url
    assert len(client.get("/api/v1/scores", params={"binding": "retired"}).json()["items"]) == 1
    # a silence stored for a rule since removed keeps it readable likewise; a new one for a
    # rule the configuration does not name is refused, as a verdict's unknown binding is
    add_silence(store.engine, SilenceIn(rule="gone", duration=3600), datetime.now(UTC).timestamp())
    kept = client.get("/api/v1/alerts/silences", params={"rule": "gone"})
    assert kept.status_code == 200 and kept.json()["items"][0]["rule"] == "gone"
    refused = client.post("/api/v1/alerts/silences", json={"rule": "gone", "duration": "1h"})
    assert refused.status_code == 422 and "no alert rule named 'gone'" in refused.json()["detail"]


BAD_IDS = [
    "/api/v1/traces/not-hex",
    "/api/v1/traces/not-hex/runs",
    "/api/v1/traces/" + "a" * 31,
    "/api/v1/scores?trace_id=not-hex",
    "/api/v1/feedback?trace_id=not-hex",
    "/api/v1/insights/no%20such%20id/runs",
    "/api/v1/alerts/silences/not-a-number",
    "/api/v1/ingest/quarantine/not-a-number/requeue",
    "/api/v1/feedback/not-hex",
    "/api/traces/not-hex",
]
"""Every id in a path or a query: a malformed one is a 422 problem, not a 400 or a 404."""


@pytest.mark.parametrize("url", BAD_IDS)
def test_a_malformed_id_is_a_422_problem(client: TestClient, url: str) -> None:
    method = (
        "POST"
        if url.endswith("requeue")
        else "DELETE"
        if "/silences/" in url or "/feedback/" in url
        else "GET"
    )
    answer = client.request(method, url)
    assert answer.status_code == 422, (url, answer.status_code, answer.text)
    assert answer.headers["content-type"] == "application/problem+json"
    body = answer.json()
    assert body["status"] == 422 and body["title"] == "Unprocessable Entity"
    (error,) = body["errors"]
    assert error["loc"][0] in ("path", "query"), body
    assert body["detail"].startswith(f"{error['loc'][1]}: "), body


def test_a_bogus_run_kind_is_422_like_a_bogus_status(client: TestClient) -> None:
    trace = "0" * 31 + "1"
    kind = client.get(f"/api/v1/traces/{trace}/runs?kind=bogus")
    status = client.get("/api/v1/scores?status=bogus")
    assert (kind.status_code, status.status_code) == (422, 422)
    assert kind.headers["content-type"] == "application/problem+json"


def test_a_bad_cursor_is_422(client: TestClient) -> None:
    for route in ("sources", "alerts/silences", "review-queue", "ingest/quarantine"):
        answer = client.get(f"/api/v1/{route}", params={"cursor": "not-one"})
        assert answer.status_code == 422, route
        assert answer.json()["errors"][0]["msg"] == answer.json()["detail"], route


def test_a_routes_own_422_has_the_shape_of_a_validation_failure(client: TestClient) -> None:
    """A check past the parameters' types (a range backwards, a page too large) answers as
    a failed validation does: ``errors`` located at the parameter its detail names."""
    backwards = client.get("/api/v1/scores/summary", params={"since": "1h", "until": "2h"})
    too_many = client.get("/api/v1/scores", params={"limit": 5000})
    for answer, loc in ((backwards, ["query", "since"]), (too_many, ["query", "limit"])):
        assert answer.status_code == 422 and answer.json()["errors"][0]["loc"] == loc
        assert answer.headers["content-type"] == "application/problem+json"


def test_the_old_paths_say_they_are_deprecated(client: TestClient) -> None:
    old = client.get("/api/scores")
    assert old.status_code == 200
    assert old.headers["Deprecation"].startswith("@")
    assert old.headers["Link"] == '</api/v1/scores>; rel="successor-version"'
    new = client.get("/api/v1/scores")
    assert "Deprecation" not in new.headers and "Link" not in new.headers
    # routes that answer a Response of their own get the headers too
    assert client.get("/api/traces").headers["Link"] == '</api/v1/traces>; rel="successor-version"'


def test_the_review_queue_pages_without_repeats_and_repeatably(
    client: TestClient, store: SpanStore
) -> None:
    """The review queue never gave a cursor: each page is now a queue of its own among the
    runs earlier pages did not propose, drawn from the cursor's seed, so asking for a page
    again gives it again."""
    SEEDS["scores"](store)
    seen: list[tuple[str, str]] = []
    cursor = None
    for _ in range(3):
        body = client.get(
            "/api/v1/review-queue", params={"limit": 5, **({"cursor": cursor} if cursor else {})}
        ).json()
        seen += [(item["trace_id"], item["span_id"]) for item in body["items"]]
        assert len(body["items"]) == 5 and body["next_cursor"]
        if cursor:
            again = client.get("/api/v1/review-queue", params={"limit": 5, "cursor": cursor})
            assert again.json()["items"] == body["items"]
        cursor = body["next_cursor"]
    assert len(seen) == len(set(seen)) == 15
