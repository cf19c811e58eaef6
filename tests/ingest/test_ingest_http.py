"""OTLP/HTTP against the real collector process: SDK exporter, every capture, bad input,
backpressure. One server (SQLite) serves the whole module; each test uses its own trace ids."""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import orjson
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource as SdkResource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.paths import CAPTURES
from tests.support.server_process import ChunkedUpload, ServerProcess, post_chunked, start_server
from tracescore.ingest.files import decode_file, export_files, load_traces
from tracescore.store import SpanStore, open_store

PROTOBUF, JSON = "application/x-protobuf", "application/json"
MAX_BODY = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # Every client here is 127.0.0.1: one address may use the whole pool of readers (its
    # per-address share is tested in test_slow_clients_per_address.py).
    config = {
        "server": {
            "max_body_bytes": MAX_BODY,
            "max_pending_requests": 2,
            "max_body_readers": 2,
            "max_body_readers_per_client": 2,
        }
    }
    with start_server(tmp_path_factory.mktemp("http"), config=config) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=30) as opened:
        yield opened


@pytest.fixture(scope="module")
def store(server: ServerProcess) -> Iterator[SpanStore]:
    opened = open_store(server.db_url, create=False)
    yield opened
    opened.close()


def _json_span(trace_id: str, span_id: str, **extra: object) -> dict[str, object]:
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": f"op {span_id}",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        **extra,
    }


