"""Unpack the ingest journal: decode acknowledged protobuf requests into span and log rows.

Each collector process runs one :class:`Unpacker` thread. It takes the entries its own intake
journals as they come (their bodies are still in memory), and it also adopts entries nobody is
unpacking: every waiting entry when it starts (what a crash or a stopped process left), and
afterwards those of other processes that have waited longer than ``orphan_after``. Two
processes unpacking one entry is harmless: :meth:`SpanStore.write` with ``consume`` stores it
once.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque

from tracescore.ingest.decode import DecodeError, Decoded, decode_logs, decode_traces
from tracescore.ingest.truncate import truncate_decoded
from tracescore.store import SpanStore
from tracescore.store.journal import JournalEntry

log = logging.getLogger(__name__)

_RETRY_SECONDS = 1.0
_ADOPT_BATCH = 8


def truncate(decoded: Decoded, max_attribute_chars: int | None) -> None:
    if max_attribute_chars is not None:
        cut = truncate_decoded(decoded, max_attribute_chars)
        if cut:
            log.info("truncated %d attribute values over %d characters", cut, max_attribute_chars)


def unpack(store: SpanStore, entry: JournalEntry, max_attribute_chars: int | None = None) -> None:
    """Store one entry's records and delete it, in one transaction; raises if the database
    fails (the entry stays). An entry that does not decode is marked failed and kept."""
    decode = decode_traces if entry.signal == "traces" else decode_logs
    try:
        decoded = decode(entry.body, json=False)
    except DecodeError as exc:  # screened before the ack, so this is a bug: keep the evidence
        log.error("journal entry %d does not decode (%s); kept as failed", entry.seq, exc)
        store.fail_journal_entry(entry.seq, str(exc))
        return
    truncate(decoded, max_attribute_chars)
    store.write(decoded.spans, decoded.logs, received_at=entry.received_at, consume=entry.seq)


def drain(store: SpanStore, max_attribute_chars: int | None = None) -> int:
    """Unpack every waiting entry now (offline commands run it before reading the store)."""
    done = 0
    while entries := store.journal_entries(limit=_ADOPT_BATCH):
        for entry in entries:
            unpack(store, entry, max_attribute_chars)
            done += 1
    return done


class Unpacker:
    """The background thread that unpacks journal entries, oldest first."""

    def __init__(
        self, store: SpanStore, *, max_attribute_chars: int | None = None,
        orphan_after: float = 5.0, sweep_interval: float = 1.0,
    ) -> None:  # fmt: skip
        self.store = store
        self.owner = uuid.uuid4().hex
        """Recorded with each entry this process journals."""
        self.max_attribute_chars = max_attribute_chars
        self.orphan_after = orphan_after
        self.sweep_interval = sweep_interval
        self.pending_bytes = 0
        """Bodies journaled here and not unpacked yet (intake pushes back beyond a limit)."""
        self._queue: deque[JournalEntry] = deque()
        self._wake = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (once); entries submitted before wait for it."""
        with self._wake:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="unpacker", daemon=True)
                self._thread.start()

    def submit(self, entry: JournalEntry) -> None:
        with self._wake:
            self._queue.append(entry)
            self.pending_bytes += len(entry.body)
            self._wake.notify()

    def stop(self, timeout: float = 30.0) -> None:
        """Unpack what is queued (up to ``timeout``), then stop; the rest waits in the journal
        for the next start."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        while self._adopt(received_before=None) and not self._stopping:
            pass  # what an earlier run left: all of it, before anything else
        next_sweep = time.monotonic() + self.sweep_interval
        while True:
            with self._wake:
                while not self._queue and not self._stopping:
                    if not self._wake.wait(max(0.0, next_sweep - time.monotonic())):
                        break
                if not self._queue and self._stopping:
                    return
                entry = self._queue.popleft() if self._queue else None
            if entry is not None:
                self._unpack_own(entry)
            if time.monotonic() >= next_sweep:
                more = self._adopt(received_before=time.time() - self.orphan_after)
                next_sweep = time.monotonic() + (0.0 if more else self.sweep_interval)

    def _unpack_own(self, entry: JournalEntry) -> None:
        try:
            unpack(self.store, entry, self.max_attribute_chars)
        except Exception:
            log.exception("unpacking journal entry %d failed; retrying", entry.seq)
            with self._wake:
                self._queue.appendleft(entry)
                if not self._stopping:
                    self._wake.wait(_RETRY_SECONDS)
            return
        with self._wake:
            self.pending_bytes -= len(entry.body)

    def _adopt(self, *, received_before: float | None) -> bool:
        """Unpack a few entries of other processes (so our own stay prompt); True if there
        may be more."""
        try:
            entries = self.store.journal_entries(
                received_before=received_before, not_owner=self.owner, limit=_ADOPT_BATCH
            )
            for entry in entries:
                unpack(self.store, entry, self.max_attribute_chars)
        except Exception:
            log.exception("adopting journal entries failed; will retry")
            return False
        return len(entries) == _ADOPT_BATCH
