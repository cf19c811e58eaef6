"""The ingest journal: protobuf exports are acknowledged once their checked body is committed,
and unpacked into rows after, exactly once, by the unpacker process (or anyone adopting it).

Real SQLite files and the real PostgreSQL server; real unpacker processes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given

from tests.support.agent_otlp import export_logs_request, export_request
from tests.support.journal import pb_span, trace_request
from tests.support.otlp_fuzz import fuzz_settings, hostile
from tests.support.paths import CAPTURES
from tracescore.ingest.decode import DecodeError, decode_traces
from tracescore.ingest.intake import Busy, Intake
from tracescore.ingest.screen import screen_logs, screen_traces
from tracescore.ingest.unpack import Unpacker, UnpackSettings, drain, unpack
from tracescore.metrics import REGISTRY
from tracescore.store import SpanStore, open_store

_TOO_LATE = 2**64 - 1  # uint64 on the wire, past what SQL's BIGINT holds


# ----------------------------------------------------------------------------- screening


def test_screening_rejects_exactly_what_decoding_rejects_and_journals_the_rest() -> None:
    good = [pb_span("a" * 32, f"{i:016x}") for i in range(1, 4)]
    bad = [
        pb_span("0" * 32, "1" * 16),  # zero trace id
        pb_span("b" * 32, "22"),  # short span id
        pb_span("c" * 32, "3" * 16, end=_TOO_LATE),
        pb_span("d" * 32, "4" * 16, event_at=_TOO_LATE),
    ]
    body = export_request([good[0], bad[0], good[1], bad[1], bad[2], good[2], bad[3]])
    screened = screen_traces(body)
    decoded = decode_traces(body, json=False)
    assert screened.receipt == decoded.receipt()
    assert (screened.receipt.spans, screened.receipt.rejected) == (3, 4)
    assert "trace id" in screened.receipt.error_message and "2262" in screened.receipt.error_message
    # The journaled body holds exactly the accepted spans, and nothing in it is rejected again.
    unpacked = decode_traces(screened.body, json=False)
    assert unpacked.rejected == 0 and unpacked.spans == decoded.spans


def test_a_valid_request_is_journaled_as_sent() -> None:
    body = trace_request("e" * 32)
    assert screen_traces(body).body is body
    logs = export_logs_request([])
    assert screen_logs(logs).receipt.logs == 0


@fuzz_settings(1500)
@given(hostile("protobuf_traces"))
def test_screening_agrees_with_decoding_on_any_protobuf_request(body: bytes) -> None:
    try:
        decoded = decode_traces(body, json=False)
    except DecodeError:
        with pytest.raises(DecodeError):
            screen_traces(body)
        return
    screened = screen_traces(body)
    assert screened.receipt == decoded.receipt()
    again = decode_traces(screened.body, json=False)
    assert again.rejected == 0 and repr(again.spans) == repr(decoded.spans)  # repr: NaN values


# ----------------------------------------------------------------------------- unpacking


def test_an_entry_is_unpacked_exactly_once_whoever_unpacks_it(db_url: str) -> None:
    first, second = open_store(db_url), open_store(db_url)  # two collector processes' stores
    try:
        entry = first.journal.append("traces", trace_request("f" * 32, count=5), "collector-a")
        unpack(first, [entry])
        unpack(second, [entry])  # a second process that also picked it up: no effect
        assert second.write([], consume=[entry]) is False
        trace = first.load_trace("f" * 32)
        assert trace is not None and len(trace.spans) == 5
        summary = first.trace_summary("f" * 32)
        assert summary is not None and summary.span_count == 5 and summary.generation == 1
        assert first.journal.entries() == []
    finally:
        first.close()
        second.close()


def test_entries_are_stored_together_and_one_taken_by_another_process_is_not_stored_twice(
    db_url: str,
) -> None:
    first, second = open_store(db_url), open_store(db_url)
    try:
        entries = [
            first.journal.append("traces", trace_request(f"{n:032x}", count=4), "collector-a")
            for n in (7, 8, 9)
        ]
        unpack(second, entries[1:2])  # the other process got to the middle one first
        unpack(first, entries)  # the group fails as a whole, then each of the rest is stored
        for n in (7, 8, 9):
            summary = first.trace_summary(f"{n:032x}")
            assert summary is not None and summary.span_count == 4 and summary.generation == 1
        assert first.journal.entries() == [] and first.count_spans() == 12
        # A group of three stored in one transaction: each trace touched once.
        more = [
            first.journal.append("traces", trace_request(f"{n:032x}", count=2), "collector-a")
            for n in (10, 11, 12)
        ]
        unpack(first, more)
        assert first.count_spans() == 18
        assert {first.trace_summary(f"{n:032x}").generation for n in (10, 11, 12)} == {1}  # type: ignore[union-attr]
    finally:
        first.close()
        second.close()


def test_each_unpacker_of_a_collector_takes_its_own_share_of_the_entries(db_url: str) -> None:
    """Shards split a collector's entries (and a dead collector's) by number: every entry in
    exactly one shard, shards of about equal size."""
    store = open_store(db_url)
    try:
        entries = [
            store.journal.append("traces", trace_request(f"{n:032x}", count=1), "collector-a")
            for n in range(1, 61)
        ]
        dead = [
            store.journal.append("traces", trace_request(f"{n:032x}", count=1), "collector-dead")
            for n in range(61, 67)
        ]
        shards = [
            {e.seq for e in store.journal.entries(owner="collector-a", shard=(k, 3), limit=100)}
            for k in range(3)
        ]
        assert set().union(*shards) == {e.seq for e in entries}
        assert sum(map(len, shards)) == len(entries)  # no entry in two shards
        assert all(
            store.journal.shard_of(seq, 3) == k for k, shard in enumerate(shards) for seq in shard
        )
        assert all(len(shard) >= 8 for shard in shards)  # 20 each on average
        adopted = [
            {
                e.seq
                for e in store.journal.orphans(
                    dead_before=time.time() + 1,
                    not_owner="collector-a",
                    shard=(k, 2),
                    max_bytes=10**9,
                )
            }
            for k in range(2)
        ]
        assert adopted[0] | adopted[1] == {e.seq for e in dead} and not adopted[0] & adopted[1]
        # Unpacking one shard leaves the other's entries waiting.
        unpack(store, store.journal.entries(owner="collector-a", shard=(0, 3), limit=100))
        assert {e.seq for e in store.journal.entries(owner="collector-a", limit=100)} == shards[
            1
        ] | shards[2]
    finally:
        store.close()


def test_an_otlp_json_entry_is_kept_as_received_and_unpacked_like_protobuf(
    db_url: str, tmp_path: Path
) -> None:
    """JSON requests are journaled (after the collector decoded them once to check them) and
    decoded again by the unpacker: the same rows as the protobuf form of the request gives."""
    json_body = (
        CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent" / "0001.json"
    ).read_bytes()
    protobuf_body = (
        CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent" / "0001.pb"
    ).read_bytes()
    from_json, from_protobuf = (
        open_store(db_url),
        open_store(f"sqlite:///{tmp_path / 'protobuf.db'}"),
    )
    try:
        entry = from_json.journal.append("traces", json_body, "collector-a", json=True)
        [waiting] = from_json.journal.entries()
        assert waiting.json and waiting.request == json_body and waiting.body[:1] == b"\0"
        unpack(from_json, [entry])
        unpack(
            from_protobuf, [from_protobuf.journal.append("traces", protobuf_body, "collector-a")]
        )
        trace_id = decode_traces(protobuf_body, json=False).spans[0].trace_id
        stored = from_json.load_trace(trace_id)
        assert stored is not None and len(stored.spans) > 1
        assert stored == from_protobuf.load_trace(trace_id)
        assert not from_json.journal.append(
            "logs", b"\n\x00", "collector-a"
        ).json  # protobuf is kept as sent
    finally:
        from_json.close()
        from_protobuf.close()


def test_readiness_is_judged_as_of_the_oldest_entry_still_in_the_journal(sqlite_url: str) -> None:
    store = open_store(sqlite_url)  # idle_timeout 5 s
    try:
        now = time.time()
        spans = decode_traces(trace_request("1" * 32), json=False).spans
        store.write(spans, received_at=now - 3)
        entry = store.journal.append("traces", trace_request("2" * 32), "collector-a")
        # By the clock trace 1 has been idle for 13 s, but the waiting entry, received 3 s after
        # its last span, may hold more of it: as of then it was idle for 3 s only.
        assert store.queue.promote(now=now + 10) == 0
        unpack(store, [entry])
        assert store.queue.promote(now=now + 10) == 2
        assert {store.trace_summary(t).state for t in ("1" * 32, "2" * 32)} == {"ready"}  # type: ignore[union-attr]
    finally:
        store.close()


def test_an_entry_that_does_not_decode_is_quarantined_and_holds_nothing_back(db_url: str) -> None:
    store = open_store(db_url)
    try:
        entry = store.journal.append("traces", b"\xff not protobuf", "collector-a")
        assert store.journal.settle(timeout=0.05) is False
        assert unpack(store, [entry]) == 1
        assert store.journal.settle(timeout=0.05) is True
        [quarantined] = store.journal.quarantined()
        assert quarantined.seq == entry.seq and "invalid OTLP protobuf" in quarantined.reason
        assert (quarantined.signal, quarantined.size) == ("traces", len(entry.body))
        assert store.journal.entries() == []
    finally:
        store.close()


@contextmanager
def _store_and_unpacker(
    url: str, owner: str, orphan_after: float = 5.0
) -> Iterator[tuple[SpanStore, Unpacker]]:
    """A store and a (not yet started) unpacker process for ``owner``'s entries, both closed after."""
    store = open_store(url)
    unpacker = Unpacker(UnpackSettings(url, owner=owner, orphan_after=orphan_after, idle_poll=0.1))
    try:
        yield store, unpacker
    finally:
        unpacker.stop()
        store.close()


