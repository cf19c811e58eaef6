"""300 stalled uploads from one address, reopened as soon as they are cut, do not starve the
OTLP/HTTP exports of another client (issue 33, item 4: 14 of 19 valid exports answered 503).

The stallers come from 127.0.0.2 (Linux routes the whole 127.0.0.0/8 to loopback: the client
socket is bound to it), the valid exports from 127.0.0.1. One address may hold only its share
of the body readers, and a pool at least half taken cuts stalled bodies after a shorter grace.
"""

from __future__ import annotations

import random
import selectors
import socket
import threading
import time
from pathlib import Path

import httpx

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.server_process import start_server

PROTOBUF = "application/x-protobuf"


STALLERS = 300
ATTACKER = "127.0.0.2"


def _stall(port: int) -> socket.socket:
    sock = socket.socket()
    sock.bind((ATTACKER, 0))
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
        "Content-Length: 100000\r\n\r\n\n".encode()
    )
    return sock


class _Stallers:
    """``STALLERS`` stalled uploads kept open: each one the server answers is reopened."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stop = threading.Event()
        self.refused = 0
        self.cut = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        for _ in range(STALLERS):
            selector.register(_stall(self.port), selectors.EVENT_READ)
        while not self.stop.is_set():
            for key, _ in selector.select(0.2):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    answer = sock.recv(4096)
                except OSError:
                    answer = b""
                if answer.startswith(b"HTTP/1.1 503"):
                    self.refused += 1
                elif answer.startswith(b"HTTP/1.1 408"):
                    self.cut += 1
                selector.unregister(sock)
                sock.close()
                selector.register(_stall(self.port), selectors.EVENT_READ)
        for key in list(selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]


def test_stallers_from_one_address_leave_other_clients_exporting(tmp_path: Path) -> None:
    with start_server(tmp_path) as server:
        stallers = _Stallers(server.http_port)
        stallers.thread.start()
        try:
            time.sleep(3)  # every staller has been answered or is held by now
            rng = random.Random(4)
            statuses = []
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                for _ in range(20):
                    response = client.post(
                        "/v1/traces",
                        content=export_request(agent_trace(rng).spans),
                        headers={"Content-Type": PROTOBUF},
                    )
                    statuses.append(response.status_code)
                    time.sleep(0.5)
        finally:
            stallers.stop.set()
            stallers.thread.join(30)
        assert statuses == [200] * 20, statuses
        # The address's share was taken and the rest refused at once; held ones were cut early.
        assert stallers.refused >= STALLERS - 128, stallers.refused
        assert stallers.cut > 0
