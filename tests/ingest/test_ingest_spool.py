"""The SQLite store's journal spool: files beside the database, crash windows included.

Real SQLite files and real files in the spool directory. The states a crash leaves (a commit
without its file deletions, a reservation without its entry) are made by stopping the real
code at that point, as ``kill -9`` would.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from tests.support.journal import trace_request
from tracescore.ingest.unpack import unpack
from tracescore.store import open_store
from tracescore.store.spool import SpoolJournal


def _spool(store: object) -> SpoolJournal:
    journal = store.journal.kept  # the crash windows are inside it
    assert isinstance(journal, SpoolJournal)
    return journal


def test_a_sqlite_store_keeps_entries_as_files_that_go_once_stored(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    try:
        entry = store.journal.append("traces", trace_request("a" * 32), "collector-a")
        spool = _spool(store)
        assert (spool.directory / f"{entry.seq:020d}.traces.collector-a").read_bytes() == entry.body
        assert store.journal.backlog("collector-a") == len(entry.body)
        unpack(store, [entry])
        assert sorted(os.listdir(spool.directory)) == []
        assert store.load_trace("a" * 32) is not None
    finally:
        store.close()


def test_an_entry_stored_by_a_process_that_died_before_deleting_its_file_is_not_stored_again(
    sqlite_url: str,
) -> None:
    crashed, survivor = open_store(sqlite_url), open_store(sqlite_url)
    try:
        entry = crashed.journal.append("traces", trace_request("b" * 32, count=4), "collector-a")
        spans = decode_spans(entry.body)
        # The crashed process committed the rows and the consumed record, then died.
        with crashed.write_transaction() as conn:
            assert _spool(crashed).consume(conn, [entry])
        crashed.write(spans)
        assert survivor.journal.entries() != []  # its file is still there
        unpack(survivor, survivor.journal.entries())
        assert survivor.journal.entries() == [] and survivor.journal.settle(timeout=1)
        summary = survivor.trace_summary("b" * 32)
        assert summary is not None and summary.span_count == 4 and summary.generation == 1
    finally:
        crashed.close()
        survivor.close()


def test_tidying_deletes_stored_entries_and_what_crashed_appends_left(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    try:
        spool = _spool(store)
        stored = store.journal.append("traces", trace_request("c" * 32), "collector-a")
        with store.write_transaction() as conn:  # committed, files not deleted: a crash
            assert spool.consume(conn, [stored])
        waiting = store.journal.append("traces", trace_request("d" * 32), "collector-a")
        old = time.time_ns() - 120 * 10**9
        (spool.directory / f"{old:020d}").touch()  # a reservation whose body never came
        (spool.directory / f"{old + 1:020d}.tmp").write_bytes(b"half a body")
        recent = time.time_ns()
        (spool.directory / f"{recent:020d}").touch()  # an append in progress right now

        store.journal.tidy()

        assert sorted(os.listdir(spool.directory)) == sorted(
            [f"{waiting.seq:020d}", f"{waiting.seq:020d}.traces.collector-a", f"{recent:020d}"]
        )
        assert [entry.seq for entry in store.journal.entries()] == [waiting.seq]
        with store.engine.connect() as conn:  # the record outlived its file: forgotten
            assert conn.exec_driver_sql("SELECT count(*) FROM ingest_consumed").scalar_one() == 0
    finally:
        store.close()


def test_records_of_deleted_entries_are_forgotten_by_the_next_write(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    try:
        for trace in ("e" * 32, "f" * 32):
            entry = store.journal.append("traces", trace_request(trace), "collector-a")
            unpack(store, [entry])
        with store.engine.connect() as conn:
            recorded = conn.exec_driver_sql("SELECT seq FROM ingest_consumed").scalars().all()
        assert recorded == [entry.seq]  # only the last one's, whose files went after its commit
    finally:
        store.close()


def test_processes_appending_at_once_get_distinct_numbers(sqlite_url: str) -> None:
    stores = [open_store(sqlite_url) for _ in range(2)]
    seqs: list[list[int]] = [[], []]

    def append(index: int) -> None:
        for n in range(150):
            seqs[index].append(
                stores[index].journal.append("traces", trace_request(f"{n:032x}"), f"c{index}").seq
            )

    threads = [threading.Thread(target=append, args=(i,)) for i in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        every = seqs[0] + seqs[1]
        assert len(set(every)) == 300 and seqs[0] == sorted(seqs[0])
        assert len(stores[0].journal.entries(limit=1000)) == 300
    finally:
        for store in stores:
            store.close()


def test_a_durable_database_fsyncs_its_entries(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'full.db'}?synchronous=full")
    try:
        entry = store.journal.append("traces", trace_request("9" * 32), "collector-a")
        assert _spool(store)._fsync is True
        assert store.journal.entries()[0].body == entry.body
    finally:
        store.close()


def decode_spans(body: bytes) -> list:  # type: ignore[type-arg]
    from tracescore.ingest.decode import decode_traces

    return decode_traces(body, json=False).spans


def test_settling_waits_for_the_entries_waiting_when_it_began_and_only_for_them(
    sqlite_url: str,
) -> None:
    """``settle`` returns once every entry that waited when it was called is stored or
    quarantined, whatever order they go in, and does not wait for entries that come later."""
    store = open_store(sqlite_url)
    try:
        early = [
            store.journal.append("traces", trace_request(f"{n:032x}"), "collector-a")
            for n in (1, 2, 3)
        ]
        unpack(store, [early[2]])  # the newest first: the oldest still waits
        assert not store.journal.settle(timeout=0.3)
        settled = threading.Event()
        waiter = threading.Thread(target=lambda: store.journal.settle(30) and settled.set())
        waiter.start()
        time.sleep(0.5)  # it has listed what waits
        later = store.journal.append("traces", trace_request("e" * 32), "collector-a")
        _spool(store).quarantine(early[0].seq, "for the test")
        time.sleep(0.2)
        assert not settled.is_set()  # early[1] still waits
        unpack(store, [early[1]])
        waiter.join(5)
        assert settled.is_set()  # the later entry still waits: it came after settle began
        assert [entry.seq for entry in store.journal.entries()] == [later.seq]
    finally:
        store.close()
