"""The trace queue's vacuum (``store/vacuum.py``'s ``vacuum_queue``) on a real PostgreSQL: it
runs only once enough of the ``traces`` table's row versions are dead, and then leaves none
dead; the traces it passes over keep their states. It vacuums the ingest journal too, whose
consumed request bodies it gives back. On SQLite it does nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from tests.support.store_spans import full_span
from tracescore.store import ReadinessRules, SpanStore, open_store
from tracescore.store.vacuum import vacuum_queue

TRACES = [f"{n:032x}" for n in range(1, 41)]


@pytest.fixture
def store(pg_url: str) -> Iterator[SpanStore]:
    opened = open_store(pg_url, ReadinessRules(idle_timeout=0.0))
    yield opened
    opened.close()


def _score_all(store: SpanStore) -> None:
    """Each trace written, claimed and completed: three dead versions of its row."""
    spans = []
    for trace_id in TRACES:
        span = full_span("0000000000000001")
        span.trace_id = trace_id
        spans.append(span)
    store.write(spans)
    claims = store.queue.claim("w", len(TRACES), 30, now=time.time() + 1)
    assert len(claims) == len(TRACES)
    assert store.queue.complete(claims) == 0  # none lost


def _dead_and_vacuums(store: SpanStore, table: str = "traces") -> tuple[int, int]:
    with store.engine.connect() as connection:
        row = connection.execute(
            text("SELECT n_dead_tup, vacuum_count FROM pg_stat_user_tables WHERE relname = :table"),
            {"table": table},
        ).one()
    return int(row[0]), int(row[1])


def _until_counted(store: SpanStore, dead: int, table: str = "traces") -> None:
    """Wait for the server's statistics to count the dead versions (backends report them at
    most once a second)."""
    deadline = time.monotonic() + 10
    while _dead_and_vacuums(store, table)[0] < dead:
        assert time.monotonic() < deadline, "the statistics never counted the dead rows"
        time.sleep(0.2)


def test_the_queue_is_vacuumed_once_enough_of_it_is_dead(store: SpanStore) -> None:
    _score_all(store)
    _until_counted(store, 2 * len(TRACES))
    _, vacuums = _dead_and_vacuums(store)
    assert vacuum_queue(store.engine, dead_rows=10 * len(TRACES)) == []
    assert _dead_and_vacuums(store)[1] == vacuums
    # The claims' leases (a row inserted and deleted for each trace) may be vacuumed with it.
    assert "traces" in vacuum_queue(store.engine, dead_rows=len(TRACES))
    deadline = time.monotonic() + 10
    while _dead_and_vacuums(store) != (0, vacuums + 1):
        assert time.monotonic() < deadline, f"not vacuumed: {_dead_and_vacuums(store)}"
        time.sleep(0.2)
    assert {store.trace_summary(t).state for t in TRACES} == {"scored"}  # type: ignore[union-attr]


def _journal_bytes(store: SpanStore) -> int:
    with store.engine.connect() as connection:
        size = connection.execute(
            text("SELECT pg_total_relation_size(CAST('ingest_journal' AS regclass))")
        ).scalar_one()
    return int(size)


def test_consumed_journal_bodies_are_given_back(store: SpanStore) -> None:
    journal = store.journal.kept
    empty = _journal_bytes(store)
    entries = [journal.append("traces", os.urandom(50_000), "w") for _ in range(20)]
    with store.write_transaction() as connection:
        assert journal.consume(connection, entries)
    full = _journal_bytes(store)
    assert full > empty + 20 * 50_000  # the bodies, uncompressed, in the TOAST table
    _until_counted(store, len(entries), "ingest_journal")
    assert vacuum_queue(store.engine, dead_rows=10**9) == ["ingest_journal"]
    assert (
        _journal_bytes(store) < full // 10
    )  # the drained table's pages given back (its maps stay)
    assert vacuum_queue(store.engine, dead_rows=10**9) == []  # nothing dead is left


def test_sqlite_is_left_alone(sqlite_url: str) -> None:
    opened = open_store(sqlite_url)
    try:
        assert vacuum_queue(opened.engine, dead_rows=0, journal_dead_rows=0) == []
    finally:
        opened.close()
