"""Stored scores and sampling decisions.

A score's primary key is derived from (trace, span, binding, scorer version), and writes are
upserts: a retried or re-claimed trace, a restart mid-batch or a late span that triggers a
rescore all land on the same row instead of adding duplicates. A new scorer version gets rows
of its own, so old and new versions can be compared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypedDict

from sqlalchemy import JSON, BigInteger, Column, Index, Table, Text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Dialect
from sqlmodel import Field, SQLModel

from tracescore.store.bulk import BulkInsert, bulk_insert
from tracescore.store.table_of import table_of
from tracescore.store.text import ColumnFit, TextGuard

ScoreStatus = Literal["ok", "error", "not_scorable", "skipped_budget", "skipped_rate"]


class ListedScore(TypedDict):
    """A ``scores`` row without its ``steps``: what score lists read and show."""

    id: str
    trace_id: str
    span_id: str
    binding: str
    scorer_id: str
    scorer_version: str
    status: str
    score: float | None
    label: str | None
    reason: str | None
    error: str | None
    judge_model: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_ms: float
    run_kind: str
    service: str | None
    agent: str | None
    model: str | None
    conversation_id: NotRequired[str | None]
    """Only on a conversation's score as the worker makes it; read rows always have it."""
    created_at: datetime
    updated_at: datetime


class StoredScore(ListedScore):
    """A whole ``scores`` row as it travels from the scoring worker to the store, the emitter
    and the metrics (and as a trace's page reads it): typed, yet the plain dict the bulk upsert
    reads, because the worker makes one per binding and run and a model instance each would
    cost more than the scorer it records."""

    steps: dict[str, Any] | None


class SamplingDecision(TypedDict):
    """A ``sampling_decisions`` row: whether one binding sampled one run."""

    id: str
    trace_id: str
    span_id: str
    binding: str
    sampled: bool
    created_at: datetime


def _utcnow() -> datetime:
    return datetime.now(UTC)


def score_id(trace_id: str, span_id: str, binding: str, scorer_version: str) -> str:
    key = f"{trace_id}\x1f{span_id}\x1f{binding}\x1f{scorer_version}".encode()
    return hashlib.sha256(key).hexdigest()[:32]


class ScoreRow(SQLModel, table=True):
    __tablename__ = "scores"
    __table_args__ = (
        Index("ix_scores_binding_created", "binding", "created_at"),
        Index("ix_scores_scorer_created", "scorer_id", "created_at"),
        Index("ix_scores_created", "created_at"),
        Index("ix_scores_trace", "trace_id"),
        Index("ix_scores_agent_created", "agent", "created_at"),
        Index("ix_scores_status_created", "status", "created_at"),
        Index("ix_scores_conversation", "conversation_id"),
    )

    id: str = Field(primary_key=True, max_length=32)
    trace_id: str = Field(max_length=32)
    span_id: str = Field(max_length=16)
    binding: str = Field(max_length=100)
    scorer_id: str = Field(max_length=200)
    scorer_version: str = Field(max_length=50)
    status: str = Field(max_length=20)
    score: float | None = None
    label: str | None = Field(default=None, max_length=20)
    reason: str | None = Field(default=None, sa_column=Column(Text))
    error: str | None = Field(default=None, sa_column=Column(Text))
    steps: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    judge_model: str | None = Field(default=None, max_length=200)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    run_kind: str = Field(default="agent", max_length=10)
    service: str | None = Field(default=None, max_length=200)
    agent: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=200)
    conversation_id: str | None = Field(default=None, max_length=200)
    """Set on a conversation's score (:mod:`tracescore.pipeline.conversations`), whose trace and
    span are its last turn's; None on a run's."""
    created_at: datetime = Field(default_factory=_utcnow)
    updated_at: datetime = Field(default_factory=_utcnow)


class SamplingDecisionRow(SQLModel, table=True):
    """One row per run that passed a binding's filter: the sampling verdict, for coverage."""

    __tablename__ = "sampling_decisions"
    __table_args__ = (
        Index("ix_sampling_binding_created", "binding", "created_at"),
        Index("ix_sampling_created", "created_at"),  # retention prunes the oldest first
    )

    id: str = Field(primary_key=True, max_length=32)
    trace_id: str = Field(max_length=32)
    span_id: str = Field(max_length=16)
    binding: str = Field(max_length=100)
    sampled: bool
    created_at: datetime = Field(default_factory=_utcnow)


class SamplingTallyRow(SQLModel, table=True):
    """Traces no binding sampled, counted per binding and minute instead of a decision row per
    run: the worker decides sampling from the trace id before loading a trace, so an unsampled
    trace is never loaded, its runs never extracted, and it costs one counter increment here.
    Coverage counts each as one eligible, unsampled run of the binding."""

    __tablename__ = "sampling_tallies"

    binding: str = Field(primary_key=True, max_length=100)
    minute: datetime = Field(primary_key=True)
    """The start of the minute (UTC) the traces were decided in."""
    unsampled: int = Field(sa_column=Column(BigInteger, nullable=False))


