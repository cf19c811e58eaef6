"""Human feedback on runs: the table, the scan cursor of OTLP feedback, and their queries.

A feedback row is one person's (or one product user's) verdict on one run for one evaluation
name, usually a binding. Its id is derived from (trace, span, name, author), so a second verdict
by the same author replaces the first instead of counting twice in calibration, whichever way
it arrived (API or OTLP). The later verdict wins: a rescan of an old OTLP record never
overwrites a verdict recorded after it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypedDict, cast

from sqlalchemy import Column, ColumnElement, Engine, Float, Index, Text, and_, delete, or_, select
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from tracescore import metrics
from tracescore.store.aging import AgedRows
from tracescore.store.column_types import hex_text
from tracescore.store.dialect import as_utc, dialect_insert
from tracescore.store.feedback_triggers import NewTrigger, add_triggers
from tracescore.store.scores import SCORES
from tracescore.store.spanstore import SpanStore
from tracescore.store.table_of import table_of
from tracescore.store.text import ColumnFit, TextGuard

FeedbackSource = Literal["api", "otlp"]


def feedback_id(trace_id: str, span_id: str | None, name: str, author: str) -> str:
    """The verdict's id: one per run, binding and author, so a verdict given again replaces it.

    Taken from the fields as sent, before they are made storable: a lone surrogate (a
    JavaScript string cut inside a pair) is hashed as it came (``surrogatepass``), not refused."""
    key = f"{trace_id}\x1f{span_id or ''}\x1f{name}\x1f{author}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(key).hexdigest()[:32]


class FeedbackRow(SQLModel, table=True):
    __tablename__ = "feedback"
    __table_args__ = (
        Index("ix_feedback_name_created", "name", "created_at"),
        Index("ix_feedback_trace", "trace_id"),
    )

    id: str = Field(primary_key=True, max_length=32)
    trace_id: str = Field(max_length=32)
    span_id: str | None = Field(default=None, max_length=16)
    """The judged run's span; None: the trace's run(s) as a whole."""
    name: str = Field(max_length=100)
    """A binding name, or a free evaluation name (``thumbs``) that no binding scores."""
    value: float | None = None
    """On the binding's scale (0 to 1 for the prebuilt scorers)."""
    label: str | None = Field(default=None, max_length=50)
    comment: str | None = Field(default=None, sa_column=Column(Text))
    author: str = Field(default="", max_length=200)
    source: str = Field(max_length=10)
    """``api`` or ``otlp``."""
    created_at: datetime


class FeedbackScanRow(SQLModel, table=True):
    """How far the OTLP feedback scan has read the traces table, in its (last_seen, trace_id)
    order: shared by every instance, so a restart goes on where the last one stopped."""

    __tablename__ = "feedback_scan"

    name: str = Field(primary_key=True, max_length=50)
    last_seen: float = Field(sa_column=Column(Float, nullable=False))
    trace_id: str = Field(max_length=32)


FEEDBACK = table_of(FeedbackRow)
SCAN = table_of(FeedbackScanRow)
_SCAN_NAME = "otlp"
_FIT = ColumnFit(FEEDBACK, produced_here=("id", "source"))
"""Feedback columns made storable: a client writes the others (over the API or OTLP)."""


@dataclass(frozen=True, slots=True)
class Feedback:
    """One verdict as recorded; ``id`` follows from the other fields."""

    trace_id: str
    name: str
    source: FeedbackSource
    created_at: datetime
    span_id: str | None = None
    value: float | None = None
    label: str | None = None
    comment: str | None = None
    author: str = ""

    @property
    def id(self) -> str:
        return feedback_id(self.trace_id, self.span_id, self.name, self.author)

    def row(self) -> dict[str, Any]:
        return {**asdict(self), "id": self.id}


@dataclass(frozen=True, slots=True)
class ScoredFeedback:
    """A score and a human verdict on the same run and binding: one calibration pair."""

    trace_id: str
    span_id: str
    binding: str
    score: float
    scorer_version: str
    judge_model: str | None
    agent: str | None
    model: str | None
    service: str | None
    value: float | None
    label: str | None


def _row_json(row: Any) -> dict[str, Any]:
    found = dict(row._mapping)
    found["created_at"] = as_utc(found["created_at"]).isoformat()
    return found


TriggersOf = Callable[[Sequence["Feedback"]], list[NewTrigger]]
"""The judging a set of verdicts triggers (:mod:`tracescore.pipeline.feedback_triggers`)."""


