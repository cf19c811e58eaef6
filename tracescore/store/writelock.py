"""One SQLite writer at a time, across threads and processes, queued in the kernel.

SQLite allows one writer; a second one waits in SQLite's busy handler, which polls with sleeps
that grow to 100 ms, so a writer arriving just after another began a 25 ms transaction would
wake up tens of milliseconds after it ended. The collector, its unpacker process and sibling
service processes all write to one file; an exclusive ``flock`` on a lock file beside the
database makes each wait exactly as long as the transaction ahead of it.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from sqlalchemy import Connection, Engine, text


class SqliteWriteLock:
    def __init__(self, database: str | None) -> None:
        self._threads = threading.Lock()
        self._path = f"{database}-writer.lock" if database and database != ":memory:" else None
        self._fd: int | None = None
        self._pid = 0

    def __enter__(self) -> None:
        self._threads.acquire()
        if self._path is None:
            return
        # A forked child must not share its parent's open lock file.
        if self._fd is None or self._pid != os.getpid():
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._pid = os.getpid()
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._threads.release()
            raise

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._threads.release()


_LOCKS: dict[str, SqliteWriteLock] = {}
"""One lock per SQLite file in a process: each holds its lock file open for good."""
_LOCKS_GUARD = threading.Lock()


def _sqlite_lock(database: str | None) -> SqliteWriteLock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(database or "", SqliteWriteLock(database))


@contextmanager
def exclusive_transaction(engine: Engine, name: str) -> Iterator[Connection]:
    """A write transaction that no other holder of ``name`` on this database runs beside, in
    any process: for a read that decides a write (a count against a limit, the schema's
    revision). PostgreSQL: a transaction-level advisory lock on ``name``; SQLite, which has one
    writer anyway: the writer lock, and ``BEGIN IMMEDIATE``, so the reads see the last commit
    (and DDL runs inside the transaction, which SQLite's driver otherwise runs outside it)."""
    if engine.dialect.name == "postgresql":
        with engine.begin() as connection:
            connection.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": name}
            )
            yield connection
        return
    with _sqlite_lock(engine.url.database), engine.begin() as connection:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        yield connection
