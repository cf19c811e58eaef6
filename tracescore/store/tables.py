"""The collector's tables, declared with SQLModel so every stage's tables share one metadata.

Rows are written with SQLAlchemy Core executemany (see :mod:`tracescore.store.spanstore`), never
as ORM objects: the classes here are the schema, not the hot path. Events, links, log
attributes and bodies are typed JSON text (:mod:`tracescore.store.codec`); a span's attribute
map, most of its bytes, is that text compressed (:mod:`tracescore.store.packed`). Trace, span
and record ids and the resource and scope hashes are stored as their bytes
(:class:`~tracescore.store.column_types.HexId`): as hex text they took twice the room in every
row and index holding them; spans and logs name their resource and scope by the integer id of
its row. Timestamps from OTLP are nanoseconds since the epoch and need
64-bit integers; times the collector itself records (``first_seen``, leases, ...) are float
seconds since the epoch.
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    SmallInteger,
    Text,
    event,
    text,
)
from sqlmodel import Field, SQLModel

from tracescore.store.column_types import HexId
from tracescore.store.leased_queue import SETTLED
from tracescore.store.table_of import table_of


def _ns(nullable: bool = False) -> Column[int]:
    return Column(BigInteger, nullable=nullable)


def _id(*, primary_key: bool = False, nullable: bool = False) -> Column[str]:
    """A hex id column, stored as bytes."""
    return Column(HexId(), primary_key=primary_key, nullable=nullable and not primary_key)


def _counter(nullable: bool = False) -> Column[int]:
    """A trace's count or write generation: 4 bytes on PostgreSQL, where each of the row's
    versions (four as it goes through the queue) carried five 8-byte ones; on SQLite an integer
    takes the bytes its value needs whatever its declared type, which stays as it was."""
    return Column(BigInteger().with_variant(Integer(), "postgresql"), nullable=nullable)


def _flags() -> Column[int]:
    """A span's flags, OTLP's ``fixed32``, as the signed 32-bit integer of the same bits (the
    span store converts both ways): 4 bytes on PostgreSQL, where 8 cost a four-span trace 31
    bytes: the counters' column (:func:`_counter`)."""
    return _counter()


def _small() -> Column[int]:
    """A small enumerated value (a span's kind, its status code): 2 bytes on PostgreSQL, an
    ``INTEGER`` on SQLite as every integer column there."""
    return Column(Integer().with_variant(SmallInteger(), "postgresql"), nullable=False)


def _ref() -> Column[int]:
    """A span's or log record's resource or scope: the small integer id of its row."""
    return Column(Integer, nullable=False)


class ResourceRow(SQLModel, table=True):
    """One distinct resource (attribute set), shared by all spans and logs that name it.

    Spans and logs refer to it by ``id``, an integer of a byte or two in a SQLite row (4 on
    PostgreSQL), where the 16-byte hash took 32 bytes of every span row for its two references.
    """

    __tablename__ = "resources"
    __table_args__ = (Index("ux_resources_hash", "hash", unique=True),)

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    """Hash of the encoded attributes, so identical resources from any request share a row."""
    attributes: str = Field(sa_type=Text)


class ScopeRow(SQLModel, table=True):
    __tablename__ = "scopes"
    __table_args__ = (Index("ux_scopes_hash", "hash", unique=True),)

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    """Hash of the name, version and encoded attributes (as :class:`ResourceRow`'s)."""
    name: str = Field(sa_type=Text)
    version: str = Field(sa_type=Text)
    attributes: str = Field(sa_type=Text)


