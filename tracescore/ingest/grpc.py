"""OTLP/gRPC receiver (``grpc.aio``): TraceService, LogsService and MetricsService ``Export``.

Handlers receive the raw request bytes (no deserializer) and hand them to the same
:class:`~tracescore.ingest.intake.Intake` as OTLP/HTTP, so both transports share one decoder
and one admission limit. Status codes follow the OTLP spec: INVALID_ARGUMENT for undecodable
requests (not retryable), UNAVAILABLE for backpressure and storage failures (retryable).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
from google.protobuf.message import Message

from tracescore import metrics
from tracescore.ingest.decode import DecodeError, Receipt
from tracescore.ingest.http import logs_response, metrics_response, trace_response
from tracescore.ingest.intake import Busy, Intake, StoreUnavailable


def _export_handler(
    intake: Intake,
    handle: Callable[..., Awaitable[Receipt]],
    respond: Callable[[Receipt], Message],
) -> grpc.RpcMethodHandler:
    signal = handle.__name__  # traces, logs or metrics

    async def export(body: bytes, context: grpc.aio.ServicerContext) -> Message:
        try:
            with intake.admitted():
                receipt = await handle(body, json=False)
        except DecodeError as exc:
            metrics.export_request("grpc", signal, "invalid")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except (Busy, StoreUnavailable) as exc:
            metrics.export_request(
                "grpc", signal, "busy" if isinstance(exc, Busy) else "unavailable"
            )
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        metrics.export_request(
            "grpc",
            signal,
            "ok",
            spans=receipt.spans,
            logs=receipt.logs,
            rejected=receipt.rejected,
        )
        return respond(receipt)

    return grpc.unary_unary_rpc_method_handler(
        export,
        request_deserializer=None,
        response_serializer=type(respond(Receipt())).SerializeToString,
    )


def otlp_handlers(intake: Intake) -> list[grpc.GenericRpcHandler]:
    services = {
        "opentelemetry.proto.collector.trace.v1.TraceService": (intake.traces, trace_response),
        "opentelemetry.proto.collector.logs.v1.LogsService": (intake.logs, logs_response),
        "opentelemetry.proto.collector.metrics.v1.MetricsService": (
            intake.metrics,
            metrics_response,
        ),
    }
    return [
        grpc.method_handlers_generic_handler(
            name, {"Export": _export_handler(intake, handle, respond)}
        )
        for name, (handle, respond) in services.items()
    ]


async def start_grpc_server(
    intake: Intake,
    host: str,
    port: int,
    max_message_bytes: int,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    reuse_port: bool = False,
    options: Sequence[tuple[str, Any]] = (),
) -> grpc.aio.Server:
    """Start serving OTLP/gRPC on ``host:port`` in the running event loop.

    ``interceptors`` run before every handler (the API-key check of ``tracescore.auth``).
    ``reuse_port`` lets sibling service processes share the port; otherwise a second server on
    a taken port fails instead of silently sharing it. ``options``: more gRPC server options
    (the connection limits of ``server.*``).
    """
    server = grpc.aio.server(
        handlers=otlp_handlers(intake),
        interceptors=list(interceptors),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", int(reuse_port)),
            *options,
        ],
    )
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    server.add_insecure_port(address)
    await server.start()
    return server
