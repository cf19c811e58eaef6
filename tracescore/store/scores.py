"""The ``scores``, ``sampling_decisions`` and ``sampling_tallies`` tables: their rows, their
writes, and the reads of single callers.

A score's primary key is derived from (trace, span, binding, scorer version), and writes are
upserts: a retried or re-claimed trace, a restart mid-batch or a late span that triggers a
rescore all land on the same row instead of adding duplicates. A new scorer version gets rows
of its own, so old and new versions can be compared. The upsert's engine (rows made storable
and bound in one pass, then ``executemany`` or ``COPY``) is :mod:`tracescore.store.bulk`'s.

The reads several parts share are in :mod:`tracescore.store.score_reads` (lists and pages)
and :mod:`tracescore.store.score_aggregates` (counts and figures); those joining feedback are
in :mod:`tracescore.store.feedback`. The reads here are grouped under a comment per caller.

Over 500 lines and kept whole: the ``scores`` table, the read view that joins its names
back and the small reads of single callers share the view's columns; the series' own table
and cache are in :mod:`tracescore.store.score_series`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypedDict, cast

from sqlalchemy import BigInteger, Column, Engine, Index, Integer, Text, func, select, text
from sqlalchemy.engine import Connection, Dialect, Result
from sqlmodel import Field, SQLModel

from tracescore.store.aging import AgedRows
from tracescore.store.bulk import Prepared, upsert_of
from tracescore.store.column_types import HexId, PackedJSON, UtcTime
from tracescore.store.dialect import dialect_insert
from tracescore.store.packed_text import PackedText
from tracescore.store.score_series import (
    SERIES,
    Names,
    committed_ids,
    in_transaction,
    names_of,
)
from tracescore.store.table_of import table_of
from tracescore.store.text import ColumnFit, TextGuard

ScoreStatus = Literal[
    "ok", "error", "not_scorable", "skipped_budget", "skipped_rate", "skipped_cascade"
]


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
    conversation_turns: NotRequired[int | None]
    """The turns a conversation's score covered; as ``conversation_id``."""
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


def _time() -> Column[datetime]:
    return Column(UtcTime, nullable=False, default=_utcnow)


def score_id(trace_id: str, span_id: str, binding: str, scorer_version: str) -> str:
    key = f"{trace_id}\x1f{span_id}\x1f{binding}\x1f{scorer_version}".encode()
    return hashlib.sha256(key).hexdigest()[:32]


class ScoreRow(SQLModel, table=True):
    """A stored score: its own values, and its names as a :mod:`~tracescore.store.score_series`
    id. Reads go through :data:`SCORES`, which joins the names back; the columns are ordered
    for PostgreSQL (8-byte ones first, then 4-byte, then variable), so no row pads between them."""

    __tablename__ = "scores"
    __table_args__ = (
        # Every filter on a name (binding, scorer, agent, status, ...) is a range per series.
        Index("ix_scores_series_created", "series_id", "created_at"),
        # A page of several series walks this newest first, checking ids before reading a row.
        Index("ix_scores_created", "created_at", "series_id"),
        Index("ix_scores_trace", "trace_id"),
        # Conversation scores only: nearly every score is a run's (NULL here).
        Index(
            "ix_scores_conversation",
            "conversation_id",
            sqlite_where=text("conversation_id IS NOT NULL"),
            postgresql_where=text("conversation_id IS NOT NULL"),
        ),
    )

    score: float | None = None
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    created_at: datetime = Field(default_factory=_utcnow, sa_column=_time())
    updated_at: datetime = Field(default_factory=_utcnow, sa_column=_time())
    series_id: int = Field(sa_column=Column(Integer, nullable=False))
    """The row's names: a :class:`~tracescore.store.score_series.ScoreSeriesRow`."""
    input_tokens: int = 0
    output_tokens: int = 0
    conversation_turns: int | None = None
    """How many turns a conversation's score covered: every scoring of a conversation is a
    row of its own, so a conversation that went on after it was scored keeps its history."""
    id: str = Field(sa_column=Column(HexId, primary_key=True))
    """:func:`score_id`'s 32 hex digits, stored as their 16 bytes."""
    trace_id: str = Field(sa_column=Column(HexId, nullable=False))
    span_id: str = Field(sa_column=Column(HexId, nullable=False))
    label: str | None = Field(default=None, max_length=100)
    reason: str | None = Field(default=None, sa_column=Column(PackedText))
    """Compressed against the code scorers' phrasings (:mod:`tracescore.store.packed_text`)."""
    error: str | None = Field(default=None, sa_column=Column(Text))
    steps: dict[str, Any] | None = Field(default=None, sa_column=Column(PackedJSON))
    """Compressed once long (:class:`~tracescore.store.column_types.PackedJSON`): read in
    Python, never in SQL."""
    conversation_id: str | None = Field(default=None, max_length=200)
    """Set on a conversation's score (:mod:`tracescore.pipeline.conversations`), whose trace and
    span are its last turn's; None on a run's."""


