"""What both OTLP transports do with an export request: admit, decode, store, acknowledge.

The transports (``http.py``, ``grpc.py``) only translate between the wire and this module:
:class:`Busy` becomes HTTP 503 / gRPC UNAVAILABLE (retryable, with a delay), :class:`DecodeError`
HTTP 400 / INVALID_ARGUMENT, :class:`StoreUnavailable` HTTP 503 / UNAVAILABLE.

Decoding and the database write run together in a small thread pool, never on the event loop,
and at most ``max_pending`` requests are admitted at once: a request beyond that is refused
before its body is even read, which keeps memory bounded at about
``max_pending × max_body_bytes`` however hard clients push.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from tracescore.ingest.decode import Decoded, decode_logs, decode_metrics, decode_traces
from tracescore.ingest.truncate import truncate_decoded
from tracescore.store import SpanStore

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 1


class Busy(Exception):
    """Too many export requests in flight; the client should retry after a delay."""


class StoreUnavailable(Exception):
    """The database write failed; nothing of the request was stored, the client may retry."""


class Intake:
    """Admission control plus decode-and-store, shared by the HTTP and gRPC transports."""

    def __init__(
        self, store: SpanStore, max_pending: int, *, threads: int = 4,
        max_attribute_chars: int | None = None,
    ) -> None:  # fmt: skip
        self.store = store
        self.max_pending = max_pending
        self.max_attribute_chars = max_attribute_chars
        self.in_flight = 0
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ingest")

    @contextmanager
    def admitted(self) -> Iterator[None]:
        """Hold one of the ``max_pending`` slots (on the event loop thread) or raise Busy."""
        if self.in_flight >= self.max_pending:
            raise Busy(f"{self.in_flight} export requests already in progress")
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1

    async def traces(self, body: bytes, *, json: bool) -> Decoded:
        return await self._run(self._store_traces, body, json)

    async def logs(self, body: bytes, *, json: bool) -> Decoded:
        return await self._run(self._store_logs, body, json)

    async def metrics(self, body: bytes, *, json: bool) -> Decoded:
        """Metrics are accepted (so SDKs that send them see success) and dropped once valid."""
        return await self._run(_decode_metrics, body, json)

    async def _run(self, work: Callable[[bytes, bool], Decoded], body: bytes, json: bool) -> Decoded:
        return await asyncio.get_running_loop().run_in_executor(self._executor, work, body, json)

    def _store_traces(self, body: bytes, json: bool) -> Decoded:
        decoded = decode_traces(body, json=json)
        self._write(decoded)
        return decoded

    def _store_logs(self, body: bytes, json: bool) -> Decoded:
        decoded = decode_logs(body, json=json)
        self._write(decoded)
        return decoded

    def _write(self, decoded: Decoded) -> None:
        if self.max_attribute_chars is not None:
            cut = truncate_decoded(decoded, self.max_attribute_chars)
            if cut:
                log.info("truncated %d attribute values over %d characters", cut,
                            self.max_attribute_chars)  # fmt: skip
        try:
            self.store.write(decoded.spans, decoded.logs)
        except Exception as exc:
            log.exception("storing %d spans / %d logs failed", len(decoded.spans), len(decoded.logs))
            raise StoreUnavailable(f"storage failed: {type(exc).__name__}") from exc

    def close(self) -> None:
        self._executor.shutdown(wait=True)


def _decode_metrics(body: bytes, json: bool) -> Decoded:
    return decode_metrics(body, json=json)
