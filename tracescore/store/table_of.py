"""The Core table behind a SQLModel row class, typed as one.

The stores write and read with Core statements on tables (the row classes are the schema, not
the hot path), so they need each class's :class:`~sqlalchemy.Table`. SQLModel's stubs do not
declare ``__table__``, and SQLAlchemy's mapper types its table as any ``FromClause``; a
declarative class with ``table=True`` always maps a ``Table``, which is checked here once so
that callers get the precise type instead of silencing the checker at every use.
"""

from __future__ import annotations

from sqlalchemy import Table, inspect
from sqlmodel import SQLModel


def table_of(row: type[SQLModel]) -> Table:
    """The table ``row`` (a ``table=True`` class) is mapped to; call it once, at import."""
    mapper = inspect(row, raiseerr=False)
    table = None if mapper is None else mapper.local_table
    if not isinstance(table, Table):
        raise TypeError(f"{row.__name__} is not mapped to a table (declare it with table=True)")
    return table