def _json_request(*spans: dict[str, object]) -> bytes:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "json-test"}}]}
    return orjson.dumps(
        {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": list(spans)}]}]}
    )


def _post(
    client: httpx.Client, path: str, body: bytes, content_type: str, **headers: str
) -> httpx.Response:
    return client.post(path, content=body, headers={"Content-Type": content_type, **headers})


def _status(response: httpx.Response) -> status_pb2.Status:
    status = status_pb2.Status()
    if response.headers["content-type"].startswith(JSON):
        document = response.json()
        status.code, status.message = document.get("code", 0), document.get("message", "")
    else:
        status.ParseFromString(response.content)
    return status


def test_sdk_http_protobuf_exporter_spans_are_stored_with_their_types(
    server: ServerProcess, store: SpanStore
) -> None:
    captured = InMemorySpanExporter()
    provider = TracerProvider(resource=SdkResource.create({"service.name": "sdk-http"}))
    provider.add_span_processor(SimpleSpanProcessor(captured))
    tracer = provider.get_tracer("tests.http", "1.0")
    with tracer.start_as_current_span("agent run") as root:
        root.set_attributes(
            {
                "count": 3,
                "ratio": 2.0,
                "ok": True,
                "tags": ["a", "b"],
                "scores": [0.5, 1.0],
                "gen_ai.input.messages": '[{"role":"user"}]',
            }
        )
        with tracer.start_as_current_span("llm call") as child:
            child.add_event("gen_ai.choice", {"index": 0})
    spans = captured.get_finished_spans()

    endpoint = f"{server.base_url}/v1/traces"
    for exporter, batch in (
        (OTLPSpanExporter(endpoint=endpoint), spans[:1]),
        (OTLPSpanExporter(endpoint=endpoint, compression=Compression.Gzip), spans[1:]),
    ):
        assert exporter.export(batch) == SpanExportResult.SUCCESS
        exporter.shutdown()

    trace_id = format(spans[0].context.trace_id, "032x")
    trace = store.load_trace(trace_id)
    assert trace is not None
    by_name = {span.name: span for span in trace.spans}
    assert set(by_name) == {"agent run", "llm call"}
    assert by_name["agent run"].attributes == {
        "count": 3,
        "ratio": 2.0,
        "ok": True,
        "tags": ["a", "b"],
        "scores": [0.5, 1.0],
        "gen_ai.input.messages": '[{"role":"user"}]',
    }
    assert type(by_name["agent run"].attributes["ratio"]) is float
    assert by_name["llm call"].parent_span_id == by_name["agent run"].span_id
    assert by_name["llm call"].events[0].attributes == {"index": 0}
    assert by_name["agent run"].service_name == "sdk-http"
    assert by_name["agent run"].scope.name == "tests.http"


def _route(path: Path) -> str:
    return (
        "/v1/logs"
        if ".logs." in path.name
        else "/v1/metrics"
        if ".metrics." in path.name
        else "/v1/traces"
    )


def test_every_captured_payload_is_stored(
    client: httpx.Client, server: ServerProcess, store: SpanStore
) -> None:
    files = sorted(p for p in CAPTURES.rglob("*") if p.suffix in (".pb", ".json"))
    assert len(files) > 100
    for path in files:
        json = path.suffix == ".json"
        if path.name.endswith(".raw.json"):  # the exact body a Node exporter sent: chunked
            status, _, body = post_chunked(server.http_port, _route(path), path.read_bytes(), JSON)
            assert (status, orjson.loads(body)) == (200, {}), path
            continue
        response = _post(client, _route(path), path.read_bytes(), JSON if json else PROTOBUF)
        assert response.status_code == 200, (path, response.text)
        assert response.headers["content-type"] == (JSON if json else PROTOBUF)
        if json:
            assert response.json() == {}, path
        else:
            assert response.content == b"", path  # an empty response: no partial_success

    expected = load_traces([CAPTURES])
    for trace in expected:
        stored = store.load_trace(trace.trace_id)
        assert stored is not None, trace.trace_id
        key = lambda s: (s.start_time_ns, s.span_id)  # noqa: E731
        assert stored.spans == sorted(trace.spans, key=key)
        assert sorted(stored.logs, key=repr) == sorted(trace.logs, key=repr)
    decoded = [decode_file(p) for p in export_files([CAPTURES])]
    span_keys = {(s.trace_id, s.span_id) for d in decoded for s in d.spans}
    assert store.count_spans() >= len(span_keys) > 0
    with store.engine.connect() as conn:
        stored_logs = conn.exec_driver_sql("SELECT count(*) FROM logs").scalar_one()
    assert stored_logs == sum(len(d.logs) for d in decoded) > 0


def test_gzip_request_is_inflated(
    client: httpx.Client, server: ServerProcess, store: SpanStore
) -> None:
    body = _json_request(_json_span("9" * 32, "1" * 16))
    response = _post(
        client, "/v1/traces", gzip.compress(body), JSON, **{"Content-Encoding": "gzip"}
    )
    assert response.status_code == 200, response.text
    assert [s.span_id for s in store.load_trace("9" * 32).spans] == ["1" * 16]


def test_spans_without_ids_are_rejected_as_partial_success(
    client: httpx.Client, server: ServerProcess, store: SpanStore
) -> None:
    trace_id = "8" * 32
    body = _json_request(
        _json_span(trace_id, "1" * 16),
        _json_span("", "2" * 16),
        _json_span(trace_id, "0" * 16),
    )
    response = _post(client, "/v1/traces", body, JSON)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 2
    assert "trace id" in partial["errorMessage"] and "span id" in partial["errorMessage"]
    assert [s.span_id for s in store.load_trace(trace_id).spans] == ["1" * 16]

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.name = bytes.fromhex("7" * 32), "no span id"
    response = _post(client, "/v1/traces", request.SerializeToString(), PROTOBUF)
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert response.status_code == 200 and answer.partial_success.rejected_spans == 1
    assert "span id" in answer.partial_success.error_message
    assert store.load_trace("7" * 32) is None


def test_undecodable_bodies_get_400_with_a_status_in_the_request_encoding(
    client: httpx.Client, server: ServerProcess, store: SpanStore
) -> None:
    before = store.count_spans()
    pb = (CAPTURES / "openinference-openai" / "tool_call" / "0001.pb").read_bytes()
    truncated = _post(client, "/v1/traces", pb[: len(pb) // 2], PROTOBUF)
    assert truncated.status_code == 400
    assert truncated.headers["content-type"] == PROTOBUF
    status = _status(truncated)
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert "invalid OTLP protobuf" in status.message

    invalid_json = _post(client, "/v1/traces", b'{"resourceSpans": [', JSON)
    assert invalid_json.status_code == 400 and "invalid JSON" in _status(invalid_json).message
    empty_json = _post(client, "/v1/logs", b"", JSON)
    assert empty_json.status_code == 400 and "invalid JSON" in _status(empty_json).message

    # A valid span followed by a malformed one: the request fails whole, nothing is stored.
    half = _json_request(
        _json_span("6" * 32, "1" * 16),
        _json_span("6" * 32, "2" * 16, attributes=[{"key": "n", "value": {"intValue": "x"}}]),
    )
    response = _post(client, "/v1/traces", half, JSON)
    assert response.status_code == 400 and "expected an integer" in _status(response).message
    assert store.load_trace("6" * 32) is None
    assert store.count_spans() == before

    bad_metrics = _post(client, "/v1/metrics", b"\xff\xff\xff", PROTOBUF)
    assert bad_metrics.status_code == 400
    assert client.get("/healthz").status_code == 200


def test_empty_protobuf_request_is_a_valid_empty_export(
    client: httpx.Client, server: ServerProcess, store: SpanStore
) -> None:
    before = store.count_spans()
    response = _post(client, "/v1/traces", b"", PROTOBUF)
    assert response.status_code == 200 and response.content == b""
    assert store.count_spans() == before


def test_unsupported_content_type_is_415(client: httpx.Client, server: ServerProcess) -> None:
    response = _post(client, "/v1/traces", b"hello", "text/plain")
    assert response.status_code == 415
    assert "text/plain" in response.json()["message"]
    compressed = _post(client, "/v1/traces", b"x", JSON, **{"Content-Encoding": "br"})
    assert compressed.status_code == 415


def test_oversized_bodies_and_gzip_bombs_are_413(
    client: httpx.Client, server: ServerProcess, store: SpanStore
) -> None:
    before = store.count_spans()
    big = _json_request(
        *[_json_span("5" * 32, f"{n + 1:016x}", name="x" * 2000) for n in range(600)]
    )
    assert len(big) > MAX_BODY
    response = _post(client, "/v1/traces", big, JSON)
    assert response.status_code == 413 and "exceeds" in _status(response).message
    status, _, _ = post_chunked(server.http_port, "/v1/traces", big, JSON, chunk_size=64 * 1024)
    assert status == 413  # no Content-Length: the running size check still stops it

    bomb = gzip.compress(b"\x00" * (50 * MAX_BODY))
    assert len(bomb) < MAX_BODY
    response = _post(client, "/v1/traces", bomb, PROTOBUF, **{"Content-Encoding": "gzip"})
    assert response.status_code == 413 and "decompressed" in _status(response).message
    assert store.count_spans() == before
    assert client.get("/healthz").status_code == 200


def test_bodies_being_received_beyond_the_readers_get_503_and_grpc_is_served_meanwhile(
    client: httpx.Client, server: ServerProcess, store: SpanStore
) -> None:
    body = _json_request(_json_span("4" * 32, "1" * 16), _json_span("4" * 32, "2" * 16))
    uploads = [ChunkedUpload(server.http_port, "/v1/traces", JSON) for _ in range(2)]
    for upload in uploads:  # two slow clients: both body readers busy, no admission slot taken
        upload.send(body[:10])
    time.sleep(0.3)
    assert client.get("/healthz").json()["in_flight"] == 0

    refused = _post(client, "/v1/traces", body, JSON)
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert "being received" in _status(refused).message
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=None,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        export(b"", timeout=10)  # the slots are free: OK, not UNAVAILABLE

    for upload in uploads:
        upload.send(body[10:])
        assert upload.finish()[0] == 200
    assert _post(client, "/v1/traces", body, JSON).status_code == 200
    assert store.trace_summary("4" * 32).span_count == 2


def test_metrics_are_accepted_and_discarded(client: httpx.Client, server: ServerProcess) -> None:
    response = _post(client, "/v1/metrics", b'{"resourceMetrics": []}', JSON)
    assert (response.status_code, response.json()) == (200, {})
