"""OTLP/HTTP receiver: ``POST /v1/traces``, ``/v1/logs`` and ``/v1/metrics``, and traces at
the Langfuse SDKs' ``/api/public/otel/v1/traces``.

Follows the OTLP/HTTP spec: protobuf (``application/x-protobuf``) or OTLP/JSON
(``application/json``) bodies, optionally gzip-compressed; the response is an ``Export*ServiceResponse``
in the request's encoding, with ``partial_success`` when some records were rejected; failures
carry a ``google.rpc.Status`` body. How a body is received (limits, gzip) is
:mod:`tracescore.ingest.http_bodies`. Bodies are read as a stream with a running size check, so
chunked uploads (Node exporters send no Content-Length) work and oversized ones stop early;
gzip is inflated with an output bound, so a small bomb cannot expand past the limit.

Slow senders. A body is received *before* the request takes one of the intake's admission
slots, under its own limits (:class:`~tracescore.ingest.http_bodies.BodyLimits`): a deadline for the whole body, a minimum
average rate (enforced after a grace period), and a cap on requests being received at once,
separate from and larger than the slots, plus a cap on the bytes they hold. A stalled or
trickling upload is answered 408 and its connection closed; meanwhile it holds a reader and a
few bytes, never a slot, so valid exports (and OTLP/gRPC, whose server reads messages itself)
keep being admitted. One client address may hold only its share of the readers, and while half
of them are taken the rate's grace period shrinks (:data:`~tracescore.ingest.http_bodies.PRESSED_GRACE_SECONDS`): stallers
from one address, reopened as soon as they are cut, cannot starve the other clients. A client that disconnects mid-body is logged in one line.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
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
from tracescore.ingest.http_bodies import (
    INVALID_ARGUMENT,
    UNAVAILABLE,
    BodyReaders,
    Gone,
    HttpError,
    inflate,
    receive_body,
    uploader,
)
from tracescore.ingest.intake import RETRY_AFTER_SECONDS, Busy, Intake, StoreUnavailable

log = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


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


OTLP_PATHS = ("/v1/traces", "/v1/logs", "/v1/metrics")
_STATUS_BODY = {
    PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
    JSON: {
        "schema": {
            "type": "object",
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        }
    },
}
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
        "openapi_extra": {
            "requestBody": {
                "required": True,
                "content": {
                    PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
                    JSON: {"schema": {"type": "object"}, "example": {"resourceSpans": []}},
                },
            }
        },
        "responses": {
            200: {
                "description": f"accepted: an `{response}` (with partial_success when some "
                "items were rejected)",
                "content": {PROTOBUF: _STATUS_BODY[PROTOBUF], JSON: {"schema": {"type": "object"}}},
            },
            **{
                status: {"description": what, "content": _STATUS_BODY}
                for status, what in _OTLP_ERRORS.items()
            },
            401: {
                "description": "no valid API key (when keys are configured): refused before "
                "the body is read, in JSON whatever the request's encoding",
                "content": {
                    JSON: {"schema": {"type": "object"}},
                    "application/problem+json": {"schema": {"type": "object"}},
                },
            },
        },
    }


def otlp_router(intake: Intake, readers: BodyReaders) -> APIRouter:
    router = APIRouter()
    traces, logs, metrics_path = OTLP_PATHS
    router.add_api_route(
        traces,
        _endpoint(intake, readers, intake.traces, trace_response),
        methods=["POST"],
        **_documented("traces", "ExportTraceServiceRequest", "ExportTraceServiceResponse"),
    )
    router.add_api_route(
        logs,
        _endpoint(intake, readers, intake.logs, logs_response),
        methods=["POST"],
        **_documented("logs", "ExportLogsServiceRequest", "ExportLogsServiceResponse"),
    )
    router.add_api_route(
        metrics_path,
        _endpoint(intake, readers, intake.metrics, metrics_response),
        methods=["POST"],
        **_documented("metrics", "ExportMetricsServiceRequest", "ExportMetricsServiceResponse"),
    )
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
    router.add_api_route(
        LANGFUSE_TRACES_PATH,
        _endpoint(intake, readers, intake.traces, trace_response),
        methods=["POST"],
        **documented,
    )
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
                415,
                INVALID_ARGUMENT,
                f"unsupported Content-Type {media_type or '(none)'!r}: use {PROTOBUF} or {JSON}",
                json=True,
            )
        receiving = received = False
        try:
            intake.check_room()  # refuse an overload before receiving the body
            async with readers.reading(uploader(request)) as reading:
                receiving = True
                body = await receive_body(request, reading)
                received = True
                with intake.admitted():
                    receipt = await handle(inflate(request, body, limits.max_bytes), json=json)
        except Busy as exc:
            metrics.export_request("http", signal, "busy")
            # Refused mid-body: close rather than wait for the rest of it.
            return _status_response(
                503, UNAVAILABLE, str(exc), json=json, retry=True, close=receiving and not received
            )
        except Gone as exc:
            metrics.export_request("http", signal, "disconnected")
            log.info("OTLP/HTTP client %s went away mid-request (%s)", _peer(request), exc)
            return Response(status_code=499)  # nobody is listening; uvicorn drops it
        except HttpError as exc:
            metrics.export_request("http", signal, _OUTCOMES.get(exc.status, "invalid"))
            if exc.status == 408:
                # The rest of the body may still come: close rather than read it as a request.
                return _status_response(408, exc.code, exc.message, json=json, close=True)
            return _status_response(exc.status, exc.code, exc.message, json=json)
        except DecodeError as exc:
            metrics.export_request("http", signal, "invalid")
            return _status_response(400, INVALID_ARGUMENT, str(exc), json=json)
        except StoreUnavailable as exc:
            metrics.export_request("http", signal, "unavailable")
            return _status_response(503, UNAVAILABLE, str(exc), json=json, retry=True)
        metrics.export_request(
            "http",
            signal,
            "ok",
            spans=receipt.spans,
            logs=receipt.logs,
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
    return Response(
        body, status_code=status, media_type=JSON if json else PROTOBUF, headers=headers
    )
