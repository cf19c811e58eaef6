"""Connections that never finish a request are closed within the configured time, on a real
``tracescore serve``: an idle socket, half-sent headers (first request or a later one on a
keep-alive connection), a connection idle after a response, and on the gRPC port a socket that
never starts HTTP/2 (issue 33, item 7: 1,000 idle sockets and 500 half-sent headers stayed open).
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator

import grpc
import pytest

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.server_process import ServerProcess, start_server
from tracescore.config import ConfigError, parse_config

HEADER_TIMEOUT = 1.0
KEEP_ALIVE = 1.0
BOUND = 4.0  # the configured time plus margin for a loaded machine
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {"server": {"header_timeout": HEADER_TIMEOUT, "keep_alive_timeout": KEEP_ALIVE}}
    with start_server(tmp_path_factory.mktemp("limits"), config=config) as process:
        yield process


def _closed_after(sock: socket.socket) -> float:
    """Seconds until the server closes ``sock`` (reading and discarding what it sends)."""
    start = time.monotonic()
    sock.settimeout(BOUND + 10)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        raise AssertionError(f"still open after {time.monotonic() - start:.1f} s") from None
    except ConnectionResetError:
        pass
    return time.monotonic() - start


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def test_a_socket_that_sends_nothing_is_closed(server: ServerProcess) -> None:
    with _connect(server.http_port) as sock:
        assert _closed_after(sock) < BOUND


def test_half_sent_headers_are_closed(server: ServerProcess) -> None:
    with _connect(server.http_port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        time.sleep(HEADER_TIMEOUT / 2)
        sock.sendall(b"X-Slow: 1\r\n")  # bytes trickling in do not extend the deadline
        assert _closed_after(sock) < BOUND


def test_an_idle_keep_alive_connection_and_a_half_sent_next_request_are_closed(
    server: ServerProcess,
) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with _connect(server.http_port) as sock:
        sock.sendall(request)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        assert _closed_after(sock) < BOUND
    with _connect(server.http_port) as sock:
        sock.sendall(request)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        assert _closed_after(sock) < BOUND


def test_a_body_slower_than_the_header_timeout_still_arrives(server: ServerProcess) -> None:
    """The header deadline ends with the headers: the body has its own limits."""
    body = export_request(agent_trace(random.Random(7)).spans)
    with _connect(server.http_port) as sock:
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        time.sleep(HEADER_TIMEOUT * 2)
        sock.sendall(body)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_a_grpc_socket_that_never_starts_http2_is_closed_and_exports_work(
    server: ServerProcess,
) -> None:
    with _connect(server.grpc_port) as sock:
        assert _closed_after(sock) < BOUND
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        export = channel.unary_unary(
            TRACE_EXPORT, request_serializer=None, response_deserializer=None
        )
        export(export_request(agent_trace(random.Random(8)).spans), timeout=10)


def test_the_limits_are_validated() -> None:
    with pytest.raises(ConfigError, match=r"server\.header_timeout"):
        parse_config("server: {header_timeout: 0}")
