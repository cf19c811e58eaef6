"""The REST API against its own OpenAPI schema: every route the schema lists is called with
requests generated from the schema (valid values, then each parameter and body spoiled in
turn), and no answer may be a 5xx, a status the operation does not document, or a body that
breaks the schema documented for it. Then the one shape the API promises (issue 34): ``/api/v1``
with the old paths as deprecated aliases, one time format, one list envelope, binding names,
problem details for every error, and feedback checked against the binding's scale and the
trace's existence."""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from jsonschema import Draft202012Validator

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.paths import REPO
from tests.support.score_streams import insert_rows, score_row
from tracescore.config import parse_config
from tracescore.ingest.decode import decode_traces_protobuf
from tracescore.service import create_app
from tracescore.store import SpanStore, open_store

CONFIG = """
scorers:
  - {name: quality, scorer: completeness, threshold: 0.6}
  - {name: relevance, scorer: answer-relevancy, judge: default, options: {scale: 10}}
judges:
  default: {model: openai/gpt-4o-mini, api_base: "http://127.0.0.1:9/v1"}
"""
HOSTILE = [
    "",
    "x",
    "-1",
    "0",
    "1e309",
    "nan",
    "99999999999999999999",
    "2026-13-40T99:00",
    "1h",
    "ff" * 16,
    "\u2603" * 300,
    "../../etc/passwd",
]
BODIES: list[Any] = [{}, [], "x", {"trace_id": "zz"}, {"value": "x"}, None]
NOW = datetime.now(UTC)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpanStore]:
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('api') / 'tracescore.db'}")
    yield store
    store.close()


@pytest.fixture(scope="module")
def client(store: SpanStore) -> Iterator[TestClient]:
    with TestClient(
        create_app(parse_config(CONFIG), store), raise_server_exceptions=False
    ) as client:
        yield client


@pytest.fixture(scope="module")
def trace_id(client: TestClient, store: SpanStore) -> str:
    """One stored trace, with two scores (one per binding) and a verdict on it."""
    trace = agent_trace(random.Random(34))
    store.write(decode_traces_protobuf(export_request(trace.spans)).spans)
    insert_rows(
        store.engine,
        [
            score_row(
                NOW - timedelta(minutes=5),
                0.75,
                trace_id=trace.trace_id,
                binding="quality",
                scorer_id="completeness",
            ),
            score_row(
                NOW - timedelta(minutes=5),
                7.0,
                trace_id=trace.trace_id,
                binding="relevance",
                scorer_id="answer-relevancy",
            ),
        ],
    )
    posted = client.post(
        "/api/v1/feedback",
        json={"trace_id": trace.trace_id, "binding": "quality", "value": 0.5, "author": "ana"},
    )
    assert posted.status_code == 201, posted.text
    return trace.trace_id


@pytest.fixture(scope="module")
def schema(client: TestClient) -> dict[str, Any]:
    return client.app.openapi()  # type: ignore[attr-defined]


def _operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def _sample(parameter: dict[str, Any], known: dict[str, str]) -> str:
    """A value the parameter's schema allows, or the seeded one for an id."""
    if parameter["name"] in known:
        return known[parameter["name"]]
    schema = parameter.get("schema", {})
    options = [schema, *schema.get("anyOf", [])]
    for option in options:
        if "examples" in option:
            return str(option["examples"][0])
        if "enum" in option:
            return str(option["enum"][0])
        if "default" in option and option["default"] is not None:
            return (
                str(option["default"]).lower()
                if isinstance(option["default"], bool)
                else str(option["default"])
            )
    kinds = {option.get("type") for option in options}
    if "integer" in kinds or "number" in kinds:
        return str(schema.get("minimum", 1))
    if "boolean" in kinds:
        return "true"
    if "array" in kinds:
        return str(options[0].get("items", {}).get("enum", ["agent"])[0])
    return "x"


