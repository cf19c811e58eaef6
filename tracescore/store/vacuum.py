"""Giving the pages a SQLite prune freed back to the file system (retention runs it after a
pass, :mod:`tracescore.retention.task`).

Deleted rows leave free pages inside the file; SQLite reuses them for new rows but never shrinks
the file by itself. A database created with ``auto_vacuum=INCREMENTAL`` (every database
tracescore creates, see :mod:`tracescore.store.engine`) can hand them back a few at a time with
``PRAGMA incremental_vacuum(N)``: each step is a short write, queued like any other, where a
full ``VACUUM`` would rewrite the whole file under one exclusive lock. A database created
before retention existed keeps its free pages for reuse (a one-off ``VACUUM``, service
stopped, converts it). PostgreSQL needs none of this for retention: autovacuum makes the space
reusable.

PostgreSQL's trace queue is another matter (:func:`vacuum_queue`): every trace's row is
written four times (pending, ready, claimed, scored), each change of state a new row version
in the table and every index, and autovacuum's default thresholds (20 % of the table, checked
once a minute) let a busy queue's table grow to several times its live rows between passes.
So does the ingest journal, whose every row is deleted seconds after it was written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import Connection, Engine, text

from tracescore.store.handles import WriteTransaction

log = logging.getLogger(__name__)

PAGES_PER_STEP = 1024
"""Pages freed per write transaction (4 MiB at the default page size)."""

_INCREMENTAL = 2
"""``PRAGMA auto_vacuum``'s value for incremental mode."""


def _pragma(connection: Connection, statement: str) -> int:
    return int(connection.exec_driver_sql(f"PRAGMA {statement}").scalar_one())


def reclaim_space(
    engine: Engine,
    write_transaction: WriteTransaction,
    keep_going: Callable[[], bool] = lambda: True,
) -> int:
    """Return the free pages of a SQLite database to the file system; the bytes returned.

    Does nothing on PostgreSQL, or on a SQLite database without incremental auto-vacuum.
    """
    if engine.dialect.name != "sqlite":
        return 0
    with engine.connect() as connection:
        if _pragma(connection, "auto_vacuum") != _INCREMENTAL:
            log.info(
                "retention: this SQLite database was created without incremental "
                "auto_vacuum; freed pages are reused for new rows but the file keeps its size"
            )
            return 0
        page_size = _pragma(connection, "page_size")
    freed = 0
    while keep_going():
        with write_transaction() as connection:
            free = _pragma(connection, "freelist_count")
            if not free:
                break
            step = min(free, PAGES_PER_STEP)
            # sqlite3's execute() steps a statement once, which frees one page; executescript
            # runs it to the end. (No transaction is open: the driver opens one before DML only.)
            driver = connection.connection.driver_connection
            assert driver is not None, "a connection in use has its driver's (sqlite3's) connection"
            driver.executescript(f"PRAGMA incremental_vacuum({step})")
        freed += step
    return freed * page_size


QUEUE_DEAD_ROWS = 1_000
"""Dead row versions of the trace queue after which :func:`vacuum_queue` vacuums it: about a
second of a busy queue (three dead versions per trace scored), whose pages then take the next
second's rows instead of growing the table and its seven indexes. At 5,000 the capacity
benchmark's ``traces`` took 802 bytes a trace (live rows and fresh indexes 276), at 1,000 553,
its throughput the same. On a large table most passes read only the pages written since the
last (the visibility map) and skip the indexes (fewer than 2 % of the pages hold dead rows)."""

JOURNAL_DEAD_ROWS = 1
"""Dead rows of the ingest journal after which :func:`vacuum_queue` vacuums it: any. Each is a
whole request body (tens of kilobytes, kept in the journal's TOAST table), unpacked within
seconds of its arrival; left to autovacuum, a burst's bodies all stayed as dead TOAST chunks
(1,800 bytes per trace after the capacity benchmark, a third of the database), where vacuumed
every few seconds the next requests take their pages, and a drained journal's are given back."""

_DEAD = text(
    "SELECT relname, n_dead_tup FROM pg_stat_user_tables "
    "WHERE relname IN ('traces', 'trace_leases', 'ingest_journal') AND schemaname = current_schema()"
)


def vacuum_queue(
    engine: Engine, dead_rows: int = QUEUE_DEAD_ROWS, journal_dead_rows: int = JOURNAL_DEAD_ROWS
) -> list[str]:
    """``VACUUM`` the trace queue's tables (traces and their leases) and the ingest journal on PostgreSQL once ``dead_rows``
    (``journal_dead_rows``) of their row versions are dead (by the server's statistics, a cheap
    read); the tables vacuumed. ``SKIP_LOCKED``: a sibling process vacuuming one already is
    enough. A plain ``VACUUM`` takes no lock that writers wait for (it gives back a drained
    table's trailing pages under a lock it drops as soon as a writer asks for it); on a large
    table it reads only the pages written since the last one (the visibility map), plus its
    indexes when enough of them changed. Does nothing on SQLite, where a row's update is made in
    place and the journal is files (:mod:`tracescore.store.spool`)."""
    if engine.dialect.name != "postgresql":
        return []
    thresholds = {
        "traces": dead_rows,
        "trace_leases": dead_rows,
        "ingest_journal": journal_dead_rows,
    }
    with engine.connect() as connection:
        dead = {str(row[0]): int(row[1]) for row in connection.execute(_DEAD)}
    due = [table for table, least in thresholds.items() if dead.get(table, 0) >= least]
    if due:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql(f"VACUUM (SKIP_LOCKED) {', '.join(due)}")
    return due
