"""Unpack the ingest journal: decode acknowledged export requests into span and log rows.

Each collector process starts one unpacker *process* (:class:`Unpacker`). Decoding is Python
work, tens of milliseconds per thousand spans; in a thread of the collector it would hold the
GIL against the requests being acknowledged, in its own process it runs on another core while
acknowledgements stay at a few milliseconds.

With ``server.unpackers`` above one, a collector runs several, each taking the entries whose
number falls to it (``UnpackSettings.shard``), so decoding uses more cores without a whole
second service process.

The unpacker takes its collector's entries first, oldest first, and also adopts entries nobody
is unpacking: those of collectors whose unpacker has not beaten its heartbeat (every
``idle_poll``) for ``orphan_after`` seconds, which is what a crash, a stopped process or an
earlier run leaves. Two processes unpacking one entry is harmless, just wasted work:
:meth:`SpanStore.write` with ``consume`` stores it exactly once.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass

from tracescore.ingest.decode import DecodeError, Decoded, decode_logs, decode_traces
from tracescore.ingest.truncate import truncate_for_storage
from tracescore.store import SpanStore, open_store
from tracescore.store.journal import JournalEntry

log = logging.getLogger(__name__)

_GROUP_BYTES = 1024 * 1024
"""Request bodies stored in one transaction (a 1000-span request alone is above it)."""
_LANES = 2
_YOUNG_SECONDS = 30.0
"""An unpacker that dies sooner after its start is restarted after a growing delay."""
_MAX_BACKOFF_SECONDS = 60.0
_SETTINGS_VARIABLE = "TRACESCORE_UNPACK_SETTINGS"
"""The environment variable that hands an unpacker process its :class:`UnpackSettings` (JSON):
not its command line, which every user of the machine can read (the URL may hold a password)."""
_PATH_VARIABLE = "TRACESCORE_UNPACK_SYS_PATH"
_PROGRAM = (
    "import json, os, sys; "
    f"sys.path[:] = json.loads(os.environ.pop({_PATH_VARIABLE!r})); "
    "from tracescore.ingest.unpack import main; main()"
)
"""An unpacker process's ``python -c`` program. It takes the collector's ``sys.path`` first (as
``multiprocessing``'s spawn does), so it imports the very ``tracescore`` its collector runs: not,
say, a source checkout in the working directory, which ``-c`` would put first."""


def unpack(
    store: SpanStore, entries: Sequence[JournalEntry], max_attribute_chars: int | None = None
) -> None:
    """Store the entries' records and delete them, in one transaction (one commit for several
    small requests); raises if the database fails (the entries stay). An entry that does not
    decode is marked failed and kept. If another process stored one of them first, the others
    are stored one by one."""
    decoded: list[tuple[JournalEntry, Decoded]] = []
    for entry in entries:
        decode = decode_traces if entry.signal == "traces" else decode_logs
        try:
            decoded.append((entry, decode(entry.request, json=entry.json)))
        except DecodeError as exc:  # screened before the ack, so a bug: keep the evidence
            log.error("journal entry %d does not decode (%s); kept as failed", entry.seq, exc)
            store.fail_journal_entry(entry.seq, str(exc))
    for _, records in decoded:
        truncate_for_storage(records, max_attribute_chars)
    if not _store(store, decoded) and len(decoded) > 1:
        for one in decoded:
            _store(store, [one])


def _store(store: SpanStore, decoded: Sequence[tuple[JournalEntry, Decoded]]) -> bool:
    if not decoded:
        return True
    return store.write(
        [span for _, records in decoded for span in records.spans],
        [record for _, records in decoded for record in records.logs],
        # The latest arrival for every trace of the group: readiness is then never premature,
        # at most later by the group's time span (entries waiting side by side).
        received_at=max(entry.received_at for entry, _ in decoded),
        consume=[entry for entry, _ in decoded],
    )


def drain(store: SpanStore, max_attribute_chars: int | None = None) -> int:
    """Unpack every waiting entry now (offline commands run it before reading the store)."""
    done = 0
    while entries := store.journal_entries(max_bytes=_GROUP_BYTES):
        unpack(store, entries, max_attribute_chars)
        done += len(entries)
    return done


@dataclass(frozen=True)
class UnpackSettings:
    store_url: str
    owner: str
    """The collector whose entries come first."""
    max_attribute_chars: int | None = None
    orphan_after: float = 5.0
    """Seconds without a heartbeat after which another collector's entries are adopted."""
    idle_poll: float = 1.0
    """Seconds between looks at the journal when nothing woke the unpacker."""
    shard: int = 0
    shards: int = 1
    """With several unpackers per collector, this one takes the entries whose number is
    ``shard`` modulo ``shards`` (the collector wakes the one whose entry it journaled)."""


