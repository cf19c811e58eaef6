"""Giving the pages a SQLite prune freed back to the file system (retention runs it after a
pass, :mod:`tracescore.retention.task`).

Deleted rows leave free pages inside the file; SQLite reuses them for new rows but never shrinks
the file by itself. A database created with ``auto_vacuum=INCREMENTAL`` (every database
tracescore creates, see :mod:`tracescore.store.engine`) can hand them back a few at a time with
``PRAGMA incremental_vacuum(N)``: each step is a short write, queued like any other, where a
full ``VACUUM`` would rewrite the whole file under one exclusive lock. A database created
before retention existed keeps its free pages for reuse (a one-off ``VACUUM``, service
stopped, converts it). PostgreSQL needs none of this: autovacuum makes the space reusable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import Connection, Engine

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
