"""The span store on real SQLite files and the real PostgreSQL server: exact round trips,
atomic writes, summaries."""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from sqlalchemy.exc import SQLAlchemyError

from tests.support.paths import CAPTURES
from tests.support.store_spans import TRACE_ID, full_span
from tracescore.ingest.files import load_traces
from tracescore.spans import LogRecord, Resource, Span
from tracescore.store import SpanStore, normalize_url, open_store

TRICKY_ATTRIBUTES = {
    "int": 1,
    "float_that_looks_int": 1.0,
    "negative_zero": -0.0,
    "big": 2**63 - 1,
    "smallest": -(2**63),
    "ratio": 0.1,
    "flag": True,
    "off": False,
    "text": 'héllo \u2603 \x00 "quoted"',
    "empty": "",
    "bytes": b"\x00\xffraw",
    "nan": math.nan,
    "inf": -math.inf,
    "array": [1, 1.0, "1", True, None, b"\x01", [2, [3.5]]],
    "kvlist": {"nested": {"deep": [1, {"k": b"v"}]}, "n": 2.0},
    "tag_lookalike": {"$b": "not bytes"},
    "tag_lookalike_map": {"$m": {"$f": "x"}},
    "dollar_text": '"$b"',
}


def _same(a: float | object, b: float | object) -> bool:
    """Equality that also treats NaN as equal to NaN and tells 0.0 from -0.0 and 1 from 1.0."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)  # type: ignore[union-attr,index]
    return a == b


@pytest.fixture
def store(db_url: str) -> SpanStore:
    opened = open_store(db_url)
    yield opened
    opened.close()


def test_typed_attributes_round_trip_exactly(store: SpanStore) -> None:
    span = full_span("a1a1a1a1a1a1a1a1", **TRICKY_ATTRIBUTES)
    record = LogRecord(
        time_ns=1_700_000_000_300_000_000,
        observed_time_ns=1_700_000_000_300_000_001,
        trace_id=TRACE_ID,
        span_id=span.span_id,
        event_name="gen_ai.choice",
        severity_number=9,
        severity_text="INFO",
        body={"message": {"$b": b"\x03"}, "n": 3},
        attributes={"x": 2**40},
        resource=span.resource,
        scope=span.scope,
        flags=1,
    )
    store.write([span], [record])

    trace = store.load_trace(TRACE_ID.upper())
    assert trace is not None
    (back,) = trace.spans
    assert _same(back.attributes, TRICKY_ATTRIBUTES)
    assert back.events[0].attributes == {"a": 1.5, "b": b"x"}
    back.attributes, span.attributes = {}, {}  # NaN != NaN: the rest compares with ==
    assert back == span
    assert trace.logs == [record]
    assert trace.logs_by_span() == {span.span_id: [record]}


def test_every_capture_round_trips(store: SpanStore) -> None:
    traces = load_traces([CAPTURES])
    assert len(traces) > 40
    for trace in traces:
        store.write(trace.spans, trace.logs)
    for trace in traces:
        loaded = store.load_trace(trace.trace_id)
        assert loaded is not None
        key = lambda s: (s.start_time_ns, s.span_id)  # noqa: E731
        assert loaded.spans == sorted(trace.spans, key=key)
        assert loaded.logs == sorted(trace.logs, key=lambda r: r.time_ns)


def test_failed_write_stores_nothing(store: SpanStore) -> None:
    good = full_span("b1b1b1b1b1b1b1b1")
    bad_log = LogRecord(
        time_ns=2**64,
        observed_time_ns=0,
        trace_id=TRACE_ID,
        span_id=None,
        event_name="",
        severity_number=0,
        severity_text="",
        body=None,
        attributes={},
        resource=good.resource,
        scope=good.scope,
    )
    with pytest.raises((SQLAlchemyError, psycopg.Error, OverflowError)):
        store.write([good], [bad_log])
    assert store.load_trace(TRACE_ID) is None
    assert store.count_spans() == 0
    assert store.list_traces() == []


def test_retried_span_is_stored_once(store: SpanStore) -> None:
    store.write([full_span("c1c1c1c1c1c1c1c1", attempt=1)])
    store.write(
        [
            full_span("c1c1c1c1c1c1c1c1", attempt=2),
            full_span("c2c2c2c2c2c2c2c2", "c1c1c1c1c1c1c1c1"),
        ]
    )
    trace = store.load_trace(TRACE_ID)
    assert trace is not None
    assert [(s.span_id, s.attributes.get("attempt")) for s in trace.spans] == [
        ("c1c1c1c1c1c1c1c1", 1),
        ("c2c2c2c2c2c2c2c2", None),
    ]
    assert store.trace_summary(TRACE_ID).span_count == 2


def test_flags_read_back_with_every_bit_as_sent(store: SpanStore) -> None:
    """A span's flags are OTLP's unsigned 32 bits, stored on PostgreSQL in a signed integer."""
    sent = {"e1e1e1e1e1e1e1e1": 0xFFFF_FFFF, "e2e2e2e2e2e2e2e2": 0x8000_0301, "e3e3e3e3e3e3e3e3": 1}
    spans = [full_span(span_id) for span_id in sent]
    for span, flags in zip(spans, sent.values(), strict=True):
        span.flags = flags
    store.write(spans)
    trace = store.load_trace(TRACE_ID)
    assert trace is not None
    assert {span.span_id: span.flags for span in trace.spans} == sent


def test_a_span_twice_in_one_write_is_stored_once_as_first_written(store: SpanStore) -> None:
    store.write(
        [
            full_span("d1d1d1d1d1d1d1d1", attempt=1),
            full_span("d1d1d1d1d1d1d1d1", attempt=2),
            full_span("d2d2d2d2d2d2d2d2", "d1d1d1d1d1d1d1d1"),
        ]
    )
    trace = store.load_trace(TRACE_ID)
    assert trace is not None
    assert [(s.span_id, s.attributes.get("attempt")) for s in trace.spans] == [
        ("d1d1d1d1d1d1d1d1", 1),
        ("d2d2d2d2d2d2d2d2", None),
    ]
    assert store.count_spans() == 2


def test_retries_written_at_once_by_two_processes_store_each_span_once(pg_url: str) -> None:
    """PostgreSQL's spans have no unique key (``store/span_insert.py``): two writers of the same
    spans, each with an engine of its own, racing over many traces, still store each span once,
    and the traces count them once."""
    stores = [open_store(pg_url), open_store(pg_url)]
    traces = [f"{n:032x}" for n in range(1, 41)]

    def spans_of(trace_id: str, writer: int) -> list[Span]:
        spans = [full_span(f"{n:016x}", None if n == 1 else f"{1:016x}") for n in (1, 2, 3)]
        spans.append(full_span(f"{10 + writer:016x}", f"{1:016x}"))  # one of each writer's own
        for span in spans:
            span.trace_id = trace_id
        return spans

    start = threading.Barrier(2)

    def write(writer: int) -> None:
        for trace_id in traces:
            start.wait()
            stores[writer].write(spans_of(trace_id, writer))

    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(write, (0, 1)))
        loaded = stores[0].load_traces(traces)
        assert {trace_id: len(loaded[trace_id].spans) for trace_id in traces} == dict.fromkeys(
            traces, 5
        )
        assert {stores[0].trace_summary(t).span_count for t in traces} == {5}
    finally:
        for opened in stores:
            opened.close()


def test_summaries_filter_by_service_and_activity(store: SpanStore) -> None:
    before = time.time()
    store.write([full_span("d1d1d1d1d1d1d1d1")])
    other = full_span("d2d2d2d2d2d2d2d2")
    other.trace_id, other.resource = "f" * 32, Resource({"service.name": "other"})
    store.write([other])

    (summary,) = store.list_traces(service="svc")
    assert (summary.trace_id, summary.has_root, summary.span_count, summary.root_name) == (
        TRACE_ID,
        True,
        1,
        "span d1d1d1d1d1d1d1d1",
    )
    assert summary.start_time_ns == 1_700_000_000_123_456_789
    assert summary.state == "pending" and summary.first_seen >= before
    assert [s.trace_id for s in store.list_traces(limit=1)] == ["f" * 32]
    assert store.list_traces(since=time.time() + 60) == []
    assert store.trace_summary("F" * 32) == store.list_traces(service="other")[0]
    assert store.trace_summary("e" * 32) is None and store.load_trace("e" * 32) is None


def test_summary_takes_service_and_name_from_the_root(store: SpanStore) -> None:
    child = full_span("e2e2e2e2e2e2e2e2", "e1e1e1e1e1e1e1e1")
    child.resource = Resource({"service.name": "child-service"})
    store.write([child])
    assert store.trace_summary(TRACE_ID).service_name == "child-service"
    store.write([full_span("e1e1e1e1e1e1e1e1")])
    summary = store.trace_summary(TRACE_ID)
    assert (summary.service_name, summary.root_name, summary.span_count) == (
        "svc",
        "span e1e1e1e1e1e1e1e1",
        2,
    )


def test_plain_postgresql_urls_use_psycopg() -> None:
    assert normalize_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"


def test_sqlite_store_uses_wal_and_takes_synchronous_from_the_url(sqlite_url: str) -> None:
    for url, level in ((sqlite_url, 1), (sqlite_url + "?synchronous=full", 2)):
        store = open_store(url)
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar_one() == level
        store.close()
    with pytest.raises(ValueError, match="synchronous"):
        open_store(sqlite_url + "?synchronous=sometimes")


def test_retried_log_records_are_stored_once(store: SpanStore) -> None:
    trace = next(t for t in load_traces([CAPTURES / "otel-genai-openai-v2-legacy"]) if t.logs)
    store.write([], trace.logs)
    store.write(trace.spans, trace.logs)
    loaded = store.load_trace(trace.trace_id)
    assert loaded is not None and len(loaded.logs) == len(trace.logs) > 0
    assert store.trace_summary(trace.trace_id).log_count == len(trace.logs)
