"""The ingest journal of a SQLite store: one file per acknowledged request, beside the database.

In the database itself (:class:`~tracescore.store.journal.SqlJournal`), every request body
would be written into SQLite pages under its single write lock, then read and deleted again
under it: for a thousand-span request that is ~8 ms to append and ~7 ms to delete, during which
acknowledgements and the unpacker's inserts queue behind each other. A file costs a ``write``
and a ``rename`` into the page cache and an ``unlink``, and takes no database lock at all.

Durability matches the database's ``synchronous`` setting: with ``normal`` a file survives a
crash of the process (as a committed SQLite transaction does), with ``full`` or ``extra`` it is
also fsynced, with its directory, before the acknowledgement.

Exactly-once stays a database matter. The unpacker records the sequence numbers it stores in
the ``ingest_consumed`` table (with the entry's owner), in the same transaction as the rows, and
deletes the files after the commit. An entry already recorded there was stored by another
process (which may have died before deleting the file): it is deleted and not stored again. A
record is forgotten once its file is gone.

Names in the directory, ``SEQ`` being the receive time in nanoseconds, unique there:

- ``SEQ``: the number's reservation (``O_EXCL``), later a quarantined entry's reason;
- ``SEQ.tmp``: a body being written;
- ``SEQ.SIGNAL.OWNER``: a waiting entry;
- ``SEQ.SIGNAL.OWNER.failed``: a quarantined entry (it could not be stored), kept for inspection.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine, delete, insert, select, tuple_

from tracescore.store.journal import JournalEntry, QuarantinedEntry, settle_by_polling
from tracescore.store.table_of import table_of
from tracescore.store.tables import ConsumedRow, UnpackerRow

_consumed = table_of(ConsumedRow)
_unpackers = table_of(UnpackerRow)
_FIBONACCI = 0x9E3779B97F4A7C15  # 2**64 / golden ratio: spreads any run of numbers evenly
_MASK_64 = 2**64 - 1
_STALE_SECONDS = 60.0
"""A reservation or partial body this old without its entry was left by a crash."""


@dataclass(frozen=True, slots=True)
class _Waiting:
    seq: int
    signal: str
    owner: str
    size: int

    @property
    def name(self) -> str:
        return _entry_name(self)


def _entry_name(entry: _Waiting | JournalEntry) -> str:
    return f"{entry.seq:020d}.{entry.signal}.{entry.owner}"


class SpoolJournal:
    """The journal as files in ``directory`` (see the module's docstring)."""

    def __init__(
        self,
        directory: Path,
        engine: Engine,
        write_transaction: Callable[[], AbstractContextManager[Connection]],
    ) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._engine = engine
        self._write_transaction = write_transaction
        self._fsync: bool | None = None
        """Whether to fsync each entry: as the database does each commit (read at first use)."""
        self._last_seq = 0
        self._seq_lock = threading.Lock()
        self._forgettable: set[tuple[int, str]] = set()
        """Recorded numbers whose files this process deleted: unrecorded in its next write."""

    # ------------------------------------------------------------------ the collector's side

    def append(self, signal: str, body: bytes, owner: str) -> JournalEntry:
        fsync = self._fsyncs()
        seq = self._reserve()
        partial = self.directory / f"{seq:020d}.tmp"
        with open(partial, "wb") as file:
            file.write(body)
            if fsync:
                file.flush()
                os.fsync(file.fileno())
        os.rename(partial, self.directory / _Waiting(seq, signal, owner, 0).name)
        if fsync:
            self._sync_directory()
        return JournalEntry(seq, seq / 1e9, signal, body, owner)

    def _fsyncs(self) -> bool:
        if self._fsync is None:
            with self._engine.connect() as conn:  # 0 off, 1 normal, 2 full, 3 extra
                self._fsync = conn.exec_driver_sql("PRAGMA synchronous").scalar_one() >= 2
        return self._fsync

    def _reserve(self) -> int:
        """A number no other entry has: the time in ns, made unique by an exclusive create."""
        with self._seq_lock:
            seq = self._last_seq = max(time.time_ns(), self._last_seq + 1)
        while True:
            try:
                os.close(
                    os.open(
                        self.directory / f"{seq:020d}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644
                    )
                )
                return seq
            except FileExistsError:  # another process took this nanosecond
                seq += 1

    def _sync_directory(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def backlog(self, owner: str) -> int:
        return sum(entry.size for entry in self._waiting(sized=True) if entry.owner == owner)

    # ------------------------------------------------------------------ the unpacker's side

    def entries(
        self,
        *,
        owner: str | None = None,
        exclude: Collection[int] = (),
        max_bytes: int | None = None,
        limit: int = 16,
        shard: tuple[int, int] = (0, 1),
    ) -> list[JournalEntry]:
        found = (e for e in self._waiting() if owner is None or e.owner == owner)
        return self._load(found, exclude, max_bytes, limit, shard)

    def orphans(
        self,
        *,
        dead_before: float,
        not_owner: str,
        exclude: Collection[int] = (),
        max_bytes: int | None = None,
        limit: int = 16,
        shard: tuple[int, int] = (0, 1),
    ) -> list[JournalEntry]:
        with self._engine.connect() as conn:
            alive = set(
                conn.execute(
                    select(_unpackers.c.owner).where(_unpackers.c.heartbeat >= dead_before)
                ).scalars()
            )
        before_ns = dead_before * 1e9
        found = (
            e
            for e in self._waiting()
            if e.owner not in alive and e.owner != not_owner and e.seq < before_ns
        )
        return self._load(found, exclude, max_bytes, limit, shard)

    def _load(
        self,
        candidates: Iterable[_Waiting],
        exclude: Collection[int],
        max_bytes: int | None,
        limit: int,
        shard: tuple[int, int],
    ) -> list[JournalEntry]:
        """The first ``limit`` candidates of ``shard`` not in ``exclude`` whose bodies fit in
        ``max_bytes`` (at least one), oldest first; an entry deleted meanwhile is skipped."""
        skip = set(exclude)
        loaded: list[JournalEntry] = []
        total = 0
        k, n = shard
        chosen = (
            e for e in candidates if e.seq not in skip and (n == 1 or self.shard_of(e.seq, n) == k)
        )
        for entry in sorted(chosen, key=lambda e: e.seq)[:limit]:
            path = self.directory / entry.name
            try:
                if loaded and max_bytes is not None and total + path.stat().st_size > max_bytes:
                    break
                body = path.read_bytes()
            except FileNotFoundError:  # stored by another process just now
                continue
            loaded.append(JournalEntry(entry.seq, entry.seq / 1e9, entry.signal, body, entry.owner))
            total += len(body)
        return loaded

    def shard_of(self, seq: int, shards: int) -> int:
        """By a multiplicative hash of the number: numbers are receive times in nanoseconds,
        which a coarser clock makes multiples of 1,000, so ``seq % shards`` could send them
        all to one unpacker."""
        return (((seq * _FIBONACCI) & _MASK_64) >> 32) % shards

    def consume(self, conn: Connection, entries: Sequence[JournalEntry]) -> bool:
        """Record ``entries`` as stored, in the caller's transaction; False if one is stored
        already (its file is gone, or another process recorded it and died before deleting the
        file, which is then deleted here), and the caller rolls back.

        Numbers are recorded with their owner: a number is unique among the files present, and
        within one collector's entries for ever, so a pair cannot come back.
        """
        if self._forgettable:
            forget = list(self._forgettable)
            conn.execute(
                delete(_consumed).where(tuple_(_consumed.c.seq, _consumed.c.owner).in_(forget))
            )
            self._forgettable.difference_update(forget)
        if not all(os.path.exists(self.directory / _entry_name(entry)) for entry in entries):
            return False
        pairs = [(entry.seq, entry.owner) for entry in entries]
        taken = conn.execute(
            select(_consumed.c.seq).where(tuple_(_consumed.c.seq, _consumed.c.owner).in_(pairs))
        )
        if done := set(taken.scalars()):
            self._delete_files(entry for entry in entries if entry.seq in done)
            return False
        conn.execute(insert(_consumed), [{"seq": seq, "owner": owner} for seq, owner in pairs])
        return True

    def release(self, entries: Sequence[JournalEntry]) -> None:
        """After the commit that recorded ``entries``: delete their files."""
        self._forgettable.update(self._delete_files(entries))

    def _delete_files(self, entries: Iterable[_Waiting | JournalEntry]) -> list[tuple[int, str]]:
        """Delete the entries and their reservations; returns the (seq, owner) of those whose
        files were there. By name, without listing the directory, which holds as many files as
        the backlog (a listing per group cost the unpacker a quarter of its time behind a
        backlog of 1,500 entries)."""
        deleted = []
        for entry in entries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.directory / _entry_name(entry))
                deleted.append((entry.seq, entry.owner))
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.directory / f"{entry.seq:020d}")
        return deleted

    def quarantine(self, seq: int, reason: str) -> None:
        for entry in self._waiting():
            if entry.seq == seq:
                (self.directory / f"{seq:020d}").write_text(reason, "utf-8")
                os.rename(self.directory / entry.name, self.directory / f"{entry.name}.failed")

    def quarantined(self) -> list[QuarantinedEntry]:
        found = []
        for name in os.listdir(self.directory):
            if name.endswith(".failed"):
                seq, signal, _ = name.split(".", 2)
                try:
                    size = (self.directory / name).stat().st_size
                    reason = (self.directory / seq).read_text("utf-8")
                except FileNotFoundError:  # deleted by hand meanwhile
                    continue
                found.append(QuarantinedEntry(int(seq), int(seq) / 1e9, signal, size, reason))
        return sorted(found, key=lambda entry: entry.seq)

    def requeue(self, seq: int) -> bool:
        prefix = f"{seq:020d}."
        for name in os.listdir(self.directory):
            if name.startswith(prefix) and name.endswith(".failed"):
                with contextlib.suppress(FileNotFoundError):
                    os.rename(self.directory / name, self.directory / name.removesuffix(".failed"))
                    return True
        return False

    def forget_quarantined(self, conn: Connection, before: float, limit: int) -> int:
        """Files, not rows: deleted at once, whatever becomes of ``conn``'s transaction."""
        forgotten = 0
        for name in sorted(os.listdir(self.directory)):
            if forgotten >= limit:
                break
            seq = name.split(".", 1)[0]
            if name.endswith(".failed") and int(seq) / 1e9 < before:
                for path in (self.directory / name, self.directory / seq):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
                forgotten += 1
        return forgotten

    def tidy(self) -> None:
        """Clean up after crashes (the unpacker runs it as it starts): delete the files of
        entries already stored, forget recorded numbers whose files are gone, and remove
        reservations and partial bodies that no entry followed."""
        with self._engine.connect() as conn:
            recorded = list(map(tuple, conn.execute(select(_consumed.c.seq, _consumed.c.owner))))
        recorded_pairs = set(recorded)
        self._delete_files(
            entry for entry in self._waiting() if (entry.seq, entry.owner) in recorded_pairs
        )
        if recorded:
            with self._write_transaction() as conn:
                conn.execute(
                    delete(_consumed).where(
                        tuple_(_consumed.c.seq, _consumed.c.owner).in_(recorded)
                    )
                )
        waiting_seqs = {entry.seq for entry in self._waiting()}
        failed = {
            int(name.split(".", 1)[0])
            for name in os.listdir(self.directory)
            if name.endswith(".failed")
        }
        stale_before = (time.time() - _STALE_SECONDS) * 1e9
        for name in os.listdir(self.directory):
            head, _, rest = name.partition(".")
            stale = rest in ("", "tmp") and head.isdigit() and int(head) < stale_before
            if stale and (
                rest == "tmp" or (int(head) not in waiting_seqs and int(head) not in failed)
            ):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.directory / name)

    # ------------------------------------------------------------------ readers' side

    def oldest(self, _conn: Connection | None = None) -> float | None:
        seqs = [entry.seq for entry in self._waiting()]
        return min(seqs) / 1e9 if seqs else None

    def wait_settled(self, timeout: float) -> bool:
        """Wait until the entries waiting now are gone (stored, or quarantined).

        The directory is listed once: each poll then looks only at the oldest of them still
        there (a ``stat``), and passes over the ones gone since. Listing and parsing the whole
        directory at every poll (each 5 ms) cost the service a fifth of a core while a backlog
        of a thousand requests drained."""
        pending = deque(sorted(self._waiting(), key=lambda entry: entry.seq))

        def waiting() -> bool:
            while pending and not (self.directory / pending[0].name).exists():
                pending.popleft()
            return bool(pending)

        return settle_by_polling(waiting, timeout)

    def _waiting(self, *, sized: bool = False) -> list[_Waiting]:
        """The waiting entries, in no order; with their sizes only if ``sized`` (a ``stat`` each)."""
        found = []
        with os.scandir(self.directory) as listing:
            for item in listing:
                parts = item.name.split(".")
                if len(parts) == 3 and parts[0].isdigit():
                    size = 0
                    if sized:
                        try:
                            size = item.stat().st_size
                        except FileNotFoundError:
                            continue
                    found.append(_Waiting(int(parts[0]), parts[1], parts[2], size))
        return found
