"""OTLP/HTTP receiver: ``POST /v1/traces``, ``/v1/logs`` and ``/v1/metrics``.

Follows the OTLP/HTTP spec: protobuf (``application/x-protobuf``) or OTLP/JSON
(``application/json``) bodies, optionally gzip-compressed; the response is an ``Export*ServiceResponse``
in the request's encoding, with ``partial_success`` when some records were rejected; failures
carry a ``google.rpc.Status`` body. Bodies are read as a stream with a running size check, so
chunked uploads (Node exporters send no Content-Length) work and oversized ones stop early;
gzip is inflated with an output bound, so a small bomb cannot expand past the limit.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request, Response
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tracescore.ingest.decode import DecodeError, Receipt
from tracescore.ingest.intake import RETRY_AFTER_SECONDS, Busy, Intake, StoreUnavailable
from tracescore.monitor import metrics

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
        setattr(response.partial_success, rejected_field, receipt.rejected)  # type: ignore[attr-defined]
        response.partial_success.error_message = receipt.error_message  # type: ignore[attr-defined]
    return response


def trace_response(receipt: Receipt) -> Message:
    return _with_partial_success(ExportTraceServiceResponse(), "rejected_spans", receipt)


def logs_response(receipt: Receipt) -> Message:
    return _with_partial_success(ExportLogsServiceResponse(), "rejected_log_records", receipt)


def metrics_response(_receipt: Receipt) -> Message:
    return ExportMetricsServiceResponse()


def _encode(message: Message, json: bool) -> bytes:
    if json:
        return json_format.MessageToJson(message, indent=None).encode()
    return message.SerializeToString()


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, inflated if gzip, refusing anything beyond ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _HttpError(413, _RESOURCE_EXHAUSTED, f"request body exceeds {limit} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
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


def otlp_router(intake: Intake, max_body_bytes: int) -> APIRouter:
    router = APIRouter()

    def endpoint(
        handle: Callable[..., Awaitable[Receipt]], respond: Callable[[Receipt], Message]
    ) -> Callable[[Request], Awaitable[Response]]:
        signal = handle.__name__  # traces, logs or metrics

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
                )  # fmt: skip
            try:
                with intake.admitted():
                    body = await _read_body(request, max_body_bytes)
                    receipt = await handle(body, json=json)
            except Busy as exc:
                metrics.export_request("http", signal, "busy")
                return _status_response(503, _UNAVAILABLE, str(exc), json=json, retry=True)
            except _HttpError as exc:
                metrics.export_request("http", signal, "too_large" if exc.status == 413 else "invalid")
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
            )  # fmt: skip
            return Response(_encode(respond(receipt), json), media_type=JSON if json else PROTOBUF)

        return export

    router.add_api_route("/v1/traces", endpoint(intake.traces, trace_response), methods=["POST"])
    router.add_api_route("/v1/logs", endpoint(intake.logs, logs_response), methods=["POST"])
    router.add_api_route("/v1/metrics", endpoint(intake.metrics, metrics_response), methods=["POST"])
    return router


def _status_response(
    status: int, code: int, message: str, *, json: bool, retry: bool = False
) -> Response:
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if retry else None
    body = _encode(status_pb2.Status(code=code, message=message), json)
    return Response(body, status_code=status, media_type=JSON if json else PROTOBUF, headers=headers)