class SpanRow(SQLModel, table=True):
    """One span, keyed by its trace and span ids. On SQLite the table is that key's B-tree
    itself (``WITHOUT ROWID``): a rowid table kept the key a second time, in its own index.

    The columns are ordered for PostgreSQL, which aligns each fixed-width value to its size:
    8-byte integers first, then 4-byte, then 2-byte, then the variable-width ones (which need no
    alignment while short), so no row pads between them; the key and the text and bytes declared
    first had cost 9 bytes of padding a row. Kind and status code are 2-byte there (they take
    values below 10); SQLite stores any integer in the bytes its value needs, whatever its
    column's order or declared type."""

    __tablename__ = "spans"
    # SQLite: the table is the (trace id, span id) key's B-tree. PostgreSQL: a heap with an
    # index of the trace id alone, which holds each trace's spans as one entry (a B-tree keeps
    # equal keys as one key and a list of rows): 91 bytes a four-span trace where the unique
    # key took 252. Spans already stored are skipped by the insert itself
    # (:mod:`tracescore.store.span_insert`) rather than by a conflict on that key.
    __table_args__ = (
        PrimaryKeyConstraint("trace_id", "span_id").ddl_if(dialect="sqlite"),
        Index("ix_spans_trace", "trace_id").ddl_if(dialect="postgresql"),
        {"sqlite_with_rowid": False},
    )

    start_time_ns: int = Field(sa_column=_ns())
    duration_ns: int = Field(sa_column=_ns())
    """The end time less the start time: a few bytes in a SQLite row where the end time took
    eight (SQLite stores an integer in as few bytes as its value needs)."""
    flags: int = Field(sa_column=_flags())
    resource_id: int = Field(sa_column=_ref())
    """The service's name is its resource's ``service.name``, not a column of each span."""
    scope_id: int = Field(sa_column=_ref())
    kind: int = Field(sa_column=_small())
    status_code: int = Field(sa_column=_small())
    trace_id: str = Field(sa_column=_id(primary_key=True))
    span_id: str = Field(sa_column=_id(primary_key=True))
    parent_span_id: str | None = Field(default=None, sa_column=_id(nullable=True))
    name: str = Field(sa_type=Text)
    status_message: str = Field(sa_type=Text)
    trace_state: str = Field(sa_type=Text)
    attributes: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    """The typed JSON attribute map, packed (:mod:`tracescore.store.packed`)."""
    events: str | None = Field(default=None, sa_type=Text)
    """Kept as typed JSON text: rare, and the feedback scan finds verdicts in it with LIKE."""
    links: str | None = Field(default=None, sa_type=Text)


def _serial() -> Column[int]:
    """An auto-numbered 64-bit key (SQLite only auto-numbers a column declared exactly INTEGER
    PRIMARY KEY)."""
    return Column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )


class JournalRow(SQLModel, table=True):
    """An acknowledged OTLP/protobuf export request whose records are not yet in the tables.

    The collector acknowledges a protobuf request once its body is committed here, which takes
    a few milliseconds; decoding it into span and log rows (tens of milliseconds per thousand
    spans) happens after, and deletes the row in the same transaction as the insert.
    """

    __tablename__ = "ingest_journal"
    __table_args__ = (Index("ix_ingest_journal_owner", "owner", "seq"),)

    seq: int | None = Field(default=None, sa_column=_serial())
    received_at: float
    signal: str = Field(max_length=8)
    """``traces`` or ``logs``."""
    owner: str = Field(max_length=32)
    """The collector process that took the request; its unpacker takes its own rows first."""
    size: int
    """Bytes in ``body``: the backlog the collector pushes back on."""
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    failed: str | None = Field(default=None, sa_type=Text)
    """Why unpacking failed (a bug, since the request was checked before the ack); such a row
    is kept for inspection and no longer holds back readiness or reads."""


# Request bodies are protobuf, which PostgreSQL's TOAST compression barely shrinks, at a cost of
# ~10 ms of server CPU per megabyte: store them as they are.
event.listen(
    table_of(JournalRow),
    "after_create",
    DDL("ALTER TABLE ingest_journal ALTER COLUMN body SET STORAGE EXTERNAL").execute_if(
        dialect="postgresql"
    ),
)


class ConsumedRow(SQLModel, table=True):
    """A spooled journal entry (SQLite) stored as rows, until its file is deleted: the record
    that makes a second unpacking of it, after a crash between the two, a no-op."""

    __tablename__ = "ingest_consumed"

    seq: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    owner: str = Field(primary_key=True, max_length=32)


class UnpackerRow(SQLModel, table=True):
    """A live journal unpacker: entries of a collector whose unpacker stopped beating are
    adopted by the others, and only those (adopting a live one's would decode them twice)."""

    __tablename__ = "ingest_unpackers"

    owner: str = Field(primary_key=True, max_length=32)
    heartbeat: float


class LogRow(SQLModel, table=True):
    __tablename__ = "logs"
    __table_args__ = (
        # By trace, and covering the event name: ingest counts a trace's records less its evaluation
        # records (store/trace_queue.py) from the index alone.
        Index("ix_logs_trace_event", "trace_id", "event_name"),
        Index("ux_logs_record_hash", "record_hash", unique=True),
        Index("ix_logs_time", "time_ns"),  # retention prunes the oldest records first
    )

    id: int | None = Field(default=None, sa_column=_serial())
    record_hash: str = Field(sa_column=_id())
    """Hash of the whole record: an exporter's retry of a stored record is not stored twice."""
    trace_id: str | None = Field(default=None, sa_column=_id(nullable=True))
    span_id: str | None = Field(default=None, sa_column=_id(nullable=True))
    time_ns: int = Field(sa_column=_ns())
    observed_time_ns: int = Field(sa_column=_ns())
    event_name: str = Field(sa_type=Text)
    severity_number: int
    severity_text: str = Field(sa_type=Text)
    body: str | None = Field(default=None, sa_type=Text)
    attributes: str = Field(sa_type=Text)
    flags: int = Field(sa_column=_ns())
    resource_id: int = Field(sa_column=_ref())
    scope_id: int = Field(sa_column=_ref())


