"""Alembic's comparison of a database with the models, for the migration tests."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection

from tracescore.store import migrate


def drift(connection: Connection) -> list[Any]:
    """What differs between the database ``connection`` is on and the models, column types
    included: empty when they agree. An index the models make on one dialect only
    (``Index.ddl_if``: PostgreSQL's ``ix_spans_trace``) is compared on that dialect only, as
    Alembic itself compares every index on every dialect."""

    def made_here(obj: Any, name: str | None, type_: str, reflected: bool, other: Any) -> bool:
        condition = getattr(obj, "_ddl_if", None)  # SQLAlchemy keeps ddl_if's condition here
        if reflected or condition is None or condition.dialect is None:
            return True
        dialects = (condition.dialect,) if isinstance(condition.dialect, str) else condition.dialect
        return connection.dialect.name in dialects

    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "include_object": made_here}
    )
    return list(compare_metadata(context, migrate.store_metadata()))