def test_reads_wait_for_the_unpacker_and_entries_of_dead_collectors_are_adopted(
    db_url: str,
) -> None:
    with _store_and_unpacker(db_url, "alive", orphan_after=0.5) as (store, unpacker):
        store.journal.append(
            "traces", trace_request("3" * 32), "crashed-before"
        )  # no unpacker beats for it
        assert store.journal.settle(timeout=0.2) is False  # nobody unpacks: reads would miss it
        unpacker.start()
        assert store.journal.settle(timeout=30)  # adopted
        assert store.journal.entries() == [] and store.load_trace("3" * 32) is not None
        # A collector whose unpacker beats keeps its entries, however long they wait ...
        store.journal.append("traces", trace_request("4" * 32), "busy-collector")
        for _ in range(15):
            store.journal.heartbeat("busy-collector")
            time.sleep(0.1)
        assert len(store.journal.entries()) == 1
        # ... until it stops beating: then they are adopted.
        assert store.journal.settle(timeout=30)
        assert store.load_trace("4" * 32) is not None
        # Its own entries go at once when woken.
        store.journal.append("traces", trace_request("5" * 32), "alive")
        unpacker.notify()
        assert store.journal.settle(timeout=30)
        assert [s.span_id for s in store.load_trace("5" * 32).spans][:1] == ["0" * 15 + "1"]  # type: ignore[union-attr]