def _in_state(name: str, column: str, state: str) -> tuple[Index, Index]:
    """An index of the traces in one state only. Its reads must spell ``state = '<state>'``
    in their SQL: SQLite uses a partial index only for a query holding its very condition, and
    prefers it to ``ix_traces_state_end`` only with ``state`` leading it as well. PostgreSQL's
    keys ``column`` alone: ``state`` is the same in every entry, and each of a trace's versions
    in the state wrote those bytes again (8 a pending trace's entry, padded; 25 bytes a trace in
    all after the capacity benchmark)."""
    where = text(f"state = '{state}'")
    return (
        Index(name, "state", column, sqlite_where=where).ddl_if(dialect="sqlite"),
        Index(name, column, postgresql_where=where).ddl_if(dialect="postgresql"),
    )


_SETTLED = ", ".join(f"'{state}'" for state in SETTLED)
"""The states retention reads by end time, as SQL: on PostgreSQL ``ix_traces_state_end`` and
``ix_traces_last_seen`` hold traces in these only. There every change of a trace's state writes
a new version of its row, with an entry in every index whose condition the version meets: an index of all states kept an entry of
each of a trace's four versions (pending, ready, claimed, scored) until the queue vacuum came by,
33 bytes a trace after the capacity benchmark. SQLite updates a row in place and keeps it whole.
"""


class TraceRow(SQLModel, table=True):
    """Assembly state of one trace, updated in the same transaction as its spans' insert.

    ``generation`` grows with every write that touches the trace (spans or logs); a claim
    remembers it, so completing a claim can tell whether anything arrived meanwhile.
    """

    __tablename__ = "traces"
    # Promotion looks up pending traces by last_seen and by pending_since; claims look up ready
    # ones, and claimed ones whose lease expired, in last_seen order: each of those reads names
    # its state, so each index holds the traces in that state only (nearly every trace is
    # scored, and a full index of them cost 54 bytes a trace). The read API and the feedback
    # scan list by last_seen (on PostgreSQL ``ix_traces_last_seen`` holds the settled states
    # only, and the lists read the others from their own indexes: ``store/traces.py``);
    # retention finds scored traces whose last span ended before its cut (and, later, the pruned ones) by end_time_ns; the backlog gauges count by state,
    # each from the index of that state.
    __table_args__ = (
        *_in_state("ix_traces_pending_last_seen", "last_seen", "pending"),
        *_in_state("ix_traces_pending_since", "pending_since", "pending"),
        *_in_state("ix_traces_ready_last_seen", "last_seen", "ready"),
        *_in_state("ix_traces_claimed_last_seen", "last_seen", "claimed"),
        Index("ix_traces_last_seen", "last_seen", postgresql_where=text(f"state IN ({_SETTLED})")),
        Index(
            "ix_traces_state_end",
            "state",
            "end_time_ns",
            postgresql_where=text(f"state IN ({_SETTLED})"),
        ),
    )

    trace_id: str = Field(sa_column=_id(primary_key=True))
    service_name: str = Field(sa_type=Text)
    root_name: str = Field(sa_type=Text)
    has_root: bool
    span_count: int = Field(sa_column=_counter())
    log_count: int = Field(sa_column=_counter())
    generation: int = Field(sa_column=_counter())
    start_time_ns: int | None = Field(default=None, sa_column=_ns(nullable=True))
    end_time_ns: int | None = Field(default=None, sa_column=_ns(nullable=True))
    first_seen: float
    last_seen: float
    pending_since: float
    """When the trace last became pending (first span, or a late span after scoring)."""
    state: str = Field(max_length=16)
    claimed_generation: int | None = Field(default=None, sa_column=_counter(nullable=True))
    scored_generation: int | None = Field(default=None, sa_column=_counter(nullable=True))
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_type=Text)


class TraceLeaseRow(SQLModel, table=True):
    """The lease of a claimed trace: who holds it, until when, and the claim's token, which
    completing the claim must show (:mod:`tracescore.store.leased_queue`). A row only while the
    trace is claimed; in the trace's row, claiming and completing grew and shrank it."""

    __tablename__ = "trace_leases"
    __table_args__ = {"sqlite_with_rowid": False}

    trace_id: str = Field(sa_column=_id(primary_key=True))
    token: str = Field(max_length=32)
    owner: str = Field(sa_type=Text)
    expires: float
