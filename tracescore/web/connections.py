"""HTTP connections that never finish a request are closed: uvicorn's httptools protocol with a
deadline for each request's headers.

uvicorn closes a keep-alive connection idle past ``timeout_keep_alive``, but only one idle
after a response: a connection that never sends a byte, or sends half a request line and
stops, was held for good (1,000 idle sockets and 500 half-sent headers stayed open through a
probe; enough of them exhaust file descriptors). Here each request's headers are due within
``header_timeout`` of the connection's start or of the previous response's end; the deadline
is disarmed once they are complete (the body has its own limits: ``body_timeout``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


def with_header_deadline(header_timeout: float) -> type[HttpToolsProtocol]:
    """An httptools protocol class (uvicorn's ``http=``) that closes a connection whose
    request headers are not complete ``header_timeout`` seconds after it became due."""

    class HeaderDeadline(HttpToolsProtocol):
        _header_deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._header_deadline = self.loop.call_later(header_timeout, self._expire)

        def _disarm(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _expire(self) -> None:
            self._header_deadline = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and not self.pipeline:
                self._arm()  # the next request's headers are due from now

    return HeaderDeadline


def grpc_connection_options(header_timeout: float, idle_timeout: float) -> list[tuple[str, Any]]:
    """gRPC server options with the same bounds: a connection must complete its HTTP/2
    handshake within ``header_timeout``, and one with no call for ``idle_timeout`` is sent
    GOAWAY (clients reconnect on their next export)."""
    return [
        ("grpc.server_handshake_timeout_ms", int(header_timeout * 1000)),
        ("grpc.max_connection_idle_ms", int(idle_timeout * 1000)),
    ]