class SamplingDecisionRow(SQLModel, table=True):
    """One row per run that passed a binding's filter: the sampling verdict, for coverage."""

    __tablename__ = "sampling_decisions"
    __table_args__ = (
        Index("ix_sampling_binding_created", "binding", "created_at"),
        Index("ix_sampling_created", "created_at"),  # retention prunes the oldest first
    )

    id: str = Field(sa_column=Column(HexId, primary_key=True))
    trace_id: str = Field(sa_column=Column(HexId, nullable=False))
    span_id: str = Field(sa_column=Column(HexId, nullable=False))
    binding: str = Field(max_length=100)
    sampled: bool
    created_at: datetime = Field(default_factory=_utcnow, sa_column=_time())


class SamplingTallyRow(SQLModel, table=True):
    """Traces no binding sampled, counted per binding and minute instead of a decision row per
    run: the worker decides sampling from the trace id before loading a trace, so an unsampled
    trace is never loaded, its runs never extracted, and it costs one counter increment here.
    Coverage counts each as one eligible, unsampled run of the binding."""

    __tablename__ = "sampling_tallies"

    binding: str = Field(primary_key=True, max_length=100)
    minute: datetime = Field(sa_column=Column(UtcTime, primary_key=True))
    """The start of the minute (UTC) the traces were decided in."""
    unsampled: int = Field(sa_column=Column(BigInteger, nullable=False))


SCORE_ROWS, _DECISIONS = table_of(ScoreRow), table_of(SamplingDecisionRow)
_ROW, _SERIES = SCORE_ROWS.c, SERIES.c
NAMED = select(
    _ROW.id,
    _ROW.trace_id,
    _ROW.span_id,
    _SERIES.binding,
    _SERIES.scorer_id,
    _SERIES.scorer_version,
    _SERIES.status,
    _ROW.score,
    _ROW.label,
    _ROW.reason,
    _ROW.error,
    _ROW.steps,
    _SERIES.judge_model,
    _ROW.input_tokens,
    _ROW.output_tokens,
    _ROW.cost_usd,
    _ROW.latency_ms,
    _SERIES.run_kind,
    _SERIES.service,
    _SERIES.agent,
    _SERIES.model,
    _ROW.conversation_id,
    _ROW.conversation_turns,
    _ROW.created_at,
    _ROW.updated_at,
).join_from(SCORE_ROWS, SERIES, _ROW.series_id == _SERIES.id)
SCORES = NAMED.subquery("named_scores")
"""Score rows as every read sees them, names joined back (:class:`StoredScore`'s columns, in
its order). Both databases flatten the subquery into the reading query, so a filter on a name
becomes a lookup of the few matching series and a range of ``(series_id, created_at)`` per
series, and a name in a GROUP BY a key lookup per row of a table of a few hundred."""
_TALLIES = table_of(SamplingTallyRow)
_KEEP = frozenset({"id", "created_at"})
"""Columns a re-written score or decision keeps: its id and when it was first made."""


def prepare_scores(database: Engine, rows: Sequence[StoredScore]) -> Prepared:
    """Score rows made storable and ready to upsert: as both databases accept them
    (:class:`~tracescore.store.text.ColumnFit`), NUL characters and unpaired surrogates
    replaced and values cut to their column's length. An agent named by its client with a
    NUL, or a 300-character model name, then still gets its scores stored.

    Their names become series ids (:mod:`~tracescore.store.score_series`), new series stored
    in a transaction of their own: call it before the write transaction."""
    names = [names_of(row) for row in rows]
    return _prepared(database.dialect, rows, names, committed_ids(database, set(names)))


def _prepared(
    dialect: Dialect,
    rows: Sequence[StoredScore],
    names: list[Names],
    ids: dict[Names, tuple[int, int]],
) -> Prepared:
    guard = TextGuard()
    upsert = upsert_of(SCORE_ROWS, dialect, keep=_KEEP)
    fitted = upsert.fitted_rows(rows, _SCORE_FIT, guard)
    replaced = guard.replaced
    at = _SERIES_AT
    for index, row in enumerate(fitted):
        series, changed = ids[names[index]]
        replaced += changed
        fitted[index] = (*row[:at], series, *row[at + 1 :])
    return Prepared(upsert, fitted, replaced)


