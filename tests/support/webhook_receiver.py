"""A real HTTP server on loopback that records the JSON bodies POSTed to it (alert webhooks)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class WebhookReceiver:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.requests = 0
        """Every POST, failed ones included."""
        self.headers: list[dict[str, str]] = []
        self.fail_next = 0
        """Answer this many next requests with HTTP 500 (and record nothing)."""
        self.url = ""
        self._lock = threading.Lock()

    def received(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.bodies)


@contextmanager
def webhook_receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with receiver._lock:
                receiver.requests += 1
                failing = receiver.fail_next > 0
                if failing:
                    receiver.fail_next -= 1
                else:
                    receiver.bodies.append(json.loads(body))
                    receiver.headers.append(dict(self.headers))
            self.send_response(500 if failing else 204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
