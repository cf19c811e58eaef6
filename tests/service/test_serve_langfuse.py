"""The Langfuse SDKs' native path on a real ``tracescore serve``: ``LANGFUSE_HOST`` pointed at it.

The SDK is no dependency of the project, so its exports are replayed: the capture bodies of
``tests/fixtures/captures/langfuse/`` with the exact headers the SDK sent them with
(``NNNN.headers.json``, recorded by ``_make/receiver.py --headers``: Basic auth with public key
``pk-lf-test`` and secret key ``sk-lf-test``, ``x-langfuse-*``, gzip from 5.x). One server has
``sk-lf-test`` as its API key, one has no key.
"""

from __future__ import annotations

import base64
import gzip
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.extract_support import WEATHER_ANSWER, WEATHER_USER
from tests.support.paths import CAPTURES
from tests.support.server_process import ServerProcess, start_server

PATH = "/api/public/otel/v1/traces"
SECRET = "sk-lf-test"  # the secret key the captures were made with
BEARER = {"authorization": f"Bearer {SECRET}"}
SCENARIOS = ["tool_call", "multi_turn", "tool_error", "tool_call_v5"]
MAX_BODY = 64 * 1024


def _basic(public: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{public}:{secret}".encode()).decode()


def _export(scenario: str) -> tuple[bytes, dict[str, str], list[str]]:
    """The capture's request as the SDK sent it: body (gzipped again when it was), headers,
    and the trace ids it holds."""
    folder = CAPTURES / "langfuse" / scenario
    recorded = json.loads((folder / "0001.headers.json").read_text())
    assert recorded["path"] == PATH
    headers = {k.lower(): v for k, v in recorded["headers"].items() if k.lower() != "connection"}
    body = (folder / "0001.pb").read_bytes()
    if headers.get("content-encoding") == "gzip":
        body = gzip.compress(body)
    document = json.loads((folder / "0001.json").read_text())
    trace_ids = sorted(
        {
            s["traceId"]
            for rs in document["resourceSpans"]
            for ss in rs["scopeSpans"]
            for s in ss["spans"]
        }
    )
    return body, headers, trace_ids


def _runs(client: httpx.Client, trace_id: str, timeout: float = 20.0) -> list[dict[str, Any]]:
    """The trace's primary runs once the acknowledged export has been stored."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(
            f"/api/traces/{trace_id}/runs", params={"primary": "true"}, headers=BEARER
        )
        if response.status_code == 200 and response.json():
            return response.json()
        assert time.monotonic() < deadline, (response.status_code, response.text)
        time.sleep(0.1)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {"server": {"api_keys": [SECRET], "max_body_bytes": MAX_BODY}}
    with start_server(tmp_path_factory.mktemp("langfuse-keyed"), config=config) as process:
        yield process


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_server(tmp_path_factory.mktemp("langfuse-open")) as process:
        yield process


@pytest.fixture(scope="module")
def client(keyed: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=keyed.base_url, timeout=10) as http:
        yield http


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_sdks_export_as_sent_lands_its_runs(client: httpx.Client, scenario: str) -> None:
    body, headers, trace_ids = _export(scenario)
    response = client.post(PATH, content=body, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/x-protobuf"
    assert response.content == b""  # an ExportTraceServiceResponse with nothing rejected
    runs = [run for trace_id in trace_ids for run in _runs(client, trace_id)]
    assert [(r["kind"], r["agentName"], r["convention"]) for r in runs] == [
        ("agent", "WeatherBot", "langfuse")
    ] * len(trace_ids)
    first = min(runs, key=lambda r: r["startTime"])
    assert first["input"]["inputMessages"][0]["content"]["content"].startswith("What's the weather")
    assert first["conversationId"].startswith("session-lf-")
    calls = first["output"][0]["content"]["toolInvocations"]
    assert calls[-1]["toolName"] == "get_weather" and calls[-1]["state"] == "result"
    if scenario in ("tool_call", "tool_call_v5"):
        assert first["input"]["inputMessages"][0]["content"]["content"] == WEATHER_USER
        assert first["output"][0]["content"]["content"].startswith(WEATHER_ANSWER)


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        _basic("pk-lf-test", "sk-wrong"),
        _basic(SECRET, "pk-lf-test"),
        _basic("pk-lf-test", ""),
        "Basic !!!not-base64",
        f"Bearer {SECRET[:-1]}",
        SECRET,
    ],
    ids=["none", "wrong-secret", "swapped", "empty-secret", "garbage", "wrong-bearer", "bare"],
)
def test_without_the_secret_key_as_password_the_export_is_401_and_not_stored(
    client: httpx.Client, authorization: str | None
) -> None:
    body, headers, (trace_id,) = _export("tool_call")
    headers = {k: v for k, v in headers.items() if k != "authorization"}
    if authorization is not None:
        headers["authorization"] = authorization
    fresh = "f" * 32  # the capture's own trace may be stored by another test
    body = body.replace(bytes.fromhex(trace_id), bytes.fromhex(fresh))
    response = client.post(PATH, content=body, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Basic realm="tracescore"'
    assert client.get(f"/api/traces/{fresh}", headers=BEARER).status_code == 404


def test_a_bearer_key_works_there_too_and_basic_auth_nowhere_else(client: httpx.Client) -> None:
    body, headers, _ = _export("tool_call")
    headers = {**headers, **BEARER}
    assert client.post(PATH, content=body, headers=headers).status_code == 200
    basic = {"authorization": _basic("pk-lf-test", SECRET)}
    assert client.get("/api/traces", headers=basic).status_code == 401
    assert (
        client.post(
            "/v1/traces", content=body, headers={"content-type": "application/x-protobuf", **basic}
        ).status_code
        == 401
    )


def test_the_body_is_not_read_before_authentication(keyed: ServerProcess) -> None:
    """Headers announcing a body that never comes: the refusal does not wait for it."""
    request = (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/x-protobuf\r\nContent-Length: {MAX_BODY - 1}\r\n"
        f"Authorization: {_basic('pk-lf-test', 'sk-wrong')}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", keyed.http_port), timeout=5) as sock:
        sock.sendall(request)
        answer = sock.recv(4096)  # the socket's 5 s timeout: waiting for the body would hit it
        assert answer.startswith(b"HTTP/1.1 401"), answer


def test_the_same_bounds_and_answers_as_v1_traces(client: httpx.Client) -> None:
    body, headers, _ = _export("tool_call")
    too_big = client.post(PATH, content=b"\0" * (MAX_BODY + 1), headers=headers)
    bomb = client.post(
        PATH,
        content=gzip.compress(b"\0" * (MAX_BODY * 4)),
        headers={**headers, "content-encoding": "gzip"},
    )
    not_otlp = client.post(PATH, content=b"\x0a\xff\xff", headers=headers)
    wrong_type = client.post(PATH, content=body, headers={**headers, "content-type": "text/plain"})
    for path in (PATH, "/v1/traces"):
        assert [
            client.post(
                path, content=b"\0" * (MAX_BODY + 1), headers={**headers, **BEARER}
            ).status_code,
            client.post(
                path, content=body, headers={**headers, **BEARER, "content-type": "text/plain"}
            ).status_code,
        ] == [413, 415]
    assert [
        too_big.status_code,
        bomb.status_code,
        not_otlp.status_code,
        wrong_type.status_code,
    ] == [413, 413, 400, 415]
    as_json = client.post(
        PATH,
        content=(CAPTURES / "langfuse" / "tool_call" / "0001.json").read_bytes(),
        headers={**headers, "content-type": "application/json"},
    )
    assert as_json.status_code == 200 and as_json.headers["content-type"] == "application/json"


def test_with_no_key_configured_the_path_is_as_open_as_v1_traces(
    open_server: ServerProcess,
) -> None:
    body, headers, (trace_id,) = _export("tool_call_v5")
    with httpx.Client(base_url=open_server.base_url, timeout=10) as http:
        assert http.post(PATH, content=body, headers=headers).status_code == 200  # its Basic auth
        anonymous = {k: v for k, v in headers.items() if k != "authorization"}
        assert http.post(PATH, content=body, headers=anonymous).status_code == 200
        (run,) = _runs(http, trace_id)
    assert (run["kind"], run["agentName"], run["conversationId"]) == (
        "agent",
        "WeatherBot",
        "session-lf-tool_call",
    )