def prepare_decisions(dialect: Dialect, rows: Sequence[SamplingDecision]) -> Prepared:
    upsert = upsert_of(_DECISIONS, dialect, keep=_KEEP)
    return Prepared(upsert, [upsert.row(row) for row in rows])


def add_tallies(connection: Connection, unsampled: dict[str, int], now: datetime) -> None:
    """Count traces no binding sampled, per binding, in the current minute's tally."""
    if not unsampled:
        return
    table = _TALLIES
    statement = dialect_insert(connection)(table)
    statement = statement.on_conflict_do_update(
        index_elements=["binding", "minute"],
        set_={"unsampled": table.c.unsampled + statement.excluded.unsampled},
    )
    minute = now.replace(second=0, microsecond=0)
    connection.execute(
        statement,
        [
            {"binding": name, "minute": minute, "unsampled": count}
            for name, count in sorted(unsampled.items())
        ],
    )


_SCORE_FIT = ColumnFit(SCORE_ROWS, produced_here=("id", "trace_id", "span_id"))
"""Score columns made storable; the others hold values tracescore makes itself (the names are
the series')."""
_SERIES_AT = list(SCORE_ROWS.c.keys()).index("series_id")


def upsert_scores(connection: Connection, rows: Sequence[StoredScore]) -> int:
    """Upsert score rows, made storable first; returns how many text values were replaced."""
    names = [names_of(row) for row in rows]
    ids = in_transaction(connection, set(names))
    prepared = _prepared(connection.dialect, rows, names, ids)
    prepared.write(connection)
    return prepared.replaced


def upsert_decisions(connection: Connection, rows: Sequence[SamplingDecision]) -> None:
    prepare_decisions(connection.dialect, rows).write(connection)


# --- feedback/ (export, review queue) ------------------------------------------------------


@dataclass(frozen=True)
class ExportedScore:
    """One binding's ``ok`` score of one run, as an export of scored runs lists it (not
    :class:`tracescore.store.score_reads.ScoredRun`, a run a re-score samples)."""

    trace_id: str
    span_id: str
    score: float
    scorer_version: str
    reason: str | None


def exported_scores(
    database: Engine, binding: str, since: datetime, below: float | None = None
) -> list[ExportedScore]:
    """``binding``'s ``ok`` scores since ``since`` (below ``below``), the first per run, oldest
    first."""
    table = SCORES
    query = (
        select(
            table.c.trace_id, table.c.span_id, table.c.score, table.c.scorer_version, table.c.reason
        )
        .where(
            table.c.binding == binding,
            table.c.status == "ok",
            table.c.score.is_not(None),
            table.c.created_at >= since,
        )
        .order_by(table.c.created_at, table.c.id)
    )
    if below is not None:
        query = query.where(table.c.score < below)
    with database.connect() as connection:
        rows = connection.execute(query).all()
    first: dict[tuple[str, str], ExportedScore] = {}
    for row in rows:
        first.setdefault((row.trace_id, row.span_id), ExportedScore(**row._mapping))
    return list(first.values())


class RecentScore(TypedDict):
    """A recent ``ok`` score, as the review queue weighs it."""

    trace_id: str
    span_id: str
    binding: str
    score: float
    label: str | None
    reason: str | None
    scorer_version: str
    judge_model: str | None
    agent: str | None
    created_at: datetime


_RECENT_COLUMNS = tuple(SCORES.c[name] for name in RecentScore.__annotations__)


def recent_scores(
    connection: Connection, binding: str, since: datetime, limit: int
) -> list[RecentScore]:
    """The ``limit`` most recent ``ok`` scores of ``binding`` since ``since``, newest first."""
    table = SCORES
    query = (
        select(*_RECENT_COLUMNS)
        .where(
            table.c.binding == binding,
            table.c.created_at >= since,
            table.c.status == "ok",
            table.c.score.is_not(None),
        )
        .order_by(table.c.created_at.desc(), table.c.id)
        .limit(limit)
    )
    return cast(list[RecentScore], plain_rows(connection.execute(query)))


# --- conversations/reads: the scores a conversation's page shows ---------------------------


class ScoreRecord(ListedScore):
    """A stored score as the API and the dashboard show it (datetimes in UTC)."""

    steps: NotRequired[dict[str, Any] | None]
    """Only when asked for (``with_steps``): the dashboard shows them, the API does not."""


LISTED_COLUMNS = [column for column in SCORES.c if column.name != "steps"]
"""The columns of a score as lists show it: all but its ``steps``."""


def _score_columns(with_steps: bool) -> list[Any]:
    return list(SCORES.c) if with_steps else LISTED_COLUMNS


