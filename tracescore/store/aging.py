"""Deleting a table's expired rows a batch at a time, the query each owner module's retention
entries are built from (:mod:`tracescore.retention.prune` runs them, one batch per transaction).

The expired rows are found through an index on their time, oldest first, so a batch costs the
same whatever the table's size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Delete, Table, and_, bindparam, delete, select, tuple_
from sqlalchemy.sql.elements import ColumnElement


@dataclass(frozen=True, slots=True)
class AgedRows:
    """Rows of one table that expire by one time column: the oldest ``limit`` before a cut go."""

    table: Table
    keys: tuple[str, ...]
    age: str
    also: Callable[[Table, Any], ColumnElement[bool]] | None = None
    """A further condition on the row, given the table and the cut's bound parameter."""

    def statement(self, limit: int) -> Delete:
        table = self.table
        cut = bindparam("cut", type_=table.c[self.age].type)
        condition = table.c[self.age] < cut
        if self.also is not None:
            condition = and_(condition, self.also(table, cut))
        keys = [table.c[key] for key in self.keys]
        chosen = select(*keys).where(condition).order_by(table.c[self.age]).limit(limit)
        target = keys[0] if len(keys) == 1 else tuple_(*keys)
        return delete(table).where(target.in_(chosen))

    def prune(self, conn: Connection, cut: object, limit: int) -> int:
        """Delete up to ``limit`` of the oldest rows older than ``cut`` (as the age column
        stores time); how many went."""
        return int(conn.execute(self.statement(limit), {"cut": cut}).rowcount)


def still_in(conn: Connection, table: Table, ids: list[str], state: str) -> list[str]:
    """Those of ``ids`` (keys of ``table``, a queue with a ``state``) still in ``state``, locked
    until the transaction ends. Only PostgreSQL needs it (SQLite serializes writers): there a
    trace a write touched since it was found (a late span) is left alone, and one whose row
    another transaction holds waits for the next batch. Found first and locked after, so only
    the rows a batch takes are locked."""
    if conn.dialect.name != "postgresql" or not ids:
        return ids
    key = table.c[table.primary_key.columns.keys()[0]]
    query = select(key).where(key.in_(ids), table.c.state == state)
    return list(conn.execute(query.with_for_update(skip_locked=True)).scalars())
