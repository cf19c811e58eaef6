"""Failure modes: the groups an insights pass found among failed runs, and their members.

``failure_groups`` holds one row per group ever found, under an id kept from pass to pass
(the pass matches a new group to a stored one by its terms and members, see
:mod:`tracescore.insights.tracking`), so a group's first sighting and its size at the pass
before the latest say whether it is new and whether it grows. ``failure_memberships`` holds the
runs of the latest pass only: each pass replaces them, so the table stays as large as one
pass's sample (``insights.max_runs``) however long the service runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypedDict, cast

from sqlalchemy import JSON, Column, Index, Text, delete, or_, select, update
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from tracescore.cursors import cursor_float, cursor_int, decode_cursor, encode_cursor
from tracescore.store.aging import AgedRows
from tracescore.store.dialect import dialect_insert
from tracescore.store.table_of import table_of


class FailureGroupRow(SQLModel, table=True):
    """A failure mode: its name, what identifies it, and its size at the last two passes."""

    __tablename__ = "failure_groups"
    __table_args__ = (Index("ix_failure_groups_last_seen", "last_seen"),)

    id: str = Field(primary_key=True, max_length=32)
    name: str = Field(max_length=200)
    description: str = Field(default="", sa_column=Column(Text))
    named_by: str = Field(max_length=20)
    """``terms`` (its distinctive terms) or ``judge``."""
    terms: dict[str, float] = Field(sa_column=Column(JSON))
    """Its centroid: the heaviest terms of its runs and their weights, matched across passes."""
    first_seen: float
    """The pass (epoch seconds) that found it first."""
    last_seen: float
    """The latest pass that found it."""
    size: int
    """Its runs at ``last_seen``'s pass."""
    previous_size: int
    """Its runs at the pass before (0 for a group that pass did not find)."""
    share: float
    """Its part of the latest pass's failed runs."""
    details: dict[str, Any] = Field(sa_column=Column(JSON))
    """What the pages show: agents, models, scorers, trend buckets, example runs."""


class FailureMembershipRow(SQLModel, table=True):
    """One failed run of the latest pass and the group it fell in."""

    __tablename__ = "failure_memberships"
    __table_args__ = (Index("ix_failure_memberships_group", "group_id", "failed_at"),)

    group_id: str = Field(primary_key=True, max_length=32)
    trace_id: str = Field(primary_key=True, max_length=32)
    span_id: str = Field(primary_key=True, max_length=16)
    failed_at: float
    agent: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=200)
    flagged_by: list[str] = Field(sa_column=Column(JSON))
    """The scorers (or ``feedback:<name>``) that marked the run failed."""
    summary: str = Field(default="", sa_column=Column(Text))
    """A line of what the run asked and what went wrong, for the group's page."""
    started_at: float | None = None
    """When the run itself started (``failed_at`` is its latest failing verdict's time)."""
    answer: str | None = Field(default=None, sa_column=Column(Text))
    """The failing answer, its start."""
    reasons: list[str] | None = Field(default=None, sa_column=Column(JSON))
    """What the scorers that failed it said."""


class FailedRunTextRow(SQLModel, table=True):
    """What a failed run's trace said, as a pass reads it: kept so that the next passes over
    overlapping windows read it here instead of rebuilding the run from its spans, which is
    most of a first pass's time. Rows older than a pass's window are pruned by that pass."""

    __tablename__ = "failure_run_texts"
    __table_args__ = (Index("ix_failure_run_texts_failed_at", "failed_at"),)

    trace_id: str = Field(primary_key=True, max_length=32)
    span_id: str = Field(primary_key=True, max_length=16)
    failed_at: float
    agent: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=200)
    request: str = Field(default="", sa_column=Column(Text))
    answer: str = Field(default="", sa_column=Column(Text))
    error: str = Field(default="", sa_column=Column(Text))
    tools: list[str] = Field(sa_column=Column(JSON))
    signals: list[str] | None = Field(default=None, sa_column=Column(JSON))
    """What the trace showed beyond this text (see :func:`tracescore.insights.runs.trace_signals`)."""
    started_at: float | None = None


