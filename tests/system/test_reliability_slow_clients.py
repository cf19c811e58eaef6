"""Slow and stalled HTTP uploads against a real ``tracescore serve``: they are answered 408 once
their body misses the read deadline or the minimum rate, they never hold the admission slots
valid exports need (OTLP/HTTP and OTLP/gRPC keep being accepted meanwhile), and a client that
goes away mid-body costs one log line, not a traceback.

The stalled uploads are what a slowloris attacker (or a broken proxy) sends: headers announcing
``Content-Length: 1000``, one body byte, then nothing, with the connection kept open.
"""

from __future__ import annotations

import random
import socket
import time
from pathlib import Path

import grpc
import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.server_process import ServerProcess, start_server

STALLED = 64  # as many as the default max_pending_requests: before the fix, every slot
BODY_TIMEOUT = 6.0
PROTOBUF = "application/x-protobuf"
_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def stalled_upload(
    port: int, announced: int = 1000, sent: bytes = b"\n", close: bool = False
) -> socket.socket:
    """A POST whose headers promise ``announced`` body bytes, of which only ``sent`` follow.
    ``close``: it asks the server to close the connection after its answer (``Connection:
    close``), which :func:`status_line` then sees at once, not after the keep-alive timeout."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    connection = "Connection: close\r\n" if close else ""
    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {PROTOBUF}\r\n"
        f"Content-Length: {announced}\r\n{connection}\r\n"
    )
    sock.sendall(head.encode() + sent)
    return sock


def answered(sock: socket.socket) -> bool:
    """Whether the server has written anything (or closed) on ``sock`` yet, without waiting."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) is not None
    except BlockingIOError:
        return False
    finally:
        sock.setblocking(True)


def status_line(sock: socket.socket, timeout: float) -> str:
    """The first line of the server's answer on ``sock``, read until the server closes the
    connection (a timeout here means it kept the connection of an unfinished body open)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        # The server closed with some of the cut body still unread in its socket, so its
        # kernel reset the connection after the answer: what arrived before is the answer.
        pass
    return data.split(b"\r\n", 1)[0].decode()


def _valid_exports(server: ServerProcess, rng: random.Random, count: int) -> None:
    """Send ``count`` valid exports over HTTP and as many over gRPC; each must be accepted."""
    with (
        httpx.Client(base_url=server.base_url, timeout=BODY_TIMEOUT) as client,
        grpc.insecure_channel(server.grpc_endpoint) as channel,
    ):
        export = channel.unary_unary(
            _EXPORT,
            request_serializer=None,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        for _ in range(count):
            response = client.post(
                "/v1/traces",
                content=export_request(agent_trace(rng).spans),
                headers={"Content-Type": PROTOBUF},
            )
            assert response.status_code == 200, (response.status_code, response.text)
            export(export_request(agent_trace(rng).spans), timeout=BODY_TIMEOUT)  # raises unless OK


def test_stalled_uploads_get_408_and_leave_http_and_grpc_exports_accepted(tmp_path: Path) -> None:
    # The deadline alone cuts them here (no rate rule), so they stay open the whole time.
    config = {"server": {"body_timeout": BODY_TIMEOUT, "min_body_rate": 0}}
    with start_server(tmp_path, config=config) as server:
        stalled = [stalled_upload(server.http_port) for _ in range(STALLED)]
        try:
            opened = time.monotonic()
            time.sleep(0.5)  # every one of them is now waiting for its body in the server
            _valid_exports(server, random.Random(7), 10)
            # Every valid export was accepted while every stalled upload was still open: none
            # waited for the stalled ones to be cut.
            assert not any(answered(sock) for sock in stalled), (
                "the stalled uploads were answered early"
            )

            lines = [status_line(sock, BODY_TIMEOUT + 10) for sock in stalled]
            waited = time.monotonic() - opened
        finally:
            for sock in stalled:
                sock.close()
        health = httpx.get(f"{server.base_url}/healthz", timeout=5).json()
        assert health["in_flight"] == 0
        metrics = httpx.get(f"{server.base_url}/metrics", timeout=5).text
    assert lines == ["HTTP/1.1 408 Request Timeout"] * STALLED, set(lines)
    assert BODY_TIMEOUT - 0.5 < waited < BODY_TIMEOUT + 5, waited
    assert (
        f'tracescore_export_requests_total{{outcome="timeout",signal="traces",transport="http"}} {STALLED}.0'
        in metrics
    )
    assert "Traceback" not in server.output()


def test_a_trickle_below_the_minimum_rate_is_cut_before_the_deadline(tmp_path: Path) -> None:
    config = {"server": {"body_timeout": 60, "min_body_rate": 2000}}
    # A body at a sane rate that takes longer than the grace period is not cut: it is sent
    # alongside the trickle (4,000 bytes/s for 7.5 s, then the rest), on a connection of its own.
    rng = random.Random(8)
    body = export_request([span for _ in range(40) for span in agent_trace(rng).spans])
    assert len(body) > 30_000
    with start_server(tmp_path, config=config) as server:
        trickle = stalled_upload(server.http_port, announced=100_000, sent=b"\n" * 100)
        steady = stalled_upload(server.http_port, announced=len(body), sent=b"", close=True)
        opened = time.monotonic()
        cut_after = None
        for start in range(0, 30_000, 1000):
            steady.sendall(body[start : start + 1000])
            if cut_after is None and answered(trickle):
                cut_after = time.monotonic() - opened
            elif cut_after is None:
                try:
                    trickle.sendall(b"\n" * 125)  # 500 bytes/s: a quarter of the minimum
                except OSError:
                    cut_after = time.monotonic() - opened  # the server gave up on it and closed
            time.sleep(0.25)
        steady.sendall(body[30_000:])
        steady_line = status_line(steady, 10)
        steady.close()
        line = status_line(trickle, 10)
        cut_after = cut_after if cut_after is not None else time.monotonic() - opened
        trickle.close()
    assert line == "HTTP/1.1 408 Request Timeout"
    assert 4 < cut_after < 10, cut_after  # the rate is checked from the 5th second on
    assert steady_line == "HTTP/1.1 200 OK"
    assert "Traceback" not in server.output()


def test_clients_closing_mid_body_log_one_line_each_and_no_traceback(tmp_path: Path) -> None:
    with start_server(tmp_path, config={"server": {"body_timeout": 30}}) as server:
        stalled = [stalled_upload(server.http_port) for _ in range(STALLED)]
        time.sleep(0.5)
        for sock in stalled:
            sock.close()
        deadline = time.monotonic() + 10
        while server.output().count("went away") < STALLED and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # anything else these closes would log
        _valid_exports(server, random.Random(9), 2)
        health = httpx.get(f"{server.base_url}/healthz", timeout=5).json()
    output = server.output()
    assert "Traceback" not in output, output[-3000:]
    assert output.count("went away") == STALLED, output[-3000:]
    assert health["in_flight"] == 0


def test_stalled_uploads_do_not_hold_a_graceful_shutdown(tmp_path: Path) -> None:
    server = start_server(tmp_path, config={"server": {"body_timeout": 60, "min_body_rate": 0}})
    stalled = [stalled_upload(server.http_port) for _ in range(8)]
    try:
        time.sleep(0.5)
        assert server.stop(timeout=20) == 0  # uvicorn waits for running requests: these too
        lines = {status_line(sock, 5) for sock in stalled}
    finally:
        for sock in stalled:
            sock.close()
    # Answered by the shutdown (503), not by their 60 s body deadline (408).
    assert lines == {"HTTP/1.1 503 Service Unavailable"}, lines
    assert "Traceback" not in server.output()