def _check(
    schema: dict[str, Any], operation: dict[str, Any], path: str, response: Response
) -> None:
    """No 5xx, a documented status, a body that the documented schema accepts."""
    where = f"{response.request.method} {response.request.url} -> {response.status_code}: {response.text[:300]}"
    assert response.status_code < 500, where
    documented = operation["responses"].get(str(response.status_code))
    assert documented is not None, f"undocumented status: {where}"
    if response.status_code == 204 or not response.content:
        return
    media_type = response.headers["content-type"].split(";")[0]
    content = documented.get("content", {})
    assert media_type in content, f"undocumented media type {media_type}: {where}"
    if "json" in media_type:
        body = response.json()
        validator = Draft202012Validator(
            {**content[media_type]["schema"], "components": schema["components"]}
        )
        errors = [error.message for error in validator.iter_errors(body)]
        assert not errors, f"{errors[:3]}: {where}"
    if (
        path.startswith("/api/")
        and not path.startswith("/api/public/otel/")
        and response.status_code >= 400
    ):
        assert media_type == "application/problem+json", where


def _call(
    client: TestClient,
    method: str,
    url: str,
    params: dict[str, str],
    body: Any = ...,
    **kwargs: Any,
) -> Response:
    if body is not ...:
        kwargs["content"] = json.dumps(body)
        kwargs["headers"] = {"Content-Type": "application/json"}
    return client.request(method.upper(), url, params=params, **kwargs)


def _feedback_body(trace_id: str) -> dict[str, Any]:
    return {
        "trace_id": trace_id,
        "binding": "quality",
        "value": 0.9,
        "label": "pass",
        "author": "walker",
    }


