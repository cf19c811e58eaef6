"""The span store (``store/spanstore.py``) through its public methods, on real SQLite files and
the real PostgreSQL server: batch loads, the trace list's pages, the counts of what writes
altered, journal entries consumed once. (Exact round trips and atomic writes:
``test_store.py``.)"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.support.store_spans import full_span
from tracescore.spans import LogRecord, Resource, Scope, Span
from tracescore.store import SpanStore, open_store
from tracescore.store.traces import LAST_TRACE_ID, trace_keys


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    opened = open_store(db_url)
    yield opened
    opened.close()


def _spans(trace_id: str, count: int = 2) -> list[Span]:
    spans = [
        full_span(f"{n + 1:016x}", None if n == 0 else "0000000000000001") for n in range(count)
    ]
    for span in spans:
        span.trace_id = trace_id
    return spans


def test_a_batch_load_returns_the_stored_traces_by_id_with_their_records(
    store: SpanStore,
) -> None:
    (root, *_) = spans = _spans("a" * 32, 3)
    record = LogRecord(
        time_ns=1_700_000_000_300_000_000,
        observed_time_ns=1_700_000_000_300_000_000,
        trace_id="a" * 32,
        span_id=root.span_id,
        event_name="gen_ai.choice",
        severity_number=9,
        severity_text="INFO",
        body="said",
        attributes={},
        resource=root.resource,
        scope=root.scope,
    )
    store.write(spans, [record])
    store.write(_spans("b" * 32))
    loaded = store.load_traces(["A" * 32, "b" * 32, "c" * 32])
    assert sorted(loaded) == ["a" * 32, "b" * 32]
    assert [len(loaded[t].spans) for t in sorted(loaded)] == [3, 2]
    assert [log.body for log in loaded["a" * 32].logs] == ["said"] and loaded["b" * 32].logs == []
    assert store.load_trace("c" * 32) is None
    assert store.count_spans() == 5


def test_resources_and_scopes_read_once_are_still_read_right_after_new_ones_arrive(
    store: SpanStore,
) -> None:
    """A store keeps the resources and scopes it has read; a later load still reads the ones
    written since, and each span keeps its own."""
    store.write(_spans("a" * 32))
    first = store.load_trace("a" * 32)
    later = _spans("b" * 32)
    later[1].resource = Resource({"service.name": "other"})
    later[1].scope = Scope("other lib", "2", {})
    store.write(later)
    loaded = store.load_traces(["a" * 32, "b" * 32])
    assert first is not None and loaded["a" * 32].spans == first.spans
    spans = loaded["b" * 32].spans
    assert spans[0].resource == first.spans[0].resource and spans[0].scope == first.spans[0].scope
    assert spans[1].resource == Resource({"service.name": "other"})
    assert spans[1].scope == Scope("other lib", "2", {})


def test_the_trace_list_pages_most_recent_first_and_filters(store: SpanStore) -> None:
    now = time.time()
    for age, trace_id in enumerate(("1" * 32, "2" * 32, "3" * 32)):
        store.write(_spans(trace_id), received_at=now - 10 * age)
    first = store.list_traces(limit=2)
    assert [s.trace_id for s in first] == ["1" * 32, "2" * 32]
    rest = store.list_traces(limit=2, after=(first[-1].last_seen, first[-1].trace_id))
    assert [s.trace_id for s in rest] == ["3" * 32]
    assert [s.trace_id for s in store.list_traces(since=now - 15)] == ["1" * 32, "2" * 32]
    assert store.list_traces(service="no such service") == []
    assert {s.service_name for s in store.list_traces()} == {"svc"}


def test_traces_in_every_state_list_and_scan_in_last_seen_order(store: SpanStore) -> None:
    """PostgreSQL reads the list one state at a time, each from its own index (settled traces
    from ``ix_traces_last_seen``, ``store/traces.py``): every state is in it, in one order."""
    now = time.time()
    ids = [f"{n:032x}" for n in range(1, 7)]
    for age, trace_id in zip((50, 40, 30, 20, 10), ids, strict=False):
        store.write(_spans(trace_id), received_at=now - age)
    (first, second) = store.queue.claim("worker", 2, 60, now=now)
    assert store.queue.complete([first], now=now) == 0
    store.write(_spans(ids[5]), received_at=now)  # still arriving: pending
    newest_first = [ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]]
    states = ["pending", "ready", "ready", "ready", "claimed", "scored"]
    listed = store.list_traces()
    assert [(s.trace_id, s.state) for s in listed] == list(zip(newest_first, states, strict=True))
    pages, after = [], None
    while page := store.list_traces(limit=2, after=after):
        pages.append([s.trace_id for s in page])
        after = (page[-1].last_seen, page[-1].trace_id)
    assert pages == [newest_first[:2], newest_first[2:4], newest_first[4:]]
    with store.engine.connect() as connection:
        keys = trace_keys(connection, (0.0, ""), (now + 1, LAST_TRACE_ID), 4)
    assert [trace_id for _, trace_id in keys] == newest_first[::-1][:4]
    assert (first.trace_id, second.trace_id) == (ids[0], ids[1])


def test_what_writes_altered_is_counted_once(store: SpanStore) -> None:
    (span,) = _spans("d" * 32, 1)
    span.name = "nul \x00 in a name"
    (future,) = _spans("e" * 32, 1)
    now = time.time()
    future.start_time_ns = future.end_time_ns = int((now + 30 * 86_400) * 1e9)
    store.write([span, future], received_at=now)
    replaced, future_times = store.take_counts()
    assert replaced >= 1 and future_times == 1
    assert store.take_counts() == (0, 0)
    (stored,) = store.load_trace("d" * 32).spans
    assert "\x00" not in stored.name and stored.name.startswith("nul ")
    assert store.load_trace("e" * 32).spans[0].start_time_ns == future.start_time_ns


def test_records_of_a_journal_entry_are_stored_once_whoever_consumes_it(
    store: SpanStore,
) -> None:
    entry = store.journal.append("traces", b"a request", "owner")
    assert store.write(_spans("f" * 32), consume=[entry]) is True
    assert store.write(_spans("0" * 32), consume=[entry]) is False  # another process's: nothing
    assert store.load_trace("0" * 32) is None
    assert len(store.load_trace("f" * 32).spans) == 2
