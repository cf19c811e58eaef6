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
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TextIO

from tracescore.ingest.decode import DecodeError, Decoded, decode_logs, decode_traces
from tracescore.backoff import Backoff
from tracescore.ingest.truncate import truncate_for_storage
from tracescore.store import SpanStore, open_store
from tracescore.store.journal import JournalEntry
from tracescore.store.outage import database_unavailable

log = logging.getLogger(__name__)

_GROUP_BYTES = 1024 * 1024
"""Request bodies stored in one transaction (a 1000-span request alone is above it)."""
_LANES = 2
_YOUNG_SECONDS = 30.0
"""An unpacker that dies sooner after its start is restarted after a growing delay."""
_MAX_BACKOFF_SECONDS = 60.0
_EXIT_GRACE_SECONDS = 5.0
"""How long past its shutdown deadline a stopped unpacker may take before it is ended."""
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
) -> int:
    """Store the entries' records and delete them, in one transaction (one commit for several
    small requests); returns how many entries were quarantined.

    Raises if the database is unavailable (:func:`database_unavailable`): the entries stay
    and are taken again. Any other failure is the entries' own: the group is retried one entry
    at a time, and an entry that still fails alone (or does not decode) is quarantined, kept
    with its reason out of the way of the others, so that no entry can hold back the ones
    behind it, or trace readiness, for ever. If another process stored one of them first, the
    others are stored one by one.
    """
    decoded: list[tuple[JournalEntry, Decoded]] = []
    quarantined = 0
    for entry in entries:
        decode = decode_traces if entry.signal == "traces" else decode_logs
        try:
            decoded.append((entry, decode(entry.request, json=entry.json)))
        except DecodeError as exc:  # screened before the ack: an entry of an older release, or a bug
            _quarantine(store, entry, exc)
            quarantined += 1
    for _, records in decoded:
        truncate_for_storage(records, max_attribute_chars)
    if len(decoded) > 1:
        try:
            if _store(store, decoded):
                return quarantined
        except Exception as exc:
            if database_unavailable(exc):
                raise
    return quarantined + sum(_store_alone(store, one) for one in decoded)


def _store_alone(store: SpanStore, one: tuple[JournalEntry, Decoded]) -> int:
    """Store one entry; 1 if it had to be quarantined instead, 0 if stored."""
    try:
        _store(store, [one])
    except Exception as exc:
        if database_unavailable(exc) or not _quarantine(store, one[0], exc):
            raise
        return 1
    return 0


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


def _quarantine(store: SpanStore, entry: JournalEntry, error: BaseException) -> bool:
    """Set ``entry`` aside with the reason (logged once, here); False if that failed too."""
    reason = f"{type(error).__name__}: {error}"[:2000]
    try:
        store.quarantine_journal_entry(entry.seq, reason)
    except Exception:
        log.exception("could not quarantine journal entry %d", entry.seq)
        return False
    log.error(
        "journal entry %d (%s, %d bytes) cannot be stored and is quarantined: %s",
        entry.seq, entry.signal, len(entry.body), reason,
    )  # fmt: skip
    return True


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
    shutdown_timeout: float = 10.0
    """Once its collector is gone (stopped, or dead), seconds the unpacker goes on storing the
    collector's entries before it exits; what is left waits in the journal for the next start."""
    collector_pid: int = 0
    """The collector's process id: an unpacker whose parent is another process is a leftover
    (see :func:`stop_leftover_unpackers`)."""


@dataclass(frozen=True, slots=True)
class UnpackReport:
    """What an unpacker process tells its collector after each group, for the metrics
    (a line of JSON on its standard output)."""

    quarantined: int = 0
    text_replaced: int = 0