class Unpacker:
    """The unpacker process of one collector: started with it, woken by each new entry.

    It is a plain ``python -c`` subprocess (:data:`_PROGRAM`), not a ``multiprocessing`` one: spawn would start
    multiprocessing's resource tracker too (a 15 MB process, for nothing to track) and re-import
    the service's main module in every unpacker.

    It is woken through a pipe (its standard input) rather than a shared event: a collector
    killed while it held an event's lock would leave the unpacker waiting forever, whereas its
    end of the pipe closes however it dies, which the unpacker sees as end-of-file and finishes
    up on.

    An unpacker that dies (killed, out of memory) is replaced by :meth:`revive`, which the
    collector calls every second: while its collector lives, nobody else adopts its entries. One
    that keeps dying young (a database it cannot open, say) is restarted after 1, 2, 4 … 60 s.
    """

    def __init__(self, settings: UnpackSettings) -> None:
        self.settings = settings
        self._process: subprocess.Popen[bytes] | None = None
        self._wake_writer: int | None = None
        self._stopped = False
        self._started_at = 0.0
        self._backoff = 0.0
        self._retry_at: float | None = None
        """When a dead process is replaced (None: none is dead)."""
        self._lock = threading.Lock()
        """Held to write a wake-up and to close the pipe: a closed descriptor's number may be
        reused at once, and a late wake-up would then go to another file."""

    def start(self) -> None:
        reader, writer = os.pipe()
        os.set_blocking(writer, False)
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _PROGRAM],
                stdin=reader,
                env={
                    **os.environ,
                    _SETTINGS_VARIABLE: json.dumps(asdict(self.settings)),
                    _PATH_VARIABLE: json.dumps(sys.path),
                },
            )
        except BaseException:
            os.close(writer)
            raise
        finally:
            os.close(reader)  # the child has its own copy
        self._started_at = time.monotonic()
        with self._lock:
            self._process, self._wake_writer = process, writer

    @property
    def pid(self) -> int | None:
        """The current unpacker process's id (None before the first start)."""
        return self._process.pid if self._process else None

    def revive(self) -> bool:
        """Start a new process in place of one that died (not one that was stopped), at once or,
        if it died young, once its backoff has passed; True when it did."""
        process = self._process
        if self._stopped or process is None or process.poll() is None:
            return False
        now = time.monotonic()
        if self._retry_at is None:  # found dead just now
            young = now - self._started_at < _YOUNG_SECONDS
            self._backoff = min(max(2 * self._backoff, 1.0), _MAX_BACKOFF_SECONDS) if young else 0.0
            self._retry_at = now + self._backoff
            log.error(
                "unpacker %d of %d (pid %d) ended with exit code %s; starting a new one%s",
                self.settings.shard + 1, self.settings.shards, process.pid, process.returncode,
                f" in {self._backoff:g} s" if self._backoff else "",
            )  # fmt: skip
        if now < self._retry_at:
            return False
        self._retry_at = None
        self._close_pipe()
        self.start()
        return True

    def notify(self) -> None:
        """A new entry is in the journal."""
        with self._lock, contextlib.suppress(BlockingIOError, OSError):  # a wake-up is pending already
            if self._wake_writer is not None:
                os.write(self._wake_writer, b"\0")

    def stop(self, timeout: float = 30.0) -> None:
        """Let the unpacker finish this collector's entries (up to ``timeout``), then end it;
        what is left waits in the journal for the next start."""
        self._stopped = True
        self._close_pipe()
        if self._process is None:
            return
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.terminate()
            self._process.wait(5)

    def _close_pipe(self) -> None:
        with self._lock:
            if self._wake_writer is not None:
                os.close(self._wake_writer)
                self._wake_writer = None


