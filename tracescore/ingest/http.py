"""OTLP/HTTP receiver: ``POST /v1/traces``, ``/v1/logs`` and ``/v1/metrics``, and traces at
the Langfuse SDKs' ``/api/public/otel/v1/traces``.

Follows the OTLP/HTTP spec: protobuf (``application/x-protobuf``) or OTLP/JSON
(``application/json``) bodies, optionally gzip-compressed; the response is an ``Export*ServiceResponse``
in the request's encoding, with ``partial_success`` when some records were rejected; failures
carry a ``google.rpc.Status`` body. Bodies are read as a stream with a running size check, so
chunked uploads (Node exporters send no Content-Length) work and oversized ones stop early;
gzip is inflated with an output bound, so a small bomb cannot expand past the limit.

Slow senders. A body is received *before* the request takes one of the intake's admission
slots, under its own limits (:class:`BodyLimits`): a deadline for the whole body, a minimum
average rate (enforced after a grace period), and a cap on requests being received at once,
separate from and larger than the slots, plus a cap on the bytes they hold. A stalled or
trickling upload is answered 408 and its connection closed; meanwhile it holds a reader and a
few bytes, never a slot, so valid exports (and OTLP/gRPC, whose server reads messages itself)
keep being admitted. One client address may hold only its share of the readers, and while half
of them are taken the rate's grace period shrinks (:data:`PRESSED_GRACE_SECONDS`): stallers
from one address, reopened as soon as they are cut, cannot starve the other clients. A client that disconnects mid-body is logged in one line.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request, Response
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tracescore import metrics
from tracescore.ingest.decode import DecodeError, Receipt
from tracescore.ingest.intake import RETRY_AFTER_SECONDS, Busy, Intake, StoreUnavailable

log = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

# gRPC status codes used in google.rpc.Status bodies.
_INVALID_ARGUMENT, _RESOURCE_EXHAUSTED, _UNAVAILABLE = 3, 8, 14


class _HttpError(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _with_partial_success(response: Message, rejected_field: str, receipt: Receipt) -> Message:
    if receipt.rejected:
        setattr(response.partial_success, rejected_field, receipt.rejected)
        response.partial_success.error_message = receipt.error_message
    return response


def trace_response(receipt: Receipt) -> Message:
    return _with_partial_success(ExportTraceServiceResponse(), "rejected_spans", receipt)


def logs_response(receipt: Receipt) -> Message:
    return _with_partial_success(ExportLogsServiceResponse(), "rejected_log_records", receipt)


def metrics_response(_receipt: Receipt) -> Message:
    return ExportMetricsServiceResponse()


def _encode(message: Message, json: bool) -> bytes:
    # protobuf ships no type information (pyproject's ignore list): its documented types.
    if json:
        text: str = json_format.MessageToJson(message, indent=None)
        return text.encode()
    wire: bytes = message.SerializeToString()
    return wire


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


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


class _Gone(Exception):
    """The client disconnected before its body was complete."""


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


async def _receive_body(request: Request, reading: _Reading) -> bytes:
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
        raise _HttpError(413, _RESOURCE_EXHAUSTED, f"request body exceeds {limits.max_bytes} bytes")
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
            raise _HttpError(
                408, _UNAVAILABLE, f"request body not received in time ({size} bytes in "
                f"{loop.time() - started:.1f} s; {rate}all of it within {limits.timeout:g} s are needed)",
            ) from None
        if message["type"] == "http.disconnect":
            raise _Gone(f"{size} of {declared or 'unknown'} body bytes")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limits.max_bytes:
            raise _HttpError(413, _RESOURCE_EXHAUSTED, f"request body exceeds {limits.max_bytes} bytes")
        readers.hold(reading, len(chunk))
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def _inflate(request: Request, body: bytes, limit: int) -> bytes:
    """``body`` inflated if the request says gzip, refusing anything beyond ``limit`` bytes."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise _HttpError(415, _INVALID_ARGUMENT, f"unsupported Content-Encoding {encoding!r}")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        inflated = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise _HttpError(400, _INVALID_ARGUMENT, f"invalid gzip body: {exc}") from exc
    if len(inflated) > limit or inflater.unconsumed_tail:
        raise _HttpError(413, _RESOURCE_EXHAUSTED, f"decompressed body exceeds {limit} bytes")
    if not inflater.eof:
        raise _HttpError(400, _INVALID_ARGUMENT, "truncated gzip body")
    return inflated