GROUPS = table_of(FailureGroupRow)
MEMBERSHIPS = table_of(FailureMembershipRow)
TEXTS = table_of(FailedRunTextRow)
GONE_GROUPS_BY_AGE = AgedRows(GROUPS, ("id",), "last_seen", also=lambda table, _: table.c.size == 0)
"""Retention of failure modes: those no pass has found since the cut (size 0: the latest
pass's groups and their runs stay however old that pass is)."""
RUN_TEXTS_BY_AGE = AgedRows(TEXTS, ("trace_id", "span_id"), "failed_at")
"""Retention of the runs' texts (a pass drops those older than its window; with passes off,
only retention does)."""


class FailureGroup(TypedDict):
    id: str
    name: str
    description: str
    named_by: str
    terms: dict[str, float]
    first_seen: float
    last_seen: float
    size: int
    previous_size: int
    share: float
    details: dict[str, Any]


class Membership(TypedDict):
    group_id: str
    trace_id: str
    span_id: str
    failed_at: float
    agent: str | None
    model: str | None
    flagged_by: list[str]
    summary: str
    started_at: float | None
    answer: str | None
    reasons: list[str] | None


class RunText(TypedDict):
    trace_id: str
    span_id: str
    failed_at: float
    agent: str | None
    model: str | None
    request: str
    answer: str
    error: str
    tools: list[str]
    signals: list[str] | None
    started_at: float | None


_CHUNK = 500
"""Rows per insert statement, keys per ``IN`` list."""


def run_texts(connection: Connection, keys: Sequence[tuple[str, str]]) -> list[RunText]:
    """The stored texts of the runs ``keys`` (trace, span) that have some."""
    by_trace: dict[str, set[str]] = {}
    for trace_id, span_id in keys:
        by_trace.setdefault(trace_id, set()).add(span_id)
    traces = sorted(by_trace)
    found: list[RunText] = []
    for start in range(0, len(traces), _CHUNK):
        query = select(TEXTS).where(TEXTS.c.trace_id.in_(traces[start : start + _CHUNK]))
        rows = connection.execute(query)
        names = tuple(rows.keys())  # a row's own mapping makes its keys anew: 20 µs a row
        found.extend(
            cast(RunText, dict(zip(names, row, strict=True)))
            for row in rows
            if row.span_id in by_trace[row.trace_id]
        )
    return found


def keep_run_texts(connection: Connection, texts: Iterable[RunText], before: float) -> None:
    """Store ``texts`` (a run's stored text is never rewritten: its trace was scored, so
    settled) and drop those of runs that failed before ``before``. Taken :data:`_CHUNK` at a
    time: a pass's 20,000 texts made at once were 20 MB of its peak."""
    connection.execute(delete(TEXTS).where(TEXTS.c.failed_at < before))
    # One statement run over many parameter sets (compiled once), not a multi-row VALUES:
    # compiling 500 rows' VALUES took longer than inserting them (7 s of 20,000 runs' 10).
    insert = dialect_insert(connection)(TEXTS).on_conflict_do_nothing(
        index_elements=["trace_id", "span_id"]
    )
    for rows in _chunks(texts):
        connection.execute(insert, rows)