def test_an_unpacker_keeps_the_store_url_off_its_command_line_and_ignores_ctrl_c(
    db_url: str,
) -> None:
    """Its settings travel in its environment (a URL's password would show in ``ps``), and the
    terminal's SIGINT, which reaches the whole process group, leaves it to its collector."""
    with _store_and_unpacker(db_url, "terminal") as (store, unpacker):
        unpacker.start()
        assert unpacker.pid is not None
        store.journal.append("traces", trace_request("8" * 32), "terminal")
        unpacker.notify()
        assert store.journal.settle(timeout=30)
        command_line = Path(f"/proc/{unpacker.pid}/cmdline").read_bytes()
        assert b"tracescore.ingest.unpack" in command_line
        assert db_url.encode() not in command_line and b"terminal" not in command_line
        os.kill(unpacker.pid, signal.SIGINT)
        time.sleep(0.5)
        store.journal.append(
            "traces", trace_request("9" * 32), "terminal"
        )  # nobody else unpacks it
        unpacker.notify()
        assert store.journal.settle(timeout=10)
        assert store.load_trace("9" * 32) is not None


def test_an_unpacker_imports_the_tracescore_its_collector_runs(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started from a directory holding another ``tracescore`` (a source checkout, say), which
    ``python -c`` would import first, it still imports its collector's."""
    decoy = tmp_path / "elsewhere" / "tracescore"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text('raise ImportError("the decoy tracescore was imported")\n')
    monkeypatch.chdir(decoy.parent)
    with _store_and_unpacker(sqlite_url, "checkout") as (store, unpacker):
        store.journal.append("traces", trace_request("a" * 32), "checkout")
        unpacker.start()
        assert store.journal.settle(timeout=30)
        assert store.load_trace("a" * 32) is not None


def test_backlog_over_the_limit_is_refused_until_the_unpacker_catches_up(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'journal.db'}")
    intake = Intake(store, max_pending=8, max_journal_bytes=1)

    async def export(trace: str) -> None:
        with intake.admitted():
            await intake.traces(trace_request(trace), json=False)

    try:
        asyncio.run(export("6" * 32))  # accepted: nothing waited yet
        waiting = REGISTRY.get_sample_value("tracescore_ingest_journal_bytes")
        assert waiting == intake.journal_backlog == len(trace_request("6" * 32))
        with pytest.raises(Busy, match="MiB of acknowledged requests still to unpack"):
            asyncio.run(export("7" * 32))
        intake.start()
        assert store.journal.settle(timeout=30)
        time.sleep(0.6)  # the backlog is looked up again at most every half second
        asyncio.run(export("7" * 32))
        assert store.load_trace("7" * 32) is not None
    finally:
        intake.close()
        store.close()


def test_drain_stores_everything_waiting(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    try:
        for n in range(1, 12):
            store.journal.append("traces", trace_request(f"{n:032x}"), f"collector-{n % 3}")
        assert drain(store) == 11
        assert store.count_spans() == 33 and store.journal.entries() == []
    finally:
        store.close()


def test_an_unpacker_that_keeps_dying_young_is_restarted_ever_later() -> None:
    """Its store URL names no database it can open: each process exits at once, and the delays
    before the next start double (1, 2 s) instead of a restart every second."""
    unpacker = Unpacker(UnpackSettings("nosuchdriver://nowhere/db", "collector-a"))
    waits: list[float] = []  # from a process's death (as polled) to the next start
    died_at: float | None = None
    try:
        unpacker.start()
        deadline = time.monotonic() + 60
        while len(waits) < 2 and time.monotonic() < deadline:
            if died_at is None and unpacker.returncode is not None:
                died_at = time.monotonic()
            if unpacker.revive():
                assert died_at is not None
                waits.append(time.monotonic() - died_at)
                died_at = None
            time.sleep(0.05)
    finally:
        unpacker.stop()
    assert len(waits) == 2
    # Measured from each death, not from each start: an interpreter's start-up on a loaded
    # machine varies by more than the difference between the delays.
    first_wait, second_wait = waits
    assert second_wait > first_wait + 0.5, (first_wait, second_wait)
    assert unpacker.revive() is False  # stopped: not started again
