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
import logging
import os
import select
import sys
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TextIO

from tracescore import helper_processes
from tracescore.backoff import Backoff
from tracescore.helper_processes import Child
from tracescore.ingest.decode import Decoded, DecodeError, decode_logs, decode_traces
from tracescore.ingest.truncate import truncate_for_storage
from tracescore.spans import OWN_EVALUATIONS_SCOPE
from tracescore.store import ReadinessRules, SpanStore, open_store
from tracescore.store.journal import JournalEntry
from tracescore.store.outage import database_unavailable

log = logging.getLogger(__name__)

_GROUP_BYTES = 1024 * 1024
"""Request bodies stored in one transaction (a 1000-span request alone is above it)."""
_LANES = 2


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
        except (
            DecodeError
        ) as exc:  # screened before the ack: an entry of an older release, or a bug
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
        [
            span
            for _, records in decoded
            for span in records.spans
            if span.scope.name != OWN_EVALUATIONS_SCOPE
        ],
        [
            record
            for _, records in decoded
            for record in records.logs
            if record.scope.name != OWN_EVALUATIONS_SCOPE
        ],
        # The latest arrival for every trace of the group: readiness is then never premature,
        # at most later by the group's time span (entries waiting side by side).
        received_at=max(entry.received_at for entry, _ in decoded),
        consume=[entry for entry, _ in decoded],
    )


def _quarantine(store: SpanStore, entry: JournalEntry, error: BaseException) -> bool:
    """Set ``entry`` aside with the reason (logged once, here); False if that failed too."""
    reason = f"{type(error).__name__}: {error}"[:2000]
    try:
        store.journal.quarantine(entry.seq, reason)
    except Exception:
        log.exception("could not quarantine journal entry %d", entry.seq)
        return False
    log.error(
        "journal entry %d (%s, %d bytes) cannot be stored and is quarantined: %s",
        entry.seq,
        entry.signal,
        len(entry.body),
        reason,
    )
    return True


def drain(store: SpanStore, max_attribute_chars: int | None = None) -> int:
    """Unpack every waiting entry now (offline commands run it before reading the store)."""
    done = 0
    while entries := store.journal.entries(max_bytes=_GROUP_BYTES):
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
    max_clock_skew: float = 86_400.0
    """See :attr:`~tracescore.store.trace_queue.ReadinessRules.max_clock_skew`."""
    shutdown_timeout: float = 10.0
    """Once its collector is gone (stopped, or dead), seconds the unpacker goes on storing the
    collector's entries before it exits; what is left waits in the journal for the next start."""


@dataclass(frozen=True, slots=True)
class UnpackReport:
    """What an unpacker process tells its collector after each group, for the metrics
    (a line of JSON on its standard output)."""

    quarantined: int = 0
    text_replaced: int = 0
    future_span_times: int = 0


class Unpacker(Child):
    """The unpacker process of one collector (a :class:`~tracescore.helper_processes.Child`), woken by
    each new entry; it stores what it can of the collector's entries for ``shutdown_timeout``
    seconds once the collector is gone, then exits, whatever state the database is in. Its
    :class:`UnpackReport` lines feed ``on_report``."""

    def __init__(
        self, settings: UnpackSettings, on_report: Callable[[UnpackReport], None] | None = None
    ) -> None:
        super().__init__(
            f"unpacker {settings.shard + 1} of {settings.shards}",
            __name__,
            asdict(settings),
            on_report=None
            if on_report is None
            else lambda document: on_report(UnpackReport(**document)),
            quits_while_starting=True,
        )


def main() -> None:
    """An unpacker process: its settings from the environment, its wake-ups on standard input
    (it ignores the terminal's Ctrl-C, see :mod:`tracescore.helper_processes`)."""
    helper_processes.log_to_stderr(logging.WARNING)
    found = helper_processes.settings()
    found.pop("collector_pid")
    _UnpackLoop(UnpackSettings(**found), sys.stdin.fileno(), sys.stdout).run()


class _UnpackLoop:
    """The unpacker process's work: take groups of entries and store them, until its collector
    is gone and its entries are stored, or ``shutdown_timeout`` has passed since."""

    def __init__(self, settings: UnpackSettings, wake: int, reports: TextIO) -> None:
        self.settings = settings
        self.wake = wake
        self.reports = reports
        helper_processes.exit_after_service(wake, settings.shutdown_timeout, "unpacker")
        self.store = open_store(
            settings.store_url, ReadinessRules(max_clock_skew=settings.max_clock_skew), create=False
        )
        self.outage = Backoff("unpacker: the database")
        self.service_gone = False
        """Set once the collector's pipe closes: then only its own entries are finished, and a
        thread ends the process at ``shutdown_timeout`` (:func:`helper_processes.exit_after_service`)."""

    def run(self) -> None:
        helper_processes.started()  # a stop from now on finishes the collector's entries
        settings, store = self.settings, self.store
        try:
            store.journal.tidy()
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
                if not self.service_gone:
                    self.service_gone = _drain_wake_ups(self.wake)
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
                elif self.service_gone and not self.outage.waiting():
                    with contextlib.suppress(Exception):  # the heartbeat expires by itself anyway
                        store.journal.heartbeat(settings.owner, stopping=True)
                    return
                elif self.service_gone:
                    time.sleep(self._pause())
                else:
                    select.select([self.wake], [], [], self._pause())
        finally:
            lanes.shutdown(wait=True)
            store.close()

    def _pause(self) -> float:
        """How long to wait before looking again: the poll, or the outage's backoff."""
        return max(self.settings.idle_poll, self.outage.remaining())

    def _check(self, finished: Future[int]) -> None:
        error = finished.exception()
        gc.collect(1)
        if error is None:
            self.outage.succeeded()
            quarantined, (replaced, future) = finished.result(), self.store.take_counts()
            if quarantined or replaced or future:
                helper_processes.report(
                    self.reports, asdict(UnpackReport(quarantined, replaced, future))
                )
        elif database_unavailable(error):  # the entries stay in the journal and are taken again
            self.outage.failed(error)
        else:  # not even quarantining worked: a bug; retry after a pause
            log.error("unpacking journal entries failed", exc_info=error)
            self.outage.failed(error)

    def _beat(self) -> None:
        try:
            self.store.journal.heartbeat(self.settings.owner)
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
            own = store.journal.entries(
                owner=settings.owner, exclude=busy, max_bytes=_GROUP_BYTES, shard=shard
            )
            if own or self.service_gone:
                return own
            return store.journal.orphans(
                dead_before=time.time() - settings.orphan_after,
                not_owner=settings.owner,
                exclude=busy,
                max_bytes=_GROUP_BYTES,
                shard=shard,
            )
        except Exception as exc:  # noqa: BLE001 - an outage or not, the loop goes on
            self.outage.failed(exc)
            return []


def _drain_wake_ups(wake: int) -> bool:
    """Consume pending wake-ups (before looking at the journal, so a later one wakes the next
    wait); True once the collector's end of the pipe is closed."""
    while select.select([wake], [], [], 0)[0]:
        if not os.read(wake, 65536):
            return True
    return False