class Unpacker:
    """The unpacker process of one collector: started with it, woken by each new entry.

    It is a plain ``python -c`` subprocess (:data:`_PROGRAM`), not a ``multiprocessing`` one: spawn would start
    multiprocessing's resource tracker too (a 15 MB process, for nothing to track) and re-import
    the service's main module in every unpacker.

    It is woken through a pipe (its standard input) rather than a shared event: a collector
    killed while it held an event's lock would leave the unpacker waiting forever, whereas its
    end of the pipe closes however it dies, which the unpacker sees as end-of-file. It then
    stores what it can of the collector's entries for ``shutdown_timeout`` seconds and exits,
    whatever state the database is in: no unpacker outlives its collector by more than that.
    Its reports (:class:`UnpackReport`) come back on its standard output, read by a thread.

    An unpacker that dies (killed, out of memory) is replaced by :meth:`revive`, which the
    collector calls every second: while its collector lives, nobody else adopts its entries. One
    that keeps dying young (a database it cannot open, say) is restarted after 1, 2, 4 … 60 s.
    """

    def __init__(self, settings: UnpackSettings, on_report: Callable[[UnpackReport], None] | None = None) -> None:
        self.settings = replace(settings, collector_pid=os.getpid())
        self._on_report = on_report
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
                stdout=subprocess.PIPE,
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
        threading.Thread(
            target=self._read_reports, args=(process,), name="unpacker-reports", daemon=True
        ).start()

    def _read_reports(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        with process.stdout:
            for line in process.stdout:
                try:
                    report = UnpackReport(**json.loads(line))
                except (ValueError, TypeError):
                    log.warning("unpacker %d wrote an unexpected line: %r", process.pid, line[:200])
                    continue
                if self._on_report is not None:
                    self._on_report(report)

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

    def stop(self) -> None:
        """Let the unpacker finish this collector's entries; it exits by itself within
        ``shutdown_timeout``, and is killed if it has not a few seconds after that."""
        self._stopped = True
        self._close_pipe()
        if self._process is not None:
            _end(self._process, self.settings.shutdown_timeout + _EXIT_GRACE_SECONDS)

    def _close_pipe(self) -> None:
        with self._lock:
            if self._wake_writer is not None:
                os.close(self._wake_writer)
                self._wake_writer = None


def _end(process: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait for ``process`` up to ``timeout``, then terminate it (and kill it if need be)."""
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        log.warning("unpacker %d did not exit in time; terminating it", process.pid)
        process.terminate()
        try:
            process.wait(_EXIT_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def stop_leftover_unpackers(store_url: str, timeout: float) -> list[int]:
    """End the unpacker processes of earlier collectors on this store that outlived them (on
    this host); returns their process ids.

    A collector killed with SIGKILL leaves its unpacker finishing its entries for up to its
    ``shutdown_timeout``; a collector started meanwhile on the same journal must not unpack
    alongside it. Such a leftover is recognised by its program and settings (in ``/proc``), and
    by its parent: no longer the collector that started it. It is asked to stop (SIGTERM;
    its entries are durable in the journal and are adopted), and killed after ``timeout``.
    """
    leftovers = []
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for directory in proc.iterdir():
        if not directory.name.isdigit() or int(directory.name) == os.getpid():
            continue
        try:
            if _PROGRAM.encode() not in (directory / "cmdline").read_bytes():
                continue
            environment = dict(
                item.split(b"=", 1) for item in (directory / "environ").read_bytes().split(b"\0") if b"=" in item
            )
            settings = json.loads(environment[_SETTINGS_VARIABLE.encode()])
            parent = int((directory / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, KeyError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
        if settings.get("store_url") == store_url and parent != settings.get("collector_pid"):
            leftovers.append(int(directory.name))
    for pid in leftovers:
        log.warning("stopping unpacker process %d, left running by an earlier collector on this store", pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in leftovers:
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return leftovers


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def main() -> None:
    """An unpacker process: its settings from the environment, its wake-ups on standard input."""
    # The collector handles Ctrl-C and then closes the pipe; the terminal's SIGINT reaches the
    # whole process group, and must not cut this process short of finishing the entries.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    settings = UnpackSettings(**json.loads(os.environ[_SETTINGS_VARIABLE]))
    _UnpackLoop(settings, sys.stdin.fileno(), sys.stdout).run()


class _UnpackLoop:
    """The unpacker process's work: take groups of entries and store them, until its collector
    is gone and its entries are stored, or ``shutdown_timeout`` has passed since."""

    def __init__(self, settings: UnpackSettings, wake: int, reports: TextIO) -> None:
        self.settings = settings
        self.wake = wake
        self.reports = reports
        self.store = open_store(settings.store_url, create=False)
        self.outage = Backoff("unpacker: the database")
        self.deadline: float | None = None
        """Set once the collector is gone: when to exit, stored or not."""

    def run(self) -> None:
        settings, store = self.settings, self.store
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
        running: dict[Future[int], list[int]] = {}
        next_beat = 0.0
        try:
            while True:
                now = time.monotonic()
                if self.deadline is None and _drain_wake_ups(self.wake):
                    self.deadline = now + settings.shutdown_timeout
                    # A timer, not a check in this loop: the loop itself may be what is stuck
                    # (a heartbeat waiting on a locked database).
                    timer = threading.Timer(settings.shutdown_timeout, self._give_up, args=(running,))
                    timer.daemon = True
                    timer.start()
                if now >= next_beat:
                    self._beat()
                    next_beat = now + settings.idle_poll
                for finished in [future for future in running if future.done()]:
                    del running[finished]
                    self._check(finished)
                if len(running) < count and not self.outage.waiting():
                    busy = [seq for seqs in running.values() for seq in seqs]
                    if group := self._next_group(busy):
                        work = lanes.submit(unpack, store, group, settings.max_attribute_chars)
                        running[work] = [entry.seq for entry in group]
                        continue
                if running:
                    futures.wait(running, self._pause(), return_when=futures.FIRST_COMPLETED)
                elif self.deadline is not None and not self.outage.waiting():
                    with contextlib.suppress(Exception):  # the heartbeat expires by itself anyway
                        store.unpacker_heartbeat(settings.owner, stopping=True)
                    return None
                elif self.deadline is not None:
                    time.sleep(self._pause())
                else:
                    select.select([self.wake], [], [], self._pause())
        finally:
            lanes.shutdown(wait=True)
            store.close()

    def _pause(self) -> float:
        """How long to wait before looking again: the poll, the outage's backoff, the deadline."""
        pause = max(self.settings.idle_poll, self.outage.remaining())
        if self.deadline is not None:
            pause = min(pause, max(self.deadline - time.monotonic(), 0.0))
        return pause

    def _give_up(self, running: dict[Future[int], list[int]]) -> None:
        """The shutdown deadline passed: exit now, leaving what is not stored in the journal
        (a write in progress is rolled back by the database when the connection drops); the
        heartbeat row, if any, expires by itself."""
        log.warning(
            "unpacker: its collector stopped %g s ago; exiting with %d groups of entries unfinished "
            "and any others not stored yet left in the journal, for the next start",
            self.settings.shutdown_timeout, len(running),
        )  # fmt: skip
        os._exit(0)  # a lane, or this loop, may be blocked in a database call: do not wait for it

    def _check(self, finished: Future[int]) -> None:
        error = finished.exception()
        gc.collect(1)
        if error is None:
            self.outage.succeeded()
            self._report(UnpackReport(quarantined=finished.result(), text_replaced=self.store.take_text_replaced()))
        elif database_unavailable(error):  # the entries stay in the journal and are taken again
            self.outage.failed(error)
        else:  # not even quarantining worked: a bug; retry after a pause
            log.error("unpacking journal entries failed", exc_info=error)
            self.outage.failed(error)

    def _report(self, report: UnpackReport) -> None:
        if report.quarantined or report.text_replaced:
            with contextlib.suppress(OSError, ValueError):  # the collector is gone
                self.reports.write(json.dumps(asdict(report)) + "\n")
                self.reports.flush()

    def _beat(self) -> None:
        try:
            self.store.unpacker_heartbeat(self.settings.owner)
        except Exception as exc:
            if database_unavailable(exc):
                self.outage.failed(exc)
            else:
                log.warning("could not record the unpacker's heartbeat", exc_info=True)

    def _next_group(self, busy: list[int]) -> list[JournalEntry]:
        """The next entries to store together: the collector's own, else orphans (not once
        the collector is gone: then only its own are finished)."""
        settings, store = self.settings, self.store
        try:
            shard = (settings.shard, settings.shards)
            own = store.journal_entries(owner=settings.owner, exclude=busy, max_bytes=_GROUP_BYTES, shard=shard)
            if own or self.deadline is not None:
                return own
            return store.orphaned_journal_entries(
                dead_before=time.time() - settings.orphan_after, not_owner=settings.owner,
                exclude=busy, max_bytes=_GROUP_BYTES, shard=shard,
            )  # fmt: skip
        except Exception as exc:
            self.outage.failed(exc)
            return []


def _drain_wake_ups(wake: int) -> bool:
    """Consume pending wake-ups (before looking at the journal, so a later one wakes the next
    wait); True once the collector's end of the pipe is closed."""
    while select.select([wake], [], [], 0)[0]:
        if not os.read(wake, 65536):
            return True
    return False