def plain_rows(result: Result[Any]) -> list[dict[str, Any]]:
    """A result's rows as dicts keyed by plain ``str`` names: :data:`SCORES`' column names are
    SQLAlchemy's label strings, a ``str`` subclass that JSON encoders take the slow path for
    (a page of 100 scores cost 10 ms more to send than to read)."""
    names = [str(name) for name in result.keys()]  # noqa: SIM118 (a Result, not a dict)
    return [dict(zip(names, row, strict=True)) for row in result]


def conversation_scores(
    connection: Connection, conversation_ids: Sequence[str], *, with_steps: bool = False
) -> dict[str, list[ScoreRecord]]:
    """The conversations' own scores (not their turns'), by conversation: every scoring, the
    latest first (most turns covered), then by binding."""
    if not conversation_ids:
        return {}
    found: dict[str, list[ScoreRecord]] = {}
    rows = plain_rows(
        connection.execute(
            select(*_score_columns(with_steps))
            .where(SCORES.c.conversation_id.in_(list(conversation_ids)))
            .order_by(
                SCORES.c.conversation_turns.desc().nulls_last(),
                SCORES.c.created_at.desc(),
                SCORES.c.binding,
                SCORES.c.scorer_version,
            )
        )
    )
    for row in rows:
        found.setdefault(row["conversation_id"], []).append(cast(ScoreRecord, row))
    return found


def run_scores(
    connection: Connection, trace_ids: Sequence[str], *, with_steps: bool = False
) -> dict[str, list[ScoreRecord]]:
    """The run scores (not conversations') of the traces, by trace, by binding and span."""
    if not trace_ids:
        return {}
    found: dict[str, list[ScoreRecord]] = {}
    rows = plain_rows(
        connection.execute(
            select(*_score_columns(with_steps))
            .where(SCORES.c.trace_id.in_(list(trace_ids)), SCORES.c.conversation_id.is_(None))
            .order_by(SCORES.c.binding, SCORES.c.span_id)
        )
    )
    for row in rows:
        found.setdefault(row["trace_id"], []).append(cast(ScoreRecord, row))
    return found


# --- store/reservations: the day's spend before a binding's first reservation ----------------


def stored_spend(connection: Connection, binding: str, since: datetime) -> float:
    """USD the scores ``binding`` stored since ``since`` cost (skipped ones cost nothing)."""
    table = SCORES
    return float(
        connection.execute(
            select(func.coalesce(func.sum(table.c.cost_usd), 0.0)).where(
                (table.c.binding == binding) & (table.c.created_at >= since)
            )
        ).scalar_one()
    )


# --- offline/ (compare, rescore, estimate) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VersionScore:
    """One ``ok`` score of a run by one scorer version."""

    trace_id: str
    span_id: str
    scorer_version: str
    score: float
    label: str | None


def version_scores(database: Engine, binding: str, versions: Sequence[str]) -> list[VersionScore]:
    """The ``ok`` scores ``binding`` made with any of ``versions``."""
    table = SCORES
    query = select(
        table.c.trace_id, table.c.span_id, table.c.scorer_version, table.c.score, table.c.label
    ).where(
        (table.c.binding == binding)
        & table.c.scorer_version.in_(list(versions))
        & (table.c.status == "ok")
        & table.c.score.is_not(None)
    )
    with database.connect() as connection:
        return [VersionScore(*row) for row in connection.execute(query)]


def score_ids_of(database: Engine, trace_id: str, statuses: Sequence[str]) -> set[str]:
    """The ids of the trace's scores in any of ``statuses``."""
    table = SCORES
    query = select(table.c.id).where(
        (table.c.trace_id == trace_id) & table.c.status.in_(list(statuses))
    )
    with database.connect() as connection:
        return set(connection.scalars(query))


def paid_steps(connection: Connection, scorer_id: str, limit: int) -> list[dict[str, Any] | None]:
    """The ``steps`` of the scorer's latest ``limit`` scores that paid for judge output, newest
    first (what each of their judge calls cost is in there)."""
    table = SCORES
    return list(
        connection.scalars(
            select(table.c.steps)
            .where((table.c.scorer_id == scorer_id) & (table.c.output_tokens > 0))
            .order_by(table.c.created_at.desc())
            .limit(limit)
        ).all()
    )


# --- retention/prune ---------------------------------------------------------------------------

SCORES_BY_AGE = AgedRows(SCORE_ROWS, ("id",), "created_at")
DECISIONS_BY_AGE = AgedRows(_DECISIONS, ("id",), "created_at")
TALLIES_BY_AGE = AgedRows(_TALLIES, ("binding", "minute"), "minute")