@dataclass(frozen=True)
class _Upsert:
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
    def build(cls, table: Table, dialect: Dialect, keep: set[str]) -> _Upsert:
        columns = list(table.columns)
        names = tuple(column.name for column in columns)
        insert = bulk_insert(
            dialect.name, dialect.paramstyle, table.name, names, update=[n for n in names if n not in keep]
        )
        processors = tuple(column.type.bind_processor(dialect) for column in columns)
        return cls(insert, processors, tuple(map(_default, columns)), names)

    def row(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        values = []
        for name, process, default in zip(self.names, self.processors, self.defaults, strict=True):
            value = row.get(name, _MISSING)
            if value is _MISSING:
                value = default() if callable(default) else default
            values.append(value if process is None or value is None else process(value))
        return tuple(values)


_MISSING = object()


def _default(column: Any) -> Any:
    """A column's Python-side default: a value, a function making one, or None."""
    default = column.default
    if default is None:
        return None
    if default.is_scalar:
        return default.arg
    return lambda: default.arg(None)  # SQLAlchemy wraps a factory to take an execution context


_UPSERTS: dict[tuple[str, str], _Upsert] = {}
_SCORES, _DECISIONS = table_of(ScoreRow), table_of(SamplingDecisionRow)
_TALLIES = table_of(SamplingTallyRow)


def _upsert_of(table: Table, dialect: Dialect) -> _Upsert:
    key = (table.name, dialect.name)
    if (upsert := _UPSERTS.get(key)) is None:
        upsert = _UPSERTS[key] = _Upsert.build(table, dialect, keep={"id", "created_at"})
    return upsert


@dataclass(frozen=True)
class Prepared:
    """Rows made ready for the driver (storable, through the bind processors) before the write
    transaction, so that a SQLite writer holds the one write lock only for the insert itself:
    with two scoring processes the lock, not the cores, was what they waited on."""

    upsert: _Upsert
    rows: list[tuple[Any, ...]]
    replaced: int = 0
    """Text values made storable (see :mod:`tracescore.store.text`)."""

    def write(self, connection: Connection) -> None:
        if self.rows:
            self.upsert.insert(connection, self.rows)


def prepare_scores(dialect: Dialect, rows: Sequence[StoredScore]) -> Prepared:
    """Score rows made storable and ready to upsert (see :func:`storable_score`)."""
    guard = TextGuard()
    upsert = _upsert_of(_SCORES, dialect)
    return Prepared(upsert, [upsert.row(storable_score(row, guard)) for row in rows], guard.replaced)


def prepare_decisions(dialect: Dialect, rows: Sequence[SamplingDecision]) -> Prepared:
    upsert = _upsert_of(_DECISIONS, dialect)
    return Prepared(upsert, [upsert.row(row) for row in rows])


def add_tallies(connection: Connection, unsampled: dict[str, int], now: datetime) -> None:
    """Count traces no binding sampled, per binding, in the current minute's tally."""
    if not unsampled:
        return
    table = _TALLIES
    insert = pg_insert if connection.dialect.name == "postgresql" else sqlite_insert
    statement = insert(table)
    statement = statement.on_conflict_do_update(
        index_elements=["binding", "minute"], set_={"unsampled": table.c.unsampled + statement.excluded.unsampled}
    )
    minute = now.replace(second=0, microsecond=0)
    connection.execute(
        statement, [{"binding": name, "minute": minute, "unsampled": count} for name, count in sorted(unsampled.items())]
    )


_SCORE_FIT = ColumnFit(_SCORES, produced_here=("id", "trace_id", "span_id", "status", "run_kind"))
"""Score columns made storable; the others hold values tracescore makes itself."""


def storable_score(row: StoredScore, guard: TextGuard) -> dict[str, Any]:
    """``row`` as both databases accept it (:class:`~tracescore.store.text.ColumnFit`): NUL
    characters and unpaired surrogates replaced and values cut to their column's length. An
    agent named by its client with a NUL, or a 300-character model name, then still gets its
    scores stored."""
    return _SCORE_FIT.row(row, guard)


def upsert_scores(connection: Connection, rows: Sequence[StoredScore]) -> int:
    """Upsert score rows, made storable first; returns how many text values were replaced."""
    prepared = prepare_scores(connection.dialect, rows)
    prepared.write(connection)
    return prepared.replaced


def upsert_decisions(connection: Connection, rows: Sequence[SamplingDecision]) -> None:
    prepare_decisions(connection.dialect, rows).write(connection)
