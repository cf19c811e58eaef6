"""Receiving an OTLP/HTTP request's body: as a stream with a running size check, under limits
that a slow or stalled sender cannot use to starve the others, and gzip inflated with an
output bound.

A body is received *before* the request takes one of the intake's admission slots, under its
own limits (:class:`BodyLimits`): a deadline for the whole body, a minimum average rate
(enforced after a grace period), and a cap on requests being received at once, separate from
and larger than the slots, plus a cap on the bytes they hold. One client address may hold only
its share of the readers, and while half of them are taken the rate's grace period shrinks
(:data:`PRESSED_GRACE_SECONDS`). Failures are :class:`HttpError` with the status and the
``google.rpc`` code the receiver answers with.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import Request

from tracescore.ingest.intake import Busy

log = logging.getLogger(__name__)

# gRPC status codes used in google.rpc.Status bodies.
INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE = 3, 8, 14


class HttpError(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


RATE_GRACE_SECONDS = 5.0
"""The minimum body rate is enforced from this many seconds after the headers on: a first
segment lost and retransmitted (an initial RTO is 1 s) must not fail a small body."""
PRESSED_GRACE_SECONDS = 1.5
"""The grace instead while at least half the body readers are taken: stalled uploads that
fill the pool are then cut (and their readers freed) more than three times as fast."""


@dataclass(frozen=True)
class BodyLimits:
    """How OTLP/HTTP request bodies must arrive (``server.*`` of the config)."""

    max_bytes: int
    """Largest body, after gzip decompression (413)."""
    timeout: float
    """Seconds the whole body may take (408)."""
    min_rate: int
    """Bytes/s the body must average once ``RATE_GRACE_SECONDS`` have passed (408); 0: off."""
    readers: int
    """Requests receiving (or processing) a body at once (503 beyond)."""
    readers_per_client: int
    """Of those, requests from one client address (503 beyond): one address cannot take the
    whole pool, whatever it sends."""
    buffered_bytes: int
    """Body bytes those requests may hold together (503 beyond): the memory bound of the
    slots, ``max_pending_requests × max_body_bytes``, kept however many are slow."""


class Gone(Exception):
    """The client disconnected before its body was complete."""


UPLOADER = "tracescore.uploader"
"""The request state's entry naming whose share of the body readers a request takes, where
authentication set one (a key id: see ``auth.note_uploader``); else the client's address."""


def uploader(request: Request) -> str:
    """Whose share of the body readers ``request`` takes."""
    named = request.scope.get("state", {}).get(UPLOADER)
    if isinstance(named, str):
        return named
    return request.client.host if request.client else ""


class BodyReaders:
    """Count of requests receiving a body and the bytes they hold, against :class:`BodyLimits`.

    Touched only on the event loop thread, like the intake's slots, so no lock is needed."""

    def __init__(self, limits: BodyLimits) -> None:
        self.limits = limits
        self.count = 0
        self.per_client: dict[str, int] = {}
        self.buffered = 0
        self.closing = False
        self._waits: set[asyncio.Timeout] = set()
        """The deadlines of the bodies being waited for, so :meth:`close` can end them."""

    def close(self) -> None:
        """The server is stopping: end every wait for a body now (503, the client retries
        elsewhere) instead of holding the shutdown until the slowest deadline."""
        self.closing = True
        now = asyncio.get_running_loop().time()
        for wait in self._waits:
            wait.reschedule(now)

    def watch(self, wait: asyncio.Timeout) -> None:
        """Let :meth:`close` end ``wait`` (a body's deadline); call :meth:`unwatch` after."""
        if self.closing:
            wait.reschedule(asyncio.get_running_loop().time())
        self._waits.add(wait)

    def unwatch(self, wait: asyncio.Timeout) -> None:
        self._waits.discard(wait)

    @property
    def pressed(self) -> bool:
        """Whether at least half the readers are taken (bodies then get a shorter grace)."""
        return 2 * self.count >= self.limits.readers

    @asynccontextmanager
    async def reading(self, client: str) -> AsyncIterator[_Reading]:
        """A reader for a body from ``client`` (its address), if the pool and that client's
        share of it have room; Busy otherwise."""
        if self.count >= self.limits.readers:
            raise Busy(f"{self.count} request bodies already being received")
        mine = self.per_client.get(client, 0)
        if mine >= self.limits.readers_per_client:
            raise Busy(f"{mine} request bodies from this client already being received")
        self.count += 1
        self.per_client[client] = mine + 1
        reading = _Reading(self)
        try:
            yield reading
        finally:
            self.count -= 1
            left = self.per_client.pop(client) - 1
            if left:
                self.per_client[client] = left
            self.buffered -= reading.held

    def hold(self, reading: _Reading, size: int) -> None:
        if self.buffered + size > self.limits.buffered_bytes:
            raise Busy(f"{self.buffered // 2**20} MiB of request bodies already being received")
        self.buffered += size
        reading.held += size


class _Reading:
    """One request's share of :class:`BodyReaders`."""

    def __init__(self, readers: BodyReaders) -> None:
        self.readers = readers
        self.held = 0


async def receive_body(request: Request, reading: _Reading) -> bytes:
    """The raw request body, received within the deadline and at the minimum rate.

    Each wait for the next chunk ends at the earlier of the deadline and the moment the bytes
    so far stop meeting the minimum average rate, so a stalled upload is cut after at most the
    grace period, and a steady but slow one as soon as it falls behind."""
    readers = reading.readers
    limits = readers.limits
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + limits.timeout
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_bytes:
        raise HttpError(413, RESOURCE_EXHAUSTED, f"request body exceeds {limits.max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        due = deadline
        if limits.min_rate:
            grace = PRESSED_GRACE_SECONDS if readers.pressed else RATE_GRACE_SECONDS
            due = min(deadline, started + max(grace, size / limits.min_rate))
        try:
            async with asyncio.timeout_at(due) as wait:  # (a plain call: this runs per chunk)
                readers.watch(wait)
                try:
                    message = await request.receive()
                finally:
                    readers.unwatch(wait)
        except TimeoutError:
            if readers.closing:
                raise Busy("the collector is shutting down") from None
            rate = f"at least {limits.min_rate} bytes/s and " if limits.min_rate else ""
            raise HttpError(
                408,
                UNAVAILABLE,
                f"request body not received in time ({size} bytes in "
                f"{loop.time() - started:.1f} s; {rate}all of it within {limits.timeout:g} s are needed)",
            ) from None
        if message["type"] == "http.disconnect":
            raise Gone(f"{size} of {declared or 'unknown'} body bytes")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limits.max_bytes:
            raise HttpError(
                413, RESOURCE_EXHAUSTED, f"request body exceeds {limits.max_bytes} bytes"
            )
        readers.hold(reading, len(chunk))
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def inflate(request: Request, body: bytes, limit: int) -> bytes:
    """``body`` inflated if the request says gzip, refusing anything beyond ``limit`` bytes."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise HttpError(415, INVALID_ARGUMENT, f"unsupported Content-Encoding {encoding!r}")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        inflated = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise HttpError(400, INVALID_ARGUMENT, f"invalid gzip body: {exc}") from exc
    if len(inflated) > limit or inflater.unconsumed_tail:
        raise HttpError(413, RESOURCE_EXHAUSTED, f"decompressed body exceeds {limit} bytes")
    if not inflater.eof:
        raise HttpError(400, INVALID_ARGUMENT, "truncated gzip body")
    return inflated