def _chunks(rows: Iterable[Mapping[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """``rows`` as lists of at most :data:`_CHUNK` dicts, each made as its list is sent."""
    taken = iter(rows)
    while chunk := [dict(row) for row in itertools.islice(taken, _CHUNK)]:
        yield chunk


def save_pass(
    connection: Connection,
    groups: Sequence[FailureGroup],
    memberships: Sequence[Membership],
) -> None:
    """Record a pass: its groups upserted (a stored group keeps its ``first_seen``;
    its size moves to ``previous_size``), groups it did not find shrink to 0, and its runs
    replace the previous pass's."""
    found = [group["id"] for group in groups]
    missing = GROUPS.c.id.not_in(found) if found else GROUPS.c.id.is_not(None)
    connection.execute(
        update(GROUPS)
        .where(missing, or_(GROUPS.c.size > 0, GROUPS.c.previous_size > 0))
        .values(previous_size=GROUPS.c.size, size=0, share=0.0)
    )
    for group in groups:
        insert = dialect_insert(connection)(GROUPS).values(**group)
        kept = {name: insert.excluded[name] for name in group if name not in ("id", "first_seen")}
        kept["previous_size"] = GROUPS.c.size
        connection.execute(insert.on_conflict_do_update(index_elements=["id"], set_=kept))
    connection.execute(delete(MEMBERSHIPS))
    for rows in _chunks(memberships):
        connection.execute(MEMBERSHIPS.insert(), rows)


def _group(row: Any) -> FailureGroup:
    return cast(FailureGroup, dict(row._mapping))


def current_groups(connection: Connection) -> list[FailureGroup]:
    """The groups the latest pass found, largest first: what a new pass is matched against
    and what the alert rules watch."""
    query = select(GROUPS).where(GROUPS.c.size > 0).order_by(GROUPS.c.size.desc(), GROUPS.c.id)
    return [_group(row) for row in connection.execute(query)]


def known_groups(connection: Connection, limit: int) -> list[FailureGroup]:
    """The ``limit`` groups seen last (a pass matches its groups against these, so a mode that
    went quiet for a pass keeps its id when it comes back)."""
    query = select(GROUPS).order_by(GROUPS.c.last_seen.desc(), GROUPS.c.id).limit(limit)
    return [_group(row) for row in connection.execute(query)]


def list_groups(
    connection: Connection, limit: int, cursor: str | None, include_gone: bool = False
) -> tuple[list[FailureGroup], str | None]:
    """A page of groups, largest first (then by id), and the cursor of the next page;
    ValueError for a cursor this function did not give."""
    query = select(GROUPS).order_by(GROUPS.c.size.desc(), GROUPS.c.id)
    if not include_gone:
        query = query.where(GROUPS.c.size > 0)
    if cursor is not None:
        size_text, last_id = decode_cursor(cursor, 2)
        size = cursor_int(size_text)
        query = query.where(
            or_(GROUPS.c.size < size, (GROUPS.c.size == size) & (GROUPS.c.id > last_id))
        )
    rows = [_group(row) for row in connection.execute(query.limit(limit + 1))]
    page = rows[:limit]
    more = len(rows) > limit
    return page, encode_cursor(str(page[-1]["size"]), page[-1]["id"]) if more else None


def failure_group(connection: Connection, group_id: str) -> FailureGroup | None:
    row = connection.execute(select(GROUPS).where(GROUPS.c.id == group_id)).first()
    return None if row is None else _group(row)


def group_runs(
    connection: Connection, group_id: str, limit: int, cursor: str | None
) -> tuple[list[Membership], str | None]:
    """A page of a group's runs, latest failure first, and the next page's cursor."""
    m = MEMBERSHIPS.c
    query = (
        select(MEMBERSHIPS)
        .where(m.group_id == group_id)
        .order_by(m.failed_at.desc(), m.trace_id, m.span_id)
    )
    if cursor is not None:
        at_text, trace_id, span_id = decode_cursor(cursor, 3)
        at = cursor_float(at_text)
        query = query.where(
            or_(
                m.failed_at < at,
                (m.failed_at == at) & (m.trace_id > trace_id),
                (m.failed_at == at) & (m.trace_id == trace_id) & (m.span_id > span_id),
            )
        )
    rows = [
        cast(Membership, dict(row._mapping)) for row in connection.execute(query.limit(limit + 1))
    ]
    page = rows[:limit]
    if len(rows) <= limit:
        return page, None
    last = page[-1]
    return page, encode_cursor(repr(last["failed_at"]), last["trace_id"], last["span_id"])


def runs_by_group(connection: Connection) -> dict[str, set[tuple[str, str]]]:
    """The latest pass's runs (trace, span) of each group: what a new pass's groups are
    matched against by overlap."""
    m = MEMBERSHIPS.c
    found: dict[str, set[tuple[str, str]]] = {}
    for row in connection.execute(select(m.group_id, m.trace_id, m.span_id)):
        found.setdefault(row.group_id, set()).add((row.trace_id, row.span_id))
    return found
