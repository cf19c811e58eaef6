"""Traces whose sources tell a story: content capture off, an unknown in-house library."""

from __future__ import annotations

import time

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from tests.support.paths import CAPTURES

LEGACY = CAPTURES / "otel-genai-openai-v2-legacy" / "tool_call"
CONTENTLESS_SPANS = LEGACY / "0001.pb"
"""The spans of the legacy capture without its log records: content capture off."""
LATEST = CAPTURES / "otel-genai-openai-v2-latest" / "tool_call"
GENAI_SERVICE, LEGACY_SCOPE = "otel-openai-v2-demo", "opentelemetry.instrumentation.openai_v2"


def acme_export(trace_number: int) -> bytes:
    """One trace of an in-house agent library with attribute names of its own."""
    trace_id = bytes([0xAC, *trace_number.to_bytes(15, "big")])
    now = time.time_ns()
    attributes = [
        KeyValue(key=key, value=AnyValue(string_value=value))
        for key, value in (
            ("acme.prompt", "What's the weather like in Paris today?"),
            ("acme.answer", "Sunny, 21 C."),
        )
    ]
    root = Span(
        trace_id=trace_id,
        span_id=bytes([0xAC, 0, 0, 0, 0, 0, 0, trace_number]),
        name="acme.run",
        start_time_unix_nano=now - 1_000_000,
        end_time_unix_nano=now,
        attributes=attributes,
    )
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(
                    attributes=[
                        KeyValue(key="service.name", value=AnyValue(string_value="acme-shop"))
                    ]
                ),
                scope_spans=[
                    ScopeSpans(
                        scope=InstrumentationScope(name="acme.agents", version="0.3"), spans=[root]
                    )
                ],
            )
        ]
    )
    return request.SerializeToString()