OTLP_PATHS = ("/v1/traces", "/v1/logs", "/v1/metrics")
_STATUS_BODY = {
    PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
    JSON: {"schema": {"type": "object", "properties": {
        "code": {"type": "integer"}, "message": {"type": "string"}}}},
}  # fmt: skip
_OTLP_ERRORS = {
    400: "the body is not an export request of this signal (a google.rpc.Status says why)",
    408: "the body was not received in time; the connection is closed",
    413: "the body (after gzip) is larger than server.max_body_bytes",
    415: "neither application/x-protobuf nor application/json, or an unknown Content-Encoding",
    503: "overloaded, stopping or the database is unavailable: retry after Retry-After seconds",
}


def _documented(signal: str, request: str, response: str) -> dict[str, Any]:
    """What the OpenAPI schema says of an OTLP/HTTP export route: its handler reads the raw
    body itself (protobuf or JSON, optionally gzip), so the schema is written out here."""
    return {
        "tags": ["otlp"],
        "summary": f"Export {signal} (OTLP/HTTP)",
        "description": (
            f"An OTLP `{request}`, binary protobuf or JSON (`Content-Encoding: gzip` optional). "
            "Stored durably before the answer, as the OTLP specification asks; errors are a "
            "`google.rpc.Status` in the request's encoding."
        ),
        "openapi_extra": {"requestBody": {"required": True, "content": {
            PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
            JSON: {"schema": {"type": "object"}, "example": {"resourceSpans": []}},
        }}},
        "responses": {
            200: {"description": f"accepted: an `{response}` (with partial_success when some "
                                 "items were rejected)", "content": {
                PROTOBUF: _STATUS_BODY[PROTOBUF], JSON: {"schema": {"type": "object"}}}},
            **{status: {"description": what, "content": _STATUS_BODY}
               for status, what in _OTLP_ERRORS.items()},
            401: {"description": "no valid API key (when keys are configured): refused before "
                                 "the body is read, in JSON whatever the request's encoding",
                  "content": {JSON: {"schema": {"type": "object"}},
                              "application/problem+json": {"schema": {"type": "object"}}}},
        },
    }


def otlp_router(intake: Intake, readers: BodyReaders) -> APIRouter:
    router = APIRouter()
    traces, logs, metrics_path = OTLP_PATHS
    router.add_api_route(traces, _endpoint(intake, readers, intake.traces, trace_response),
                         methods=["POST"], **_documented(
                             "traces", "ExportTraceServiceRequest", "ExportTraceServiceResponse"))
    router.add_api_route(logs, _endpoint(intake, readers, intake.logs, logs_response),
                         methods=["POST"], **_documented(
                             "logs", "ExportLogsServiceRequest", "ExportLogsServiceResponse"))
    router.add_api_route(metrics_path, _endpoint(intake, readers, intake.metrics,
                                                 metrics_response), methods=["POST"],
                         **_documented("metrics", "ExportMetricsServiceRequest",
                                       "ExportMetricsServiceResponse"))
    return router


LANGFUSE_TRACES_PATH = "/api/public/otel/v1/traces"
"""Where the Langfuse SDKs export (``{LANGFUSE_HOST}/api/public/otel/v1/traces``)."""


