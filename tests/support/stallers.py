"""Stalled OTLP/HTTP uploads kept open, for the body-reader tests: each upload sends its
headers and one byte of a 100 kB body, then nothing; each one the server answers (503 at once,
or 408 when it cuts it) is reopened at once, so the stallers hold every reader they can get."""

from __future__ import annotations

import selectors
import socket
import threading

PROTOBUF = "application/x-protobuf"


class Stallers:
    """``count`` stalled uploads from ``address`` to ``port``, with ``headers`` (extra header
    lines, such as an ``Authorization``), kept open by a thread between :meth:`start` and
    :meth:`stop`; ``refused`` and ``cut`` count the 503 and 408 answers."""

    def __init__(self, port: int, address: str, count: int, headers: str = "") -> None:
        self.port = port
        self.address = address
        self.count = count
        self.headers = headers
        self.refused = 0
        self.cut = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _stall(self) -> socket.socket:
        sock = socket.socket()
        sock.bind((self.address, 0))
        sock.settimeout(30)
        sock.connect(("127.0.0.1", self.port))
        sock.sendall(
            f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n{self.headers}"
            "Content-Length: 100000\r\n\r\n\n".encode()
        )
        return sock

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        for _ in range(self.count):
            selector.register(self._stall(), selectors.EVENT_READ)
        while not self._stop.is_set():
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
                selector.register(self._stall(), selectors.EVENT_READ)
        for key in list(selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
