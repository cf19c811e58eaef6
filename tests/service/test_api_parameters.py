"""Every parameter of every ``/api/v1`` route is read into its valid range before it reaches a
query (issue 46, item 2), on SQLite and PostgreSQL: a property test over the routes and
parameters the app's OpenAPI schema lists (a new route is covered as it is added) asserts no 5xx,
and the probe's out-of-range requests answer a 422 problem that names the parameter.

Values are drawn from what broke the service before (times past the ends of Python's and the
databases' ranges, durations of 10^11 days, integers past BIGINT, NUL characters and unpaired
surrogates in bodies, cursors holding any of these) and from hypothesis' own text and numbers.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.score_streams import insert_rows, score_row
from tracescore.config import parse_config
from tracescore.cursors import encode_cursor
from tracescore.ingest.decode import decode_traces_protobuf
from tracescore.service import create_app
from tracescore.store import SpanStore

CONFIG = """
scorers:
  - {name: quality, scorer: completeness, threshold: 0.6}
alerts:
  rules:
    - {name: low-quality, type: threshold, binding: quality, below: 0.5}
"""
FAR_TIMES = [
    "99999999999d",
    "9223372036854775807s",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59-14:00",
    "1e400",
    "-1",
    "99999999999",
]
"""Times and durations outside what any query can hold: the probe's, and their neighbours."""
HOSTILE = [
    *FAR_TIMES,
    str(2**63),
    str(2**70),
    str(-(2**70)),
    "0",
    "nan",
    "inf",
    "-inf",
    "1e309",
    "a\x00b",
    "\x00",
    "",
    "1h",
    "ff" * 16,
    "x" * 5000,
]
HOSTILE_JSON: list[Any] = [
    "a\x00b",
    "\ud800",
    {"\x00": "x"},
    2**70,
    -(2**70),
    float("nan"),
    float("inf"),
    1e308,
    "9999-12-31T23:59:59Z",
    "99999999999d",
    [],
    {},
    None,
    True,
]
CURSOR_PARTS = [
    "-5",
    str(2**63),
    str(2**70),
    "nan",
    "inf",
    "1e400",
    "²",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-14:00",
    "\x00",
]


def _cursors() -> st.SearchStrategy[str]:
    part = st.sampled_from(CURSOR_PARTS) | st.text(max_size=20)
    return st.lists(part, min_size=1, max_size=3).map(lambda parts: encode_cursor(*parts))


VALUES = st.sampled_from(HOSTILE) | st.text(max_size=30) | st.integers().map(str) | _cursors()


@pytest.fixture
def client(store: SpanStore) -> Iterator[TestClient]:
    with TestClient(
        create_app(parse_config(CONFIG), store), raise_server_exceptions=False
    ) as client:
        yield client


@pytest.fixture
def known(store: SpanStore) -> dict[str, str]:
    """Ids that exist, so that a request with the others' values valid reaches its query."""
    trace = agent_trace(random.Random(46))
    store.write(decode_traces_protobuf(export_request(trace.spans)).spans)
    now = datetime.now(UTC)
    insert_rows(
        store.engine,
        [score_row(now - timedelta(minutes=m), 0.5, trace_id=trace.trace_id) for m in range(5)],
    )
    return {"trace_id": trace.trace_id, "binding": "quality", "rule": "low-quality"}


BODIES: dict[str, dict[str, Any]] = {
    "/api/v1/feedback": {"binding": "quality", "value": 0.5, "label": "pass", "author": "ana"},
    "/api/v1/alerts/silences": {"rule": "low-quality", "duration": "1h", "note": "deploy"},
}
"""A valid body of each route that takes one (the trace id is added where it is known)."""


def _operations(client: TestClient) -> list[tuple[str, str, list[dict[str, Any]], bool]]:
    schema = client.app.openapi()  # type: ignore[attr-defined]
    return [
        (path, method, operation.get("parameters", []), "requestBody" in operation)
        for path, item in schema["paths"].items()
        if path.startswith("/api/v1/")
        for method, operation in item.items()
    ]


def _request(
    client: TestClient,
    path: str,
    method: str,
    values: dict[str, str],
    parameters: list[dict[str, Any]],
    body: Any,
) -> Any:
    for parameter in parameters:
        if parameter["in"] == "path":
            value = quote(values.get(parameter["name"], "x"), safe="") or "%20"
            path = path.replace("{" + parameter["name"] + "}", value)
    query = {
        p["name"]: values[p["name"]]
        for p in parameters
        if p["in"] == "query" and p["name"] in values
    }
    content = {} if body is ... else {"content": json.dumps(body), "headers": _JSON}
    return client.request(method.upper(), path, params=query, **content)


