"""Small protobuf export requests for the ingest journal's tests, and the journal's owner."""

from __future__ import annotations

import time

from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from sqlalchemy import select

from tests.support.agent_otlp import export_request
from tracescore.store import SpanStore
from tracescore.store.table_of import table_of
from tracescore.store.tables import UnpackerRow


def pb_span(
    trace: str, span: str, *, parent: str = "", end: int = 2_000, event_at: int | None = None
) -> PbSpan:
    made = PbSpan(
        trace_id=bytes.fromhex(trace),
        span_id=bytes.fromhex(span),
        parent_span_id=bytes.fromhex(parent),
        name=f"op-{span[:4]}",
        start_time_unix_nano=1_000,
        end_time_unix_nano=end,
    )
    if event_at is not None:
        made.events.add(name="e", time_unix_nano=event_at)
    return made


def trace_request(trace: str, count: int = 3) -> bytes:
    """A root span and ``count - 1`` children of trace ``trace``."""
    spans = [pb_span(trace, f"{1:016x}")]
    spans += [pb_span(trace, f"{i:016x}", parent=f"{1:016x}") for i in range(2, count + 1)]
    return export_request(spans)


def unpacker_owner(store: SpanStore, timeout: float = 10.0) -> str:
    """The journal owner of the one running service, once its unpacker has beaten."""
    deadline = time.monotonic() + timeout
    while True:
        with store.engine.connect() as connection:
            owners = connection.execute(select(table_of(UnpackerRow).c.owner)).scalars().all()
        if owners:
            [owner] = owners
            return owner
        assert time.monotonic() < deadline, "no unpacker heartbeat"
        time.sleep(0.05)
