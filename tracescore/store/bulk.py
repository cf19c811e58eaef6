"""Insert many rows in one statement's worth of round trips, skipping (or updating) rows already stored.

:func:`bulk_insert` is the statement (the span store's writes call it directly);
:class:`Upsert` feeds it a table's rows as tuples made storable and bound as SQLAlchemy would
bind them, without its per-row machinery, and :class:`Prepared` holds them ready before the
write transaction (the scores store's upserts, :mod:`tracescore.store.scores`). Nothing here
knows a table of its own.

SQLite: the DB-API ``executemany`` with tuples (in-process, so per-row cost is all CPU).
PostgreSQL: ``COPY`` into a per-session temporary table, then one
``INSERT … SELECT … ON CONFLICT DO NOTHING``. COPY moves the per-row work out of Python — it
measured 3× less collector CPU than psycopg's pipelined ``executemany`` for 1000-span batches
(7 vs 21 ms) — while the final INSERT keeps the same skip-duplicates semantics as SQLite.
The staging table is emptied only at commit, so a table takes one bulk write per transaction:
a second would merge the first's rows again (with an update, a row in both fails the
statement: "ON CONFLICT DO UPDATE command cannot affect row a second time").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import JSON, Connection, Table
from sqlalchemy.engine import Dialect

from tracescore.store.text import ColumnFit, TextGuard, fit_text

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


@dataclass(frozen=True)
class Upsert:
    """An upsert of one table for one dialect, by the store's bulk path
    (:func:`~tracescore.store.bulk.bulk_insert`: ``executemany`` on SQLite, ``COPY`` and one
    ``INSERT … SELECT`` on PostgreSQL): rows become tuples through the columns' own bind
    processors, so values are stored exactly as SQLAlchemy stores them, without its per-row
    statement machinery, which cost more than the insert itself (27 µs a score row against 9
    on SQLite; on PostgreSQL a row-by-row executemany waited on the server 0.6 ms a trace)."""

    insert: BulkInsert
    processors: tuple[Callable[[Any], Any] | None, ...]
    defaults: tuple[Any, ...]
    """What a column takes when a row leaves it out (its Python-side default, else None)."""
    names: tuple[str, ...]

    @classmethod
    def build(cls, table: Table, dialect: Dialect, keep: Collection[str]) -> Upsert:
        columns = list(table.columns)
        names = tuple(column.name for column in columns)
        insert = bulk_insert(
            dialect.name,
            dialect.paramstyle,
            table.name,
            names,
            update=[n for n in names if n not in keep],
        )
        processors = tuple(_bind_processor(column.type, dialect) for column in columns)
        return cls(insert, processors, tuple(map(_default, columns)), names)

    def fitted_rows(
        self, rows: Sequence[Mapping[str, Any]], fit: ColumnFit, guard: TextGuard
    ) -> list[tuple[Any, ...]]:
        """``rows`` made storable (``fit``'s rules: text through ``guard`` and cut to length,
        JSON documents walked only when refused) and through the bind processors in one pass
        per row: a JSON document is serialised once, by its column's processor, which refuses
        what ``fit`` would have walked for; a datetime several rows share (the batch's moment)
        is processed once. A score row went through three passes (a fitted copy, a JSON check,
        the processors): a tenth of a scoring process's time per trace.

        The row's values are read in one comprehension, and then only the columns with work to
        do are visited: a text that is ASCII, without NUL and within its length (nearly every
        one: names, versions, labels, a code scorer's reason) is kept after one inline check,
        the guard and the cut called only for the others. Visiting every column with every
        check cost 9 µs a score row."""
        plan = _fit_plan(self, fit)
        named, factories, texts, documents, processed = plan
        shared: dict[int, Any] = {}
        fitted = []
        for row in rows:
            values = [row.get(name, default) for name, default in named]
            for index, factory in factories:
                if values[index] is _MISSING:
                    values[index] = factory()
            for index, length, process in texts:
                value = values[index]
                if type(value) is str:
                    if not (
                        value.isascii()
                        and "\x00" not in value
                        and (length is None or len(value) <= length)
                    ):
                        value = fit_text(value, length, guard)
                    values[index] = value if process is None else process(value)
                elif value is not None and process is not None:
                    values[index] = process(value)
            for index, process in documents:
                if (value := values[index]) is not None:
                    values[index] = _document(value, process, guard)
            for index, process in processed:
                value = values[index]
                if value is None:
                    continue
                if type(value) is datetime:
                    if (done := shared.get(id(value))) is None:
                        done = shared[id(value)] = process(value)
                    values[index] = done
                else:
                    values[index] = process(value)
            fitted.append(tuple(values))
        return fitted

    def row(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        values = []
        for name, process, default in zip(self.names, self.processors, self.defaults, strict=True):
            value = row.get(name, _MISSING)
            if value is _MISSING:
                value = default() if callable(default) else default
            values.append(value if process is None or value is None else process(value))
        return tuple(values)


_MISSING = object()

_Plan = tuple[
    tuple[tuple[str, Any], ...],
    tuple[tuple[int, Callable[[], Any]], ...],
    tuple[tuple[int, int | None, Callable[[Any], Any] | None], ...],
    tuple[tuple[int, Callable[[Any], Any] | None], ...],
    tuple[tuple[int, Callable[[Any], Any]], ...],
]


@functools.cache
def _fit_plan(upsert: Upsert, fit: ColumnFit) -> _Plan:
    """What :meth:`Upsert.fitted_rows` does column by column, worked out once per upsert and
    fit: each column's name and value when a row leaves it out (:data:`_MISSING` where a
    factory makes it), the factories, the text columns (index, length, processor), the JSON documents
    (index, processor) and the other columns with a bind processor. Cached for the process:
    upserts and fits are module constants of the tables' owners, a handful in all."""
    lengths = dict(fit.texts)
    documents = set(fit.documents)
    columns = list(enumerate(zip(upsert.names, upsert.processors, upsert.defaults, strict=True)))
    return (
        tuple(
            (name, _MISSING if callable(default) else default) for _, (name, _, default) in columns
        ),
        tuple((index, default) for index, (_, _, default) in columns if callable(default)),
        tuple(
            (index, lengths[name], process)
            for index, (name, process, _) in columns
            if name in lengths
        ),
        tuple((index, process) for index, (name, process, _) in columns if name in documents),
        tuple(
            (index, process)
            for index, (name, process, _) in columns
            if process is not None and name not in lengths and name not in documents
        ),
    )


def _document(value: Any, process: Callable[[Any], Any] | None, guard: TextGuard) -> Any:
    """A JSON column's value for the driver: serialised by ``process`` (orjson, which refuses an
    unpaired surrogate), or as it is where the driver serialises it; walked by ``guard`` first
    only when refused."""
    try:
        if process is not None:
            return process(value)
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        return value
    except orjson.JSONEncodeError:
        cleaned = guard.value(value)
        return cleaned if process is None else process(cleaned)


def _bind_processor(column_type: Any, dialect: Dialect) -> Callable[[Any], Any] | None:
    """A column's bind processor: the dialect's own type's, as a statement binds it, but for
    JSON documents.

    The generic type's processor left a SQLite datetime to the driver, which wrote ``+00:00``
    text that no bound time (SQLAlchemy's ``… 00:00:00.000000``) compares equal to, so pages and
    ranges cut at it lost rows. A JSON column keeps the generic processor, which serialises at
    once (so :func:`_document` sees a refused document and cleans it): psycopg's defers to the
    COPY, where a lone surrogate failed the whole batch."""
    if isinstance(column_type, JSON):
        return column_type.bind_processor(dialect)  # type: ignore[no-untyped-call, no-any-return]
    return column_type.dialect_impl(dialect).bind_processor(dialect)  # type: ignore[no-any-return]


def _default(column: Any) -> Any:
    """A column's Python-side default: a value, a function making one, or None."""
    default = column.default
    if default is None:
        return None
    if default.is_scalar:
        return default.arg
    return lambda: default.arg(None)  # SQLAlchemy wraps a factory to take an execution context


_UPSERTS: dict[tuple[str, str, frozenset[str]], Upsert] = {}
"""Kept by hand rather than by ``functools.cache``: keyed by the dialect's name, not the dialect
itself, since every engine has a dialect of its own and a cache keyed by it would keep an upsert
for each engine a process ever opened (the CLI and the tests open many)."""


def upsert_of(table: Table, dialect: Dialect, keep: frozenset[str]) -> Upsert:
    """The upsert of ``table`` for ``dialect``: a row already stored keeps its ``keep``
    columns and takes the new values of the others."""
    key = (table.name, dialect.name, keep)
    if (upsert := _UPSERTS.get(key)) is None:
        upsert = _UPSERTS[key] = Upsert.build(table, dialect, keep)
    return upsert


@dataclass(frozen=True)
class Prepared:
    """Rows made ready for the driver (storable, through the bind processors) before the write
    transaction, so that a SQLite writer holds the one write lock only for the insert itself:
    with two scoring processes the lock, not the cores, was what they waited on."""

    upsert: Upsert
    rows: list[tuple[Any, ...]]
    replaced: int = 0
    """Text values made storable (see :mod:`tracescore.store.text`)."""

    def write(self, connection: Connection) -> None:
        if self.rows:
            self.upsert.insert(connection, self.rows)