_JSON = {"Content-Type": "application/json"}


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_parameter_of_any_route_answers_5xx(
    client: TestClient, known: dict[str, str], data: st.DataObject
) -> None:
    path, method, parameters, has_body = data.draw(st.sampled_from(_operations(client)))
    values = {}
    for parameter in parameters:
        name = parameter["name"]
        choice = data.draw(st.sampled_from(["absent", "known", "hostile"]))
        if choice == "hostile" or (choice == "absent" and parameter.get("required")):
            values[name] = data.draw(VALUES)
        elif choice == "known" and name in known:
            values[name] = known[name]
    body: Any = ...
    if has_body:
        body = {**BODIES.get(path, {}), "trace_id": known["trace_id"]}
        if body and data.draw(st.booleans()):
            field = data.draw(st.sampled_from(sorted(body)))
            body[field] = data.draw(st.sampled_from(HOSTILE_JSON) | st.text(max_size=20))
    response = _request(client, path, method, values, parameters, body)
    assert response.status_code < 500, (
        f"{method.upper()} {response.request.url} {body!r} -> {response.status_code}: "
        f"{response.text[:300]}"
    )


def test_every_route_is_drawn_from(client: TestClient) -> None:
    """The routes with a body have a valid one above to spoil (a new one needs its own)."""
    with_body = {path for path, _, _, has_body in _operations(client) if has_body}
    assert with_body == set(BODIES)


def _time_routes(client: TestClient) -> list[tuple[str, str]]:
    return [
        (path, parameter["name"])
        for path, method, parameters, _ in _operations(client)
        if method == "get" and "{" not in path
        for parameter in parameters
        if parameter["name"] in ("since", "until")
    ]


@pytest.mark.parametrize("moment", FAR_TIMES)
def test_out_of_range_times_are_a_problem_naming_the_parameter(
    client: TestClient, moment: str
) -> None:
    routes = _time_routes(client)
    assert len(routes) >= 10
    for path, name in routes:
        response = client.get(path, params={name: moment, "binding": "quality"})
        assert response.status_code == 422, f"{path}?{name}={moment}: {response.text}"
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["detail"].startswith(f"{name}: "), response.text


@pytest.mark.parametrize(
    ("method", "path", "body", "named"),
    [
        ("post", f"/api/v1/ingest/quarantine/{2**70}/requeue", None, "seq"),
        ("delete", f"/api/v1/alerts/silences/{2**63}", None, "silence_id"),
        ("get", "/api/v1/scores/summary?bucket=99999999999d", None, "bucket"),
        ("get", "/api/v1/compare?threshold=nan", None, "threshold"),
        ("get", "/api/v1/calibration?binding=quality&threshold=inf", None, "threshold"),
        (
            "post",
            "/api/v1/alerts/silences",
            {"rule": "low\x00quality", "duration": "1h"},
            "rule holds a NUL",
        ),
        (
            "post",
            "/api/v1/alerts/silences",
            {"rule": "low-quality", "duration": "1h", "segment": {"agent": "\ud800"}},
            "segment.agent holds an unpaired surrogate",
        ),
        (
            "post",
            "/api/v1/feedback",
            {"trace_id": "ab" * 16, "name": "thumbs", "label": "up", "comment": "a\x00b"},
            "comment holds a NUL",
        ),
    ],
)
def test_out_of_range_ids_numbers_and_text_are_a_problem_naming_them(
    client: TestClient, method: str, path: str, body: Any, named: str
) -> None:
    content = {} if body is None else {"content": json.dumps(body), "headers": _JSON}
    response = client.request(method.upper(), path, **content)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert named in response.json()["detail"], response.text


FLOAT_KEYED = {"/api/v1/traces"}
"""Routes whose cursor holds seconds as a float: -5 and 2^70 are seconds there, only past."""


def test_a_cursor_holding_any_value_is_a_problem(client: TestClient, known: dict[str, str]) -> None:
    for route in ("/api/v1/scores", "/api/v1/traces", "/api/v1/conversations", "/api/v1/insights"):
        for part in CURSOR_PARTS:
            for cursor in (
                encode_cursor(part, "x"),
                encode_cursor(part),
                encode_cursor(part, "x", "y"),
            ):
                response = client.get(route, params={"cursor": cursor})
                numeric = part.lstrip("-").isdigit()
                expected = {200, 422} if route in FLOAT_KEYED and numeric else {422}
                assert response.status_code in expected, f"{route} {part!r}: {response.text}"
