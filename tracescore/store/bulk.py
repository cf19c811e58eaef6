"""Insert many rows in one statement's worth of round trips, skipping (or updating) rows already stored.

SQLite: the DB-API ``executemany`` with tuples (in-process, so per-row cost is all CPU).
PostgreSQL: ``COPY`` into a per-session temporary table, then one
``INSERT … SELECT … ON CONFLICT DO NOTHING``. COPY moves the per-row work out of Python — it
measured 3× less collector CPU than psycopg's pipelined ``executemany`` for 1000-span batches
(7 vs 21 ms) — while the final INSERT keeps the same skip-duplicates semantics as SQLite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection

BulkInsert = Callable[[Connection, Sequence[tuple[Any, ...]]], None]


def _executemany(table: str, columns: Sequence[str], mark: str, conflict: str) -> BulkInsert:
    names = ", ".join(columns)
    sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join([mark] * len(columns))}) ON CONFLICT {conflict}"

    def insert(conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
        conn.exec_driver_sql(sql, list(rows))

    return insert


def _copy(table: str, columns: Sequence[str], conflict: str) -> BulkInsert:
    names = ", ".join(columns)
    staging = f"{table}_incoming"
    # Columns only (no constraints, no defaults); emptied at every commit or rollback.
    create = (
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} ON COMMIT DELETE ROWS AS "
        f"SELECT {names} FROM {table} WITH NO DATA"
    )
    merge = f"INSERT INTO {table} ({names}) SELECT {names} FROM {staging} ON CONFLICT {conflict}"

    def insert(conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
        driver = conn.connection.driver_connection
        assert driver is not None, "a connection in use has its driver's (psycopg's) connection"
        with driver.cursor() as cursor:
            cursor.execute(create)
            with cursor.copy(f"COPY {staging} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cursor.execute(merge)

    return insert


def bulk_insert(
    dialect: str,
    paramstyle: str,
    table: str,
    columns: Sequence[str],
    *,
    update: Sequence[str] = (),
    key: str = "id",
) -> BulkInsert:
    """The fastest bulk insert of ``columns`` into ``table`` for a dialect: rows already stored
    are skipped, or, with ``update``, those columns of theirs are overwritten (an upsert on
    ``key``)."""
    conflict = (
        f"({key}) DO UPDATE SET " + ", ".join(f"{column} = excluded.{column}" for column in update)
        if update
        else "DO NOTHING"
    )
    if dialect == "postgresql":
        return _copy(table, columns, conflict)
    return _executemany(table, columns, "?" if paramstyle == "qmark" else "%s", conflict)
