"""Guessing keys is slowed per client address on every surface, and dashboard logins are
sessions that expire and that a logout ends on every replica (issue 33, item 6: 3,000 wrong
keys at 431/s all answered 401 and the right key worked at once after; the login cookie was a
fixed HMAC of the key, never expiring, unrevocable).

Clients come from distinct loopback addresses (Linux routes all of 127.0.0.0/8 locally), so
each test's address has its own count on the one server.
"""

from __future__ import annotations

import random
import re
import secrets
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.server_process import ServerProcess, login_session, start_server
from tracescore.auth import FailedAttempts
from tracescore.web.auth import COOKIE_NAME

KEY = f"tsk-limits-{secrets.token_hex(12)}"
LIMIT = 5
WINDOW = 4.0
LIFETIME = 3.0
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {
        "server": {
            "api_keys": [KEY],
            "auth_failures": LIMIT,
            "auth_failure_window": WINDOW,
            "session_lifetime": LIFETIME,
        }
    }
    with start_server(tmp_path_factory.mktemp("limits"), config=config) as process:
        yield process


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _cookie(session: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE_NAME}={session}"}


def _metric(server: ServerProcess, name: str, surface: str) -> float:
    with server.client_from("127.0.0.99") as client:
        text = client.get("/metrics", headers=_bearer(KEY)).text
    found = re.search(rf'^{name}_total{{surface="{surface}"}} (\S+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_wrong_keys_past_the_limit_refuse_the_address_unchecked_for_the_window(
    server: ServerProcess,
) -> None:
    failures = _metric(server, "tracescore_auth_failures", "http")
    with server.client_from("127.0.0.2") as client, server.client_from("127.0.0.3") as bystander:
        for _ in range(LIMIT):
            assert client.get("/api/traces", headers=_bearer("wrong")).status_code == 401
        started = time.monotonic()
        for _ in range(20):  # the right key too: a guess tells nothing now
            refused = client.get("/api/traces", headers=_bearer(KEY))
            assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= WINDOW
        assert client.post("/v1/traces", content=b"", headers=_bearer(KEY)).status_code == 429
        assert bystander.get("/api/traces", headers=_bearer(KEY)).status_code == 200
        time.sleep(max(0.0, WINDOW - (time.monotonic() - started)) + 0.5)
        assert client.get("/api/traces", headers=_bearer(KEY)).status_code == 200
    assert _metric(server, "tracescore_auth_failures", "http") == failures + LIMIT
    assert _metric(server, "tracescore_auth_throttled", "http") >= 21
    warnings = [
        line for line in server.output().splitlines() if "127.0.0.2: 5 failed key checks" in line
    ]
    assert len(warnings) == 1, warnings  # once per client per window, not per attempt


def test_the_login_form_is_limited_too(server: ServerProcess) -> None:
    with server.client_from("127.0.0.4") as client:
        for _ in range(LIMIT):
            assert client.post("/ui/login", data={"key": "guess", "next": "/"}).status_code == 401
        assert client.post("/ui/login", data={"key": KEY, "next": "/"}).status_code == 429
        assert client.get("/", headers=_bearer(KEY)).status_code == 429
    assert _metric(server, "tracescore_auth_failures", "login") >= LIMIT


def test_grpc_wrong_keys_are_limited_and_share_the_count_with_http(server: ServerProcess) -> None:
    body = export_request(agent_trace(random.Random(3)).spans)
    with grpc.insecure_channel(server.grpc_endpoint) as channel:  # from 127.0.0.1
        export = channel.unary_unary(
            TRACE_EXPORT, request_serializer=None, response_deserializer=None
        )
        export(body, metadata=(("authorization", f"Bearer {KEY}"),), timeout=10)
        for _ in range(LIMIT):
            with pytest.raises(grpc.RpcError) as refused:
                export(body, metadata=(("authorization", "Bearer wrong"),), timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as throttled:
            export(body, metadata=(("authorization", f"Bearer {KEY}"),), timeout=10)
        assert throttled.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert httpx.get(f"{server.base_url}/api/traces", headers=_bearer(KEY)).status_code == 429
    # 127.0.0.1 stays refused for the window: the tests after this one come from addresses
    # of their own.


def test_sessions_are_random_work_on_every_replica_and_end_everywhere_on_logout(
    server: ServerProcess, tmp_path_factory: pytest.TempPathFactory
) -> None:
    address = "127.0.0.6"
    config = {"server": {"api_keys": [KEY], "session_lifetime": LIFETIME}}
    with start_server(
        tmp_path_factory.mktemp("replica"), db_url=server.db_url, config=config
    ) as replica:
        first = login_session(server.base_url, KEY, address)
        second = login_session(server.base_url, KEY, address)
        assert first != second and KEY not in first
        with server.client_from(address) as here, replica.client_from(address) as there:
            for client in (here, there):
                assert client.get("/ui/live", headers=_cookie(first)).status_code == 200
            out = there.post("/ui/logout", headers=_cookie(first))
            assert out.status_code == 303
            for client in (here, there):
                assert client.get("/ui/live", headers=_cookie(first)).status_code == 401
                assert client.get("/ui/live", headers=_cookie(second)).status_code == 200


def test_a_session_expires(server: ServerProcess) -> None:
    cookie = login_session(server.base_url, KEY, "127.0.0.5")
    with server.client_from("127.0.0.5", cookies={COOKIE_NAME: cookie}) as client:
        assert client.get("/ui/live").status_code == 200
        time.sleep(LIFETIME + 0.5)
        assert client.get("/ui/live").status_code == 401
        assert client.get("/", follow_redirects=False).status_code == 303


def test_failed_attempts_reset_with_the_window_and_stay_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    attempts = FailedAttempts(limit=3, window=10.0, clock=lambda: now[0])
    for _ in range(2):
        attempts.failed("10.0.0.1", "http")
    assert attempts.refused_for("10.0.0.1") == 0.0
    attempts.failed("10.0.0.1", "http")
    assert attempts.refused_for("10.0.0.1") == 10.0 and attempts.refused_for("10.0.0.2") == 0.0
    now[0] += 10.0
    assert attempts.refused_for("10.0.0.1") == 0.0
    attempts.failed("10.0.0.1", "http")  # a new window: one failure, not four
    assert attempts.refused_for("10.0.0.1") == 0.0

    monkeypatch.setattr(FailedAttempts, "_MAX_CLIENTS", 100)
    for _ in range(3):
        attempts.failed("10.0.0.9", "http")  # refused: kept however many others come
    for index in range(500):
        attempts.failed(f"10.1.{index // 256}.{index % 256}", "http")
    assert len(attempts._clients) <= 101
    assert attempts.refused_for("10.0.0.9") > 0