def langfuse_router(intake: Intake, readers: BodyReaders) -> APIRouter:
    """OTLP traces at the Langfuse SDKs' path, so ``LANGFUSE_HOST`` can point at tracescore.

    The same endpoint as ``/v1/traces`` (bounds, durability, answers); only the mount point
    differs, and the service guards it with the SDKs' Basic auth
    (:class:`~tracescore.auth.PasswordKeys`). Nothing else of Langfuse's API is served: the
    SDKs' tracing calls no other path.
    """
    router = APIRouter()
    documented = _documented("traces", "ExportTraceServiceRequest", "ExportTraceServiceResponse")
    documented["summary"] = "Export traces from a Langfuse SDK (OTLP/HTTP, Basic auth)"
    router.add_api_route(LANGFUSE_TRACES_PATH,
                         _endpoint(intake, readers, intake.traces, trace_response),
                         methods=["POST"], **documented)
    return router


def _endpoint(
    intake: Intake,
    readers: BodyReaders,
    handle: Callable[..., Awaitable[Receipt]],
    respond: Callable[[Receipt], Message],
) -> Callable[[Request], Awaitable[Response]]:
    """One OTLP/HTTP export endpoint: ``handle`` takes the inflated body, ``respond`` answers."""
    signal = handle.__name__  # traces, logs or metrics
    limits = readers.limits

    async def export(request: Request) -> Response:
        media_type = _media_type(request)
        json = media_type == JSON
        if not json and media_type != PROTOBUF:
            metrics.export_request("http", signal, "invalid")
            return _status_response(
                415, _INVALID_ARGUMENT,
                f"unsupported Content-Type {media_type or '(none)'!r}: "
                f"use {PROTOBUF} or {JSON}",
                json=True,
            )
        receiving = received = False
        try:
            intake.check_room()  # refuse an overload before receiving the body
            async with readers.reading(request.client.host if request.client else "") as reading:
                receiving = True
                body = await _receive_body(request, reading)
                received = True
                with intake.admitted():
                    receipt = await handle(_inflate(request, body, limits.max_bytes), json=json)
        except Busy as exc:
            metrics.export_request("http", signal, "busy")
            # Refused mid-body: close rather than wait for the rest of it.
            return _status_response(503, _UNAVAILABLE, str(exc), json=json, retry=True,
                                    close=receiving and not received)
        except _Gone as exc:
            metrics.export_request("http", signal, "disconnected")
            log.info("OTLP/HTTP client %s went away mid-request (%s)", _peer(request), exc)
            return Response(status_code=499)  # nobody is listening; uvicorn drops it
        except _HttpError as exc:
            metrics.export_request("http", signal, _OUTCOMES.get(exc.status, "invalid"))
            if exc.status == 408:
                # The rest of the body may still come: close rather than read it as a request.
                return _status_response(408, exc.code, exc.message, json=json, close=True)
            return _status_response(exc.status, exc.code, exc.message, json=json)
        except DecodeError as exc:
            metrics.export_request("http", signal, "invalid")
            return _status_response(400, _INVALID_ARGUMENT, str(exc), json=json)
        except StoreUnavailable as exc:
            metrics.export_request("http", signal, "unavailable")
            return _status_response(503, _UNAVAILABLE, str(exc), json=json, retry=True)
        metrics.export_request(
            "http", signal, "ok", spans=receipt.spans, logs=receipt.logs,
            rejected=receipt.rejected,
        )
        return Response(_encode(respond(receipt), json), media_type=JSON if json else PROTOBUF)

    return export


_OUTCOMES = {413: "too_large", 408: "timeout"}


def _peer(request: Request) -> str:
    return f"{request.client.host}:{request.client.port}" if request.client else "(unknown)"


def _status_response(
    status: int, code: int, message: str, *, json: bool, retry: bool = False, close: bool = False
) -> Response:
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if retry else {}
    if close:
        headers["Connection"] = "close"
    body = _encode(status_pb2.Status(code=code, message=message), json)
    return Response(body, status_code=status, media_type=JSON if json else PROTOBUF, headers=headers)
