"""The ``sources`` table: per (service, instrumentation scope), what the pipeline made of its spans.

Counts are added, never set: every scoring process (and every replica) adds its batch's counts
to the same row with one upsert in the batch's own transaction, so the figures survive restarts
and sum over all of them without any process knowing of the others. The reason columns hold
the latest batch's verdict instead: a source whose traces were unread shows why until a batch
reads it (content capture turned on), while ``unread_traces`` keeps the history.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sqlalchemy import BigInteger, Column, Connection, Float, Text, select
from sqlmodel import Field, SQLModel

from tracescore.store.table_of import table_of
from tracescore.store.text import ColumnFit, TextGuard


def _count() -> Column[int]:
    return Column(BigInteger, nullable=False)


class SourceRow(SQLModel, table=True):
    """One (service, scope) pair: an instrumentation library inside an application."""

    __tablename__ = "sources"

    service: str = Field(primary_key=True, max_length=200)
    scope: str = Field(primary_key=True, max_length=200)
    """The instrumentation scope's name ("" when the exporter sent none)."""
    spans: int = Field(sa_column=_count())
    traces: int = Field(sa_column=_count())
    """Traces read that had at least one span of the source."""
    runs: int = Field(sa_column=_count())
    """Runs rebuilt from the source's spans (a run counts where its own span came from)."""
    runs_with_content: int = Field(sa_column=_count())
    unread_traces: int = Field(sa_column=_count())
    """Traces with a span of the source that gave no run with content."""
    convention: str | None = Field(default=None, max_length=50)
    reason: str | None = Field(default=None, max_length=40)
    """The reason code of the latest batch's unread trace, None when that batch read it (an AI
    library's source that fed no run of a read trace keeps why: it gave nothing)."""
    detail: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    first_seen: float = Field(sa_column=Column(Float, nullable=False))
    last_seen: float = Field(sa_column=Column(Float, nullable=False))


_SOURCES = table_of(SourceRow)
_FIT = ColumnFit(_SOURCES, produced_here=("reason",))
_ADDED = ("spans", "traces", "runs", "runs_with_content", "unread_traces")
_COLUMNS = tuple(column.name for column in _SOURCES.columns)


def _add_sql(mark: str) -> str:
    """The upsert adding a batch's counts, as driver SQL: both databases spell it alike, and
    the statement a batch would otherwise build and look up in SQLAlchemy's cache cost more
    than the scores of a small batch."""
    updates = [f"{name} = sources.{name} + excluded.{name}" for name in _ADDED] + [
        "convention = COALESCE(excluded.convention, sources.convention)",
        "reason = excluded.reason",
        "detail = excluded.detail",
        "last_seen = excluded.last_seen",
    ]
    return (
        f"INSERT INTO sources ({', '.join(_COLUMNS)}) VALUES ({', '.join([mark] * len(_COLUMNS))}) "
        f"ON CONFLICT (service, scope) DO UPDATE SET {', '.join(updates)}"
    )


_ADD_SQL = {"qmark": _add_sql("?"), "format": _add_sql("%s"), "pyformat": _add_sql("%s")}


@dataclass(slots=True)
class SourceTally:
    """One source's counts over a batch of traces, as the scoring worker adds them up."""

    service: str
    scope: str
    spans: int = 0
    traces: int = 0
    runs: int = 0
    runs_with_content: int = 0
    unread_traces: int = 0
    convention: str | None = None
    reason: str | None = None
    detail: str | None = None


def add_source_tallies(
    connection: Connection, tallies: Sequence[SourceTally], now: float | None = None
) -> int:
    """Add a batch's counts to the sources' rows (creating new ones); returns how many text
    values had to be made storable. Rows are written in key order, so that two transactions
    adding to the same sources lock them in the same order and cannot deadlock."""
    if not tallies:
        return 0
    now = time.time() if now is None else now
    guard = TextGuard()
    fitted = (
        _FIT.row({**asdict(tally), "first_seen": now, "last_seen": now}, guard) for tally in tallies
    )
    rows = sorted(
        (tuple(row[name] for name in _COLUMNS) for row in fitted), key=lambda row: row[:2]
    )
    connection.exec_driver_sql(_ADD_SQL[connection.dialect.paramstyle], rows)
    return guard.replaced


@dataclass(slots=True)
class Source(SourceTally):
    """A source as stored, as the API and the dashboard list it: its counts so far, the latest
    batch's reason, and when it was first and last read (Unix seconds)."""

    first_seen: float = 0.0
    last_seen: float = 0.0


def list_sources(connection: Connection, service: str | None = None) -> list[Source]:
    """Every source (of ``service`` when given): those with a reason first, then by service
    and scope."""
    table = _SOURCES
    query = select(*table.columns)
    if service is not None:
        query = query.where(table.c.service == service)
    query = query.order_by(table.c.reason.is_(None), table.c.service, table.c.scope)
    return [Source(**row._mapping) for row in connection.execute(query)]
