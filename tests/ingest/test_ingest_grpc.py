"""OTLP/gRPC against the real collector process: the SDK's gRPC exporter, logs and metrics,
undecodable requests."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource as SdkResource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.paths import CAPTURES
from tests.support.server_process import ServerProcess, start_server
from tracescore.ingest.files import decode_file
from tracescore.store import SpanStore, open_store

_SERVICE = "/opentelemetry.proto.collector.{0}.v1.{1}/Export"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_server(tmp_path_factory.mktemp("grpc")) as running:
        yield running


@pytest.fixture(scope="module")
def channel(server: ServerProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.grpc_endpoint) as opened:
        yield opened


@pytest.fixture(scope="module")
def store(server: ServerProcess) -> Iterator[SpanStore]:
    opened = open_store(server.db_url, create=False)
    yield opened
    opened.close()


def _export(
    channel: grpc.Channel, signal: str, service: str, response_type: type
) -> grpc.UnaryUnaryMultiCallable:
    return channel.unary_unary(
        _SERVICE.format(signal, service),
        request_serializer=None,
        response_deserializer=response_type.FromString,
    )


def test_sdk_grpc_exporter_spans_are_stored(server: ServerProcess, store: SpanStore) -> None:
    captured = InMemorySpanExporter()
    provider = TracerProvider(resource=SdkResource.create({"service.name": "sdk-grpc"}))
    provider.add_span_processor(SimpleSpanProcessor(captured))
    tracer = provider.get_tracer("tests.grpc")
    with tracer.start_as_current_span("root") as root:
        root.set_attribute("gen_ai.usage.input_tokens", 12)
        for n in range(3):
            with tracer.start_as_current_span(f"tool {n}") as child:
                child.set_attribute("index", n)
    spans = captured.get_finished_spans()

    exporter = OTLPSpanExporter(
        endpoint=server.grpc_endpoint, insecure=True, compression=grpc.Compression.Gzip
    )
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()

    trace = store.load_trace(format(spans[0].context.trace_id, "032x"))
    assert trace is not None
    assert sorted(s.name for s in trace.spans) == ["root", "tool 0", "tool 1", "tool 2"]
    root_span = next(s for s in trace.spans if s.parent_span_id is None)
    assert root_span.attributes == {"gen_ai.usage.input_tokens": 12}
    assert root_span.service_name == "sdk-grpc"


def test_logs_and_metrics_over_grpc(channel: grpc.Channel, store: SpanStore) -> None:
    logs_path = next(CAPTURES.rglob("*.logs.pb"))
    expected = decode_file(logs_path).logs
    answer = _export(channel, "logs", "LogsService", ExportLogsServiceResponse)(
        logs_path.read_bytes(), timeout=10
    )
    assert not answer.HasField("partial_success")
    trace_id = next(r.trace_id for r in expected if r.trace_id)
    stored = store.load_trace(trace_id)
    assert stored is not None
    assert sorted(stored.logs, key=repr) == sorted(
        (r for r in expected if r.trace_id == trace_id), key=repr
    )

    metrics_path = next(CAPTURES.rglob("*.metrics.pb"))
    metrics = _export(channel, "metrics", "MetricsService", ExportMetricsServiceResponse)
    assert metrics(metrics_path.read_bytes(), timeout=10) == ExportMetricsServiceResponse()


def test_rejected_spans_and_undecodable_requests(channel: grpc.Channel, store: SpanStore) -> None:
    export = _export(channel, "trace", "TraceService", ExportTraceServiceResponse)
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    good = spans.add(trace_id=bytes.fromhex("3" * 32), span_id=bytes.fromhex("1" * 16), name="ok")
    spans.add(trace_id=good.trace_id, name="no span id")
    answer = export(request.SerializeToString(), timeout=10)
    assert answer.partial_success.rejected_spans == 1
    assert "span id" in answer.partial_success.error_message
    assert [s.name for s in store.load_trace("3" * 32).spans] == ["ok"]

    with pytest.raises(grpc.RpcError) as failure:
        export(b"\x0a\xff\xff\xff", timeout=10)
    assert failure.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "invalid OTLP protobuf" in failure.value.details()
    assert export(b"", timeout=10) == ExportTraceServiceResponse()  # still serving
