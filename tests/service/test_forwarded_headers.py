"""``X-Forwarded-For`` names the client only when a configured proxy sends it (issue 46, item 5:
uvicorn's default trusted it from 127.0.0.1, so a local client rotating the header made 2,000
wrong Basic passwords on the Langfuse path without one 429 and took 15 of 20 upload slots).

Clients come from distinct loopback addresses (Linux routes all of 127.0.0.0/8 locally): the
proxy is 127.0.0.5, everyone else is a direct peer.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import random
import secrets
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.server_process import ServerProcess, start_server
from tracescore.ingest.http import LANGFUSE_TRACES_PATH

KEY = f"tsk-forwarded-{secrets.token_hex(12)}"
LIMIT = 5
PROXY = "127.0.0.5"
PROTOBUF = "application/x-protobuf"
READERS = 8
"""``max_body_readers``: an address's share is half of them."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {
        "server": {
            "api_keys": [KEY],
            "auth_failures": LIMIT,
            "auth_failure_window": 60.0,
            "max_pending_requests": 2,
            "max_body_readers": READERS,
            "forwarded_allow_ips": [PROXY],
        }
    }
    with start_server(tmp_path_factory.mktemp("forwarded"), config=config) as process:
        yield process


_forged = (f"198.51.100.{n % 250 + 1}" for n in itertools.count())


def _wrong_basic(client: httpx.Client, forwarded_for: str) -> int:
    password = secrets.token_hex(8)
    credentials = base64.b64encode(f"pk-lf-x:{password}".encode()).decode()
    headers = {
        "Authorization": f"Basic {credentials}",
        "Content-Type": PROTOBUF,
        "X-Forwarded-For": forwarded_for,
    }
    return client.post(LANGFUSE_TRACES_PATH, content=b"", headers=headers).status_code


def test_the_configured_proxy_names_the_client(server: ServerProcess) -> None:
    with server.client_from(PROXY) as proxy:
        # Clients behind the proxy each have their own count ...
        assert [_wrong_basic(proxy, next(_forged)) for _ in range(3 * LIMIT)] == [401] * 15
        # ... and one of them is locked out by its own failures, under its own address, the
        # proxy's further entries on the right (it appends the peer it saw) skipped.
        client = next(_forged)
        chain = f"203.0.113.9, {client}, {PROXY}"
        assert [_wrong_basic(proxy, chain) for _ in range(LIMIT + 3)] == [401] * LIMIT + [429] * 3
        assert f"{client}: {LIMIT} failed key checks" in server.output()
        valid = {"Authorization": f"Bearer {KEY}", "X-Forwarded-For": next(_forged)}
        assert proxy.get("/api/v1/traces", headers=valid).status_code == 200


def _stall(server: ServerProcess, address: str, forwarded_for: str) -> socket.socket:
    """An upload with a valid key whose body never comes: it holds a body reader."""
    sock = socket.create_connection(("127.0.0.1", server.http_port), 10, (address, 0))
    sock.sendall(
        f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
        f"Authorization: Bearer {KEY}\r\nX-Forwarded-For: {forwarded_for}\r\n"
        "Content-Length: 100000\r\n\r\n\n".encode()
    )
    return sock


def test_a_rotating_header_from_a_direct_peer_changes_nothing(server: ServerProcess) -> None:
    """From 127.0.0.1, the address uvicorn itself would trust: the forged addresses take no
    more upload slots than the peer's share, and its wrong keys lock the peer out."""
    peer = "127.0.0.1"
    stalled = [_stall(server, peer, next(_forged)) for _ in range(READERS)]
    try:
        refused = 0
        for sock in stalled:
            sock.settimeout(0.5)
            with contextlib.suppress(TimeoutError):  # a timeout: held, receiving its body
                refused += sock.recv(4096).startswith(b"HTTP/1.1 503")
        assert refused == READERS - READERS // 2
        rng = random.Random(46)
        with server.client_from("127.0.0.4") as exporter:
            for _ in range(3):
                response = exporter.post(
                    "/v1/traces",
                    content=export_request(agent_trace(rng).spans),
                    headers={"Content-Type": PROTOBUF, "Authorization": f"Bearer {KEY}"},
                )
                assert response.status_code == 200, response.text
                time.sleep(0.1)
    finally:
        for sock in stalled:
            sock.close()
    with server.client_from(peer) as client:
        statuses = [_wrong_basic(client, next(_forged)) for _ in range(LIMIT + 20)]
    assert statuses == [401] * LIMIT + [429] * 20
    # The lockout is logged under the peer's own address, not under a forged one.
    assert f"{peer}: {LIMIT} failed key checks" in server.output()
