"""A span with every field set, for exact round trips through the store."""

from __future__ import annotations

from tracescore.spans import Resource, Scope, Span, SpanEvent, SpanLink

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def full_span(span_id: str, parent: str | None = None, **attributes: object) -> Span:
    return Span(
        trace_id=TRACE_ID,
        span_id=span_id,
        parent_span_id=parent,
        name=f"span {span_id}",
        kind=3,
        start_time_ns=1_700_000_000_123_456_789,
        end_time_ns=1_700_000_000_987_654_321,
        attributes=dict(attributes),
        resource=Resource({"service.name": "svc", "host.bytes": b"\x02"}),
        scope=Scope("lib", "1.2", {"scope.attr": [1, 2]}),
        events=[SpanEvent("evt", 1_700_000_000_200_000_000, {"a": 1.5, "b": b"x"})],
        links=[SpanLink("1" * 32, "2" * 16, "k=v", {"link": True})],
        status_code=2,
        status_message="boom",
        trace_state="vendor=1",
        flags=0x301,
    )