class FeedbackStore:
    """Feedback reads and writes; writes go through the span store's write transaction, which
    on SQLite queues behind ingest instead of racing it into "database is locked".

    With ``triggers``, the judging a negative verdict triggers is stored in the verdict's own
    transaction (:mod:`tracescore.store.feedback_triggers`): acknowledged, it is not lost."""

    def __init__(self, store: SpanStore, triggers: TriggersOf | None = None) -> None:
        self.store = store
        self.engine = store.engine
        self.triggers = triggers

    def record(self, items: Sequence[Feedback]) -> list[str]:
        """Store ``items`` (an existing verdict of the same key is replaced if not newer);
        returns their ids."""
        if not items:
            return []
        with self.store.write_transaction() as connection:
            self.write(connection, list({item.id: item for item in items}.values()))
        return [item.id for item in items]

    def write(self, connection: Connection, items: Sequence[Feedback]) -> None:
        """Upsert ``items`` (distinct ids) and store the judging they trigger, in ``connection``'s
        transaction."""
        self.upsert(connection, [item.row() for item in items])
        if self.triggers is not None:
            add_triggers(connection, self.triggers(items), datetime.now(UTC))

    @staticmethod
    def upsert(connection: Connection, rows: list[dict[str, Any]]) -> None:
        """Upsert ``rows``, made storable first (:class:`~tracescore.store.text.ColumnFit`): a
        verdict's comment with a NUL, sent over OTLP, failed every look of the feedback scan on
        PostgreSQL, which then never got past it to the verdicts behind."""
        guard = TextGuard()
        rows = [_FIT.row(row, guard) for row in rows]
        if guard.replaced:
            metrics.text_values_replaced("feedback", guard.replaced)
        statement = dialect_insert(connection)(FEEDBACK)
        updated = ("value", "label", "comment", "source", "created_at")
        statement = statement.on_conflict_do_update(
            index_elements=["id"],
            set_={column: statement.excluded[column] for column in updated},
            where=FEEDBACK.c.created_at <= statement.excluded.created_at,
        )
        connection.execute(statement, rows)

    def delete(self, item_id: str) -> bool:
        with self.store.write_transaction() as connection:
            return bool(
                connection.execute(delete(FEEDBACK).where(FEEDBACK.c.id == item_id)).rowcount
            )

    def find(
        self,
        *,
        trace_id: str | None = None,
        name: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
        after: tuple[datetime, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Newest first; ``after`` (a row's ``created_at`` and ``id``) starts after that row, so
        a reader pages with neither gaps nor repeats while verdicts keep arriving."""
        query = select(FEEDBACK).order_by(FEEDBACK.c.created_at.desc(), FEEDBACK.c.id).limit(limit)
        if after is not None:
            moment, row_id = after
            query = query.where(
                or_(
                    FEEDBACK.c.created_at < moment,
                    and_(FEEDBACK.c.created_at == moment, FEEDBACK.c.id > row_id),
                )
            )
        if trace_id is not None:
            query = query.where(FEEDBACK.c.trace_id == trace_id)
        if name is not None:
            query = query.where(FEEDBACK.c.name == name)
        if since is not None:
            query = query.where(FEEDBACK.c.created_at >= since)
        with self.engine.connect() as connection:
            return [_row_json(row) for row in connection.execute(query)]

    def scan_cursor(self, connection: Connection) -> tuple[float, str]:
        row = connection.execute(select(SCAN).where(SCAN.c.name == _SCAN_NAME)).first()
        return (0.0, "") if row is None else (row.last_seen, row.trace_id)

    def save_scan_cursor(self, connection: Connection, last_seen: float, trace_id: str) -> None:
        """Move the cursor forward (never back, should two instances scan at once)."""
        statement = dialect_insert(connection)(SCAN).values(
            name=_SCAN_NAME, last_seen=last_seen, trace_id=trace_id
        )
        statement = statement.on_conflict_do_update(
            index_elements=["name"],
            set_={"last_seen": last_seen, "trace_id": trace_id},
            where=or_(
                SCAN.c.last_seen < last_seen,
                and_(SCAN.c.last_seen == last_seen, SCAN.c.trace_id < trace_id),
            ),
        )
        connection.execute(statement)


def scored_feedback(
    connection: Connection,
    binding: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    where: Mapping[str, str] | None = None,
) -> list[ScoredFeedback]:
    """Every ``ok`` score of ``binding`` made in [since, until) whose run has feedback under the
    binding's name (feedback without a span pairs with each scored run of its trace). The
    period is the scores': what the judge said then, whenever people said what they think.
    ``where`` narrows by score columns (``scorer_version``, ``agent``, ...)."""
    condition = [
        FEEDBACK.c.name
        == binding,  # said outright, so the planner starts from the (fewer) verdicts
        SCORES.c.binding == binding,
        SCORES.c.status == "ok",
        SCORES.c.score.is_not(None),
    ]
    condition += [SCORES.c[column] == value for column, value in (where or {}).items()]
    if since is not None:
        condition.append(SCORES.c.created_at >= since)
    if until is not None:
        condition.append(SCORES.c.created_at < until)
    query = (
        select(
            SCORES.c.trace_id,
            SCORES.c.span_id,
            SCORES.c.binding,
            SCORES.c.score,
            SCORES.c.scorer_version,
            SCORES.c.judge_model,
            SCORES.c.agent,
            SCORES.c.model,
            SCORES.c.service,
            FEEDBACK.c.value,
            FEEDBACK.c.label,
        )
        .join(
            FEEDBACK,
            and_(
                FEEDBACK.c.trace_id == hex_text(SCORES.c.trace_id),
                FEEDBACK.c.name == SCORES.c.binding,
                or_(FEEDBACK.c.span_id.is_(None), FEEDBACK.c.span_id == hex_text(SCORES.c.span_id)),
            ),
        )
        .where(*condition)
        .order_by(SCORES.c.trace_id, SCORES.c.span_id, FEEDBACK.c.id)
    )
    return [ScoredFeedback(**row._mapping) for row in connection.execute(query)]


# --- feedback/ (export, review queue) ------------------------------------------------------


class GroundTruth(TypedDict):
    """A verdict as an export of scored runs carries it (``groundTruth``)."""

    value: float | None
    label: str | None
    comment: str | None
    author: str


def latest_verdicts(
    database: Engine, name: str, trace_ids: Sequence[str]
) -> dict[tuple[str, str | None], GroundTruth]:
    """The latest feedback per (trace, span) under ``name``; span None: the whole trace."""
    query = (
        select(FEEDBACK)
        .where(FEEDBACK.c.name == name, FEEDBACK.c.trace_id.in_(trace_ids))
        .order_by(FEEDBACK.c.created_at)
    )
    with database.connect() as connection:
        return {
            (row.trace_id, row.span_id): GroundTruth(
                value=row.value, label=row.label, comment=row.comment, author=row.author
            )
            for row in connection.execute(query)
        }


_CHUNK = 500
"""Trace ids per ``IN`` list."""


def reviewed(connection: Connection, trace_ids: Sequence[str]) -> set[tuple[str, str | None, str]]:
    """(trace, span or None, name) of the feedback on ``trace_ids``."""
    ids = sorted(set(trace_ids))
    found: set[tuple[str, str | None, str]] = set()
    for start in range(0, len(ids), _CHUNK):
        query = select(FEEDBACK.c.trace_id, FEEDBACK.c.span_id, FEEDBACK.c.name).where(
            FEEDBACK.c.trace_id.in_(ids[start : start + _CHUNK])
        )
        found.update((row.trace_id, row.span_id, row.name) for row in connection.execute(query))
    return found


# --- insights/ (failure modes) -----------------------------------------------------------


class NegativeVerdict(TypedDict):
    """A human verdict that a run failed, as the failure-mode grouping reads it."""

    trace_id: str
    span_id: str | None
    name: str
    value: float | None
    label: str | None
    comment: str | None
    created_at: datetime


def negative_verdicts(
    connection: Connection,
    since: datetime,
    until: datetime,
    labels: Sequence[str],
    below: float | None,
) -> Iterator[NegativeVerdict]:
    """The window's feedback whose label is one of ``labels`` or whose value is below
    ``below``, streamed oldest first."""
    negative: list[ColumnElement[bool]] = [FEEDBACK.c.label.in_(list(labels))] if labels else []
    if below is not None:
        negative.append(FEEDBACK.c.value < below)
    if not negative:
        return
    query = (
        select(*(FEEDBACK.c[name] for name in NegativeVerdict.__annotations__))
        .where(FEEDBACK.c.created_at >= since, FEEDBACK.c.created_at < until, or_(*negative))
        .order_by(FEEDBACK.c.created_at, FEEDBACK.c.id)
        .execution_options(yield_per=2000)
    )
    for row in connection.execute(query):
        yield cast(NegativeVerdict, {**row._mapping, "created_at": as_utc(row.created_at)})


# --- retention/prune ---------------------------------------------------------------------------

FEEDBACK_BY_AGE = AgedRows(FEEDBACK, ("id",), "created_at")