def main() -> None:
    """An unpacker process: its settings from the environment, its wake-ups on standard input."""
    # The collector handles Ctrl-C and then closes the pipe; the terminal's SIGINT reaches the
    # whole process group, and must not cut this process short of finishing the entries.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _run(UnpackSettings(**json.loads(os.environ[_SETTINGS_VARIABLE])), sys.stdin.fileno())


def _run(settings: UnpackSettings, wake: int) -> None:
    store = open_store(settings.store_url, create=False)
    try:
        store.tidy_journal()
    except Exception:
        log.exception("tidying the ingest journal failed; unpacking anyway")
    # Decoding allocates a dozen objects per attribute and makes no reference cycles, yet the
    # cyclic GC would traverse them every 700 allocations (a quarter of the unpacking time,
    # measured). Collect after each group instead, over what it left.
    gc.freeze()
    gc.disable()
    # On PostgreSQL two lanes: one group decodes (Python, holding the GIL) while the other's
    # rows travel to the server, so neither waits on the other. SQLite has one writer, and a
    # second lane only kept the write lock from the acknowledgements (p99 ×5, measured).
    count = _LANES if store.dialect == "postgresql" else 1
    lanes = ThreadPoolExecutor(count, thread_name_prefix="unpack")
    running: dict[Future[None], list[int]] = {}
    next_beat = 0.0
    collector_gone = False  # stopped, or died: finish its entries, then end
    try:
        while True:
            if time.monotonic() >= next_beat:
                _beat(store, settings.owner)
                next_beat = time.monotonic() + settings.idle_poll
            collector_gone = _drain_wake_ups(wake) or collector_gone
            for finished in [future for future in running if future.done()]:
                del running[finished]
                _check(finished)
            if len(running) < count:
                busy = [seq for seqs in running.values() for seq in seqs]
                if group := _next_group(store, settings, busy):
                    work = lanes.submit(unpack, store, group, settings.max_attribute_chars)
                    running[work] = [entry.seq for entry in group]
                    continue
            if running:
                futures.wait(running, settings.idle_poll, return_when=futures.FIRST_COMPLETED)
            elif collector_gone:
                store.unpacker_heartbeat(settings.owner, stopping=True)
                return
            else:
                select.select([wake], [], [], settings.idle_poll)
    finally:
        lanes.shutdown(wait=True)
        store.close()


def _check(finished: Future[None]) -> None:
    error = finished.exception()
    if error is not None:  # the entries stay in the journal and are taken again
        log.error("unpacking journal entries failed; retrying in a second", exc_info=error)
        time.sleep(1.0)
    gc.collect(1)


def _drain_wake_ups(wake: int) -> bool:
    """Consume pending wake-ups (before looking at the journal, so a later one wakes the next
    wait); True once the collector's end of the pipe is closed."""
    while select.select([wake], [], [], 0)[0]:
        if not os.read(wake, 65536):
            return True
    return False


def _beat(store: SpanStore, owner: str) -> None:
    try:
        store.unpacker_heartbeat(owner)
    except Exception:
        log.warning("could not record the unpacker's heartbeat", exc_info=True)


def _next_group(store: SpanStore, settings: UnpackSettings, busy: list[int]) -> list[JournalEntry]:
    """The next entries to store together: the collector's own, else orphans."""
    try:
        shard = (settings.shard, settings.shards)
        return store.journal_entries(
            owner=settings.owner, exclude=busy, max_bytes=_GROUP_BYTES, shard=shard
        ) or store.orphaned_journal_entries(
            dead_before=time.time() - settings.orphan_after, not_owner=settings.owner,
            exclude=busy, max_bytes=_GROUP_BYTES, shard=shard,
        )  # fmt: skip
    except Exception:
        log.exception("reading the ingest journal failed; retrying in a second")
        time.sleep(1.0)
        return []
