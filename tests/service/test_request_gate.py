"""No request body is read before its key is checked, none beyond its size limit, on every
route that takes one; ``HEAD`` wherever ``GET`` is; ``/healthz`` tells a stranger only that the
service lives. On a real ``tracescore serve``, with keys and without (issue 33, items 2 and 8).

Before: FastAPI parsed ``POST /api/feedback``'s JSON before its router's key check, and the
login and review forms read whole bodies: a keyless 1 GiB request cost the service 3 GB.
"""

from __future__ import annotations

import secrets
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server_process import ServerProcess, post_chunked, start_server

KEY = f"tsk-gate-{secrets.token_hex(12)}"
LIMIT = 64 * 1024
TRACE_ID = "ab" * 16
FORM = "application/x-www-form-urlencoded"
# Every route that reads a body, but OTLP export (its own receiver, tested elsewhere).
BODY_ROUTES = [
    ("POST", "/api/feedback"),
    ("POST", f"/ui/review/{TRACE_ID}"),
    ("POST", "/api/ingest/quarantine/1/requeue"),
    ("DELETE", "/api/feedback/1"),
    ("POST", "/ui/logout"),
    ("PUT", "/api/traces"),
]
GIB = 2**30


def _server(workdir: Path, keys: list[str]) -> ServerProcess:
    config = {"server": {"api_keys": keys, "max_api_body_bytes": LIMIT}}
    return start_server(workdir, config=config)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with _server(tmp_path_factory.mktemp("keyed"), [KEY]) as server:
        yield server


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with _server(tmp_path_factory.mktemp("open"), []) as server:
        yield server


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _answer_while_sending(
    port: int, method: str, path: str, headers: dict[str, str], declared: int | None
) -> tuple[bytes, int]:
    """Send a request declaring a ``declared``-byte body (None: chunked, of no announced
    size) and keep sending zeros until the server answers; returns the answer's first bytes
    and how many body bytes went out.

    On a server that reads the body first, nothing comes back until all of it is sent: the
    test then fails on the byte budget (64 MiB) instead of sending a whole gibibyte. Reading
    the answer as soon as it comes, rather than after sending, is what a client must do with
    a server that closes a connection it will not read further."""
    framing = "Transfer-Encoding: chunked" if declared is None else f"Content-Length: {declared}"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        head = [
            f"{method} {path} HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            framing,
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.setblocking(False)
        chunk = bytes(64 * 1024)
        if declared is None:
            chunk = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        sent = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and sent < 64 * 2**20:
            readable, writable, _ = select.select([sock], [sock], [], 1.0)
            if readable:
                sock.setblocking(True)
                return sock.recv(4096), sent
            if writable:
                try:
                    sent += sock.send(chunk)
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:  # closed by the server: its answer may still be readable
                    continue
        raise AssertionError(f"no answer after {sent} body bytes sent")


@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
def test_a_gibibyte_without_a_key_is_refused_unread(
    keyed: ServerProcess, method: str, path: str
) -> None:
    before = _rss(keyed.process.pid)
    answer, sent = _answer_while_sending(
        keyed.http_port, method, path, {"Content-Type": "application/json"}, GIB
    )
    status = answer.split(b" ", 2)[1]
    assert status == (b"303" if path.startswith("/ui/") else b"401"), answer
    assert b"connection: close" in answer.lower()
    assert sent < 16 * 2**20, f"{sent} body bytes went out before the answer"
    assert _rss(keyed.process.pid) - before < 16 * 2**20


def test_a_wrong_key_or_a_forged_cookie_is_refused_unread_too(keyed: ServerProcess) -> None:
    for headers in ({"Authorization": "Bearer nope"}, {"Cookie": "tracescore_session=00"}):
        answer, _ = _answer_while_sending(keyed.http_port, "POST", "/api/feedback", headers, GIB)
        assert answer.startswith(b"HTTP/1.1 401"), answer


def test_the_open_login_form_is_size_capped_from_its_headers(keyed: ServerProcess) -> None:
    answer, sent = _answer_while_sending(
        keyed.http_port, "POST", "/ui/login", {"Content-Type": FORM}, GIB
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert sent < 16 * 2**20


@pytest.mark.parametrize("which", ["keyed", "open"])
def test_chunked_bodies_past_the_limit_are_413(
    keyed: ServerProcess, open_server: ServerProcess, which: str
) -> None:
    server = keyed if which == "keyed" else open_server
    routes = [("/ui/login", FORM)] + (
        [("/api/feedback", "application/json")] if which == "open" else []
    )
    for path, media_type in routes:
        answer, sent = _answer_while_sending(
            server.http_port, "POST", path, {"Content-Type": media_type}, None
        )
        assert answer.startswith(b"HTTP/1.1 413"), answer
        assert sent < 16 * 2**20
    status, _, _ = post_chunked(
        server.http_port, "/ui/login", b"key=" + b"x" * (LIMIT // 2), FORM, 8192
    )
    assert status in (401, 303)  # within the limit: read, and answered as a login


def test_with_a_key_bodies_within_the_limit_work_and_larger_ones_are_413(
    keyed: ServerProcess,
) -> None:
    feedback = {
        "trace_id": TRACE_ID,
        "binding": None,
        "name": "helpful",
        "value": 1.0,
        "author": "t",
    }
    with httpx.Client(
        base_url=keyed.base_url, headers={"Authorization": f"Bearer {KEY}"}
    ) as client:
        assert client.post("/api/feedback", json=feedback).status_code == 201
        too_big = client.post("/api/feedback", json={**feedback, "comment": "x" * LIMIT})
        assert too_big.status_code == 413
        assert client.post("/ui/login", data={"key": KEY, "next": "/"}).status_code == 303


def test_without_keys_bodies_are_capped_too(open_server: ServerProcess) -> None:
    answer, sent = _answer_while_sending(
        open_server.http_port, "POST", "/api/feedback", {"Content-Type": "application/json"}, GIB
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert sent < 16 * 2**20


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/api/traces",
        "/api/scores/summary",
        "/ui/alerts",
        "/healthz",
        "/metrics",
        "/ui/login",
        "/ui/static/style.css",
    ],
)
def test_head_answers_wherever_get_does(keyed: ServerProcess, path: str) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    got = httpx.get(keyed.base_url + path, headers=headers)
    head = httpx.head(keyed.base_url + path, headers=headers)
    assert head.status_code == got.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert httpx.head(keyed.base_url + "/api/traces").status_code == 401


def test_healthz_tells_a_stranger_only_that_the_service_lives(
    keyed: ServerProcess, open_server: ServerProcess
) -> None:
    assert httpx.get(f"{keyed.base_url}/healthz").json() == {"status": "ok"}
    assert httpx.get(
        f"{keyed.base_url}/healthz", headers={"Authorization": "Bearer no"}
    ).json() == {"status": "ok"}
    told = httpx.get(f"{keyed.base_url}/healthz", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert (
        told["pid"] == keyed.process.pid and told["database"] == "sqlite" and told["in_flight"] == 0
    )
    assert httpx.get(f"{open_server.base_url}/healthz").json()["pid"] == open_server.process.pid
