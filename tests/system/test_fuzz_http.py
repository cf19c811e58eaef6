"""Hostile export requests against a real ``tracescore serve``, over OTLP/HTTP and OTLP/gRPC.

The bulk of the fuzzing is in-process (``test_fuzz_decode.py``); this sends a few hundred of
the same bodies (with gzip, fake gzip and wrong content types mixed in) through the real
server: no 5xx, no crash, no traceback in its log, memory bounded, and it still stores a good
trace afterwards. ``benchmarks/fuzz.py`` runs the same loop with many more requests.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.otlp_fuzz import ALLOWED_STATUSES, Hostile, hostile_request
from tests.support.server_process import ServerProcess, start_server
from tracescore.value_cut import MARKER

HTTP_CASES, GRPC_CASES = 300, 100
MAX_ATTRIBUTE_CHARS = 1000
RSS_BOUND_MB = 400
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {"server": {"max_attribute_chars": MAX_ATTRIBUTE_CHARS, "max_body_bytes": 256 * 1024}}
    with start_server(tmp_path_factory.mktemp("fuzz"), config=config) as process:
        yield process


def test_hostile_http_requests_get_4xx_never_5xx(server: ServerProcess) -> None:
    rng = random.Random(20261122)
    statuses: Counter[int] = Counter()
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for _ in range(HTTP_CASES):
            path, body, headers = hostile_request(rng)
            response = client.post(path, content=body, headers=headers)
            assert response.status_code in ALLOWED_STATUSES, (
                path,
                headers,
                body[:300],
                response.text,
            )
            statuses[response.status_code] += 1
        assert client.get("/healthz").status_code == 200
    assert statuses[200] > HTTP_CASES // 10 and statuses[400] > HTTP_CASES // 10, statuses
    assert server.process.poll() is None
    assert "Traceback" not in server.output()
    assert rss_mb(server.process.pid) < RSS_BOUND_MB


def test_hostile_grpc_requests_are_ok_or_invalid_argument(server: ServerProcess) -> None:
    rng = random.Random(7)
    codes: Counter[grpc.StatusCode] = Counter()
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        export = channel.unary_unary(
            TRACE_EXPORT, request_serializer=None, response_deserializer=None
        )
        for _ in range(GRPC_CASES):
            try:
                export(Hostile(rng).protobuf_traces(), timeout=30)
                codes[grpc.StatusCode.OK] += 1
            except grpc.RpcError as error:
                codes[error.code()] += 1
    assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT}, codes
    assert codes[grpc.StatusCode.OK] > 0 and codes[grpc.StatusCode.INVALID_ARGUMENT] > 0, codes
    assert "Traceback" not in server.output()


def test_oversized_attribute_is_stored_cut_with_a_marker(server: ServerProcess) -> None:
    trace = agent_trace(random.Random(11))
    huge = "z" * 50_000
    root = trace.spans[-1]
    root.attributes.add(key="huge.value", value={"string_value": huge})
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        response = client.post(
            "/v1/traces",
            content=export_request(trace.spans),
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert response.status_code == 200, response.text
        stored = client.get(f"/api/traces/{trace.trace_id}").json()
    [span] = [s for s in stored["spans"] if s["span_id"] == trace.agent_span_id]
    expected = "z" * MAX_ATTRIBUTE_CHARS + MARKER.format(dropped=49_000, total=50_000)
    assert span["attributes"]["huge.value"] == expected
    assert span["attributes"]["gen_ai.agent.name"] == "WeatherBot"  # short values untouched