def test_every_route_of_the_schema_answers_as_documented(
    client: TestClient, schema: dict[str, Any], trace_id: str
) -> None:
    known = {
        "trace_id": trace_id,
        "conversation_id": "c-1",
        "seq": "1",
        "item_id": "f" * 32,
        "binding": "quality",
    }
    calls = 0
    for path, method, operation in _operations(schema):
        parameters = operation.get("parameters", [])
        good = {p["name"]: _sample(p, known) for p in parameters}

        def url(
            values: dict[str, str], path: str = path, parameters: list[Any] = parameters
        ) -> str:
            for p in parameters:
                if p["in"] == "path":
                    path = path.replace(
                        "{" + p["name"] + "}", quote(values[p["name"]], safe="") or "%20"
                    )
            return path

        def query(values: dict[str, str], parameters: list[Any] = parameters) -> dict[str, str]:
            return {p["name"]: values[p["name"]] for p in parameters if p["in"] == "query"}

        body_schema = operation.get("requestBody", {}).get("content", {})
        if path in ("/v1/traces", "/v1/logs", "/v1/metrics", "/api/public/otel/v1/traces"):
            payloads = [
                ({"Content-Type": "application/json"}, b'{"resourceSpans": []}'),
                ({"Content-Type": "application/json"}, b"{not json"),
                ({"Content-Type": "application/x-protobuf"}, b"\xff\xff\xff"),
                (
                    {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
                    gzip.compress(b""),
                ),
                ({"Content-Type": "application/x-protobuf", "Content-Encoding": "br"}, b""),
                ({"Content-Type": "text/plain"}, b"hello"),
            ]
            for headers, payload in payloads:
                _check(schema, operation, path, client.post(path, content=payload, headers=headers))
                calls += 1
            continue
        bodies: list[Any] = [...]
        if "application/json" in body_schema:
            bodies = [
                _feedback_body(trace_id),
                *BODIES,
                {**_feedback_body(trace_id), "value": 7},
                {**_feedback_body(trace_id), "trace_id": "ab" * 16},
            ]
        for body in bodies:
            _check(schema, operation, path, _call(client, method, url(good), query(good), body))
            calls += 1
        for parameter in parameters:
            for value in HOSTILE:
                spoiled = {**good, parameter["name"]: value}
                body = bodies[0]
                _check(
                    schema,
                    operation,
                    path,
                    _call(client, method, url(spoiled), query(spoiled), body),
                )
                calls += 1
    assert calls > 1000


def test_every_api_route_is_versioned_tagged_summarised_and_the_old_paths_deprecated(
    schema: dict[str, Any],
) -> None:
    paths = schema["paths"]
    for path, method, operation in _operations(schema):
        assert operation.get("tags") and operation.get("summary"), f"{method} {path}"
        if path.startswith("/api/v1/"):
            assert not operation.get("deprecated"), path
            alias = path.replace("/api/v1/", "/api/", 1)
            assert paths[alias][method]["deprecated"] is True, alias
        elif path.startswith("/api/") and path != "/api/public/otel/v1/traces":
            assert path.replace("/api/", "/api/v1/", 1) in paths, f"{path} has no /api/v1 route"
    assert {"/v1/traces", "/v1/logs", "/v1/metrics"} <= set(paths)
    assert paths["/v1/traces"]["post"]["tags"] == ["otlp"]


def _time_parameters(schema: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for path, _method, operation in _operations(schema):
        for parameter in operation.get("parameters", []):
            if parameter["name"] in ("since", "until") and "{" not in path:
                yield path, parameter["name"]


@pytest.mark.parametrize(
    "moment",
    [
        (NOW - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        (NOW - timedelta(hours=2)).replace(tzinfo=None).isoformat(),
        str(int((NOW - timedelta(hours=2)).timestamp())),
        "2h",
    ],
    ids=["iso-utc", "iso-naive", "epoch-seconds", "duration"],
)
def test_since_and_until_take_iso_epoch_seconds_and_durations_on_every_route(
    client: TestClient, schema: dict[str, Any], trace_id: str, moment: str
) -> None:
    routes = list(_time_parameters(schema))
    assert {path for path, _ in routes} >= {
        "/api/v1/scores",
        "/api/v1/scores/summary",
        "/api/v1/coverage",
        "/api/v1/traces",
        "/api/v1/feedback",
        "/api/v1/calibration",
        "/api/v1/conversations",
        "/api/traces",
    }
    for path, name in routes:
        params = {name: moment, "binding": "quality"}
        if name == "until":
            params["since"] = "1d"
        response = client.get(path, params=params)
        assert response.status_code == 200, f"{path}?{name}={moment}: {response.text}"
    since = client.get("/api/v1/scores", params={"since": moment}).json()["items"]
    assert {item["trace_id"] for item in since} == {trace_id}
    assert client.get("/api/v1/scores", params={"until": moment}).json()["items"] == []


def test_a_bad_time_is_a_problem_naming_the_three_forms(client: TestClient) -> None:
    response = client.get("/api/v1/scores", params={"since": "yesterday"})
    assert response.status_code == 422
    problem = response.json()
    assert problem["type"] == "about:blank" and problem["title"].startswith("Unprocessable")
    assert problem["status"] == 422
    assert [error["loc"] for error in problem["errors"]] == [["query", "since"]]
    assert "epoch seconds" in problem["detail"] and "1h" in problem["detail"]


def test_every_v1_list_route_answers_items_and_a_cursor(
    client: TestClient, schema: dict[str, Any], trace_id: str
) -> None:
    lists = [
        path
        for path, method, _ in _operations(schema)
        if path.startswith("/api/v1/")
        and method == "get"
        and "{" not in path
        and path != "/api/v1/calibration"
    ]
    assert len(lists) >= 10
    for path in lists:
        body = client.get(path).json()
        assert isinstance(body["items"], list), path
        assert "next_cursor" in body, path
    assert [t["trace_id"] for t in client.get("/api/v1/traces").json()["items"]] == [trace_id]


def test_feedback_is_listed_back_under_its_binding(client: TestClient, trace_id: str) -> None:
    items = client.get(
        "/api/v1/feedback", params={"trace_id": trace_id, "binding": "quality"}
    ).json()["items"]
    assert [(item["binding"], item["value"]) for item in items if item["author"] == "ana"] == [
        ("quality", 0.5)
    ]


def test_the_summary_labels_its_series_by_binding(client: TestClient, trace_id: str) -> None:
    series = client.get("/api/v1/scores/summary", params={"since": "1h"}).json()["items"]
    assert sorted((row["binding"], row["mean"]) for row in series) == [
        ("quality", 0.75),
        ("relevance", 7.0),
    ]
    old = client.get("/api/scores/summary", params={"since": "1h"}).json()["series"]
    assert sorted(row["scorer"] for row in old) == ["answer-relevancy", "completeness"]


@pytest.mark.parametrize(
    ("binding", "value", "status"),
    [
        ("quality", 7, 422),
        ("quality", -0.1, 422),
        ("quality", 1, 201),
        ("relevance", 7, 201),
        ("relevance", 10.5, 422),
    ],
)
def test_feedback_is_checked_against_the_binding_scale(
    client: TestClient, trace_id: str, binding: str, value: float, status: int
) -> None:
    for prefix in ("/api/v1", "/api"):
        response = client.post(
            f"{prefix}/feedback",
            json={
                "trace_id": trace_id,
                "binding": binding,
                "value": value,
                "author": f"scale-{value}",
            },
        )
        assert response.status_code == status, response.text
        if status == 422:
            assert re.search(r"scores from 0 to (1|10)\b", response.json()["detail"])


def test_feedback_on_an_unknown_trace_is_not_found(client: TestClient, trace_id: str) -> None:
    response = client.post("/api/v1/feedback", json={**_feedback_body("ab" * 16)})
    assert response.status_code == 404
    assert response.json() == {
        "type": "about:blank",
        "title": "Not Found",
        "status": 404,
        "detail": f"trace {'ab' * 16} not found",
    }


def test_errors_under_api_are_problem_details_and_pages_keep_theirs(client: TestClient) -> None:
    for url in ("/api/v1/traces/" + "0" * 32, "/api/v1/feedback/" + "0" * 32):
        method = "DELETE" if "feedback" in url else "GET"
        response = client.request(method, url)
        assert response.headers["content-type"] == "application/problem+json", url
        assert set(response.json()) == {"type", "title", "status", "detail"}, url
    for url in ("/api/v1/traces/zz", "/api/traces/zz", "/api/v1/feedback/nothing"):
        method = "DELETE" if "feedback" in url else "GET"
        response = client.request(method, url)
        assert response.status_code == 422, url
        assert set(response.json()) == {"type", "title", "status", "detail", "errors"}, url
    assert client.get("/api/v1/traces", params={"limit": 0}).json()["errors"][0]["loc"] == [
        "query",
        "limit",
    ]
    too_large = client.post(
        "/api/v1/feedback", content=b" " * (2**20 + 1), headers={"Content-Type": "application/json"}
    )
    assert too_large.status_code == 413
    assert too_large.headers["content-type"] == "application/problem+json"
    assert too_large.json()["title"] == "Request Entity Too Large"
    page = client.get("/ui/traces/zz")
    assert page.status_code == 400 and page.headers["content-type"] == "application/json"


def test_the_docs_page_says_the_old_paths_are_deprecated() -> None:
    text = (REPO / "docs" / "rest-api.md").read_text()
    assert "/api/v1/" in text and "deprecated" in text


def test_traces_page_with_a_cursor_without_gaps_or_repeats(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'paged.db'}")
    try:
        rng = random.Random(7)
        for received_at in (100.0, 200.0, 200.0, 200.0, 300.0):  # ties on last activity too
            store.write(
                decode_traces_protobuf(export_request(agent_trace(rng).spans)).spans,
                received_at=received_at,
            )
        with TestClient(create_app(parse_config(CONFIG), store)) as client:
            everything = client.get("/api/v1/traces").json()
            assert everything["next_cursor"] is None and len(everything["items"]) == 5
            seen, cursor = [], None
            while True:
                page = client.get(
                    "/api/v1/traces", params={"limit": 2, **({"cursor": cursor} if cursor else {})}
                )
                seen += [trace["trace_id"] for trace in page.json()["items"]]
                if (cursor := page.json()["next_cursor"]) is None:
                    break
            assert seen == [trace["trace_id"] for trace in everything["items"]]
            assert client.get("/api/v1/traces", params={"cursor": "bm9wZQ=="}).status_code == 422
    finally:
        store.close()


def test_without_a_key_every_route_answers_a_documented_401(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'keyed.db'}")
    try:
        app = create_app(parse_config("server: {api_keys: [schema-walk-key]}\n" + CONFIG), store)
        with TestClient(app, raise_server_exceptions=False) as client:
            schema = app.openapi()
            for path, method, operation in _operations(schema):
                url = re.sub(r"\{[^}]+\}", "ab" * 16, path)
                body = {"content": b"{}", "headers": {"Content-Type": "application/json"}}
                response = client.request(method.upper(), url, **(body if method == "post" else {}))
                expected = 200 if path == "/healthz" else 401
                assert response.status_code == expected, f"{method} {path}: {response.text}"
                _check(schema, operation, path, response)
    finally:
        store.close()
