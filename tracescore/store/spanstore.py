"""The durable span store: batched writes, trace loading, summaries and assembly claims.

Writes go to the driver as tuples (``executemany`` on SQLite, ``COPY`` on PostgreSQL, see
:mod:`tracescore.store.bulk`), one transaction per export request: building ORM objects
(``add_all``) manages only ~7k rows/s, and even SQLAlchemy Core's per-row dict processing costs
more than the encoding itself, so the rows are built here as the driver stores them: ids as
bytes (the tables' :class:`~tracescore.store.column_types.HexId`, which the reads turn back into
hex), a span's attribute map packed (:mod:`tracescore.store.packed`). Resources and scopes are
stored once per distinct attribute set (found by a hash), so a 1000-span request writes one
resource row, not a thousand copies; spans and logs refer to it by its row's integer id
(:class:`_RefIds`), and keep a span's duration rather than its end time.

Over 400 lines and kept whole: it is the one owner of the span, log, resource and scope tables,
and each read here (``_span_from_row``, ``_log_from_row``) is the inverse of a row built here
for a write (``_span_row``, ``_log_row``), which must change together.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Integer,
    Select,
    Table,
    and_,
    bindparam,
    func,
    or_,
    select,
    text,
)
from sqlalchemy.sql.elements import BindParameter

from tracescore.spans import LogRecord, Resource, Scope, Span, SpanEvent, SpanLink, Trace
from tracescore.store import codec, packed
from tracescore.store.bulk import bulk_insert
from tracescore.store.dialect import dialect_insert
from tracescore.store.engine import CACHE_PRAGMA, SCAN_CACHE_PRAGMA
from tracescore.store.ingest_journal import IngestJournal
from tracescore.store.journal import JournalEntry
from tracescore.store.span_insert import new_spans_insert
from tracescore.store.table_of import table_of
from tracescore.store.tables import LogRow, ResourceRow, ScopeRow, SpanRow, TraceRow
from tracescore.store.text import TextGuard
from tracescore.store.trace_cut import ReadLimit, TraceCut
from tracescore.store.trace_queue import ReadinessRules, TraceQueue, touch_traces
from tracescore.store.traces import in_last_seen_order
from tracescore.store.writelock import SqliteWriteLock


@dataclass(frozen=True, slots=True)
class TraceSummary:
    """One line of the trace list: what the read API and the dashboard show per trace."""

    trace_id: str
    service_name: str
    root_name: str
    has_root: bool
    span_count: int
    log_count: int
    state: str
    start_time_ns: int | None
    end_time_ns: int | None
    first_seen: float
    last_seen: float
    generation: int
    scored_generation: int | None
    last_error: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SPANS, _LOGS, _TRACES = table_of(SpanRow), table_of(LogRow), table_of(TraceRow)
_RESOURCES, _SCOPES = table_of(ResourceRow), table_of(ScopeRow)
_SUMMARY_COLUMNS = [_TRACES.c[name] for name in TraceSummary.__slots__]


def _id_hash(*parts: str) -> bytes:
    return hashlib.blake2b("\x00".join(parts).encode(), digest_size=16).digest()


def _id(hex_id: str) -> bytes:
    """A hex id (as :class:`~tracescore.spans.Span` holds it) as its stored bytes."""
    return bytes.fromhex(hex_id)


def _maybe_id(hex_id: str | None) -> bytes | None:
    return None if hex_id is None else bytes.fromhex(hex_id)


def _signed32(flags: int) -> int:
    """A span's flags (unsigned 32 bits) as stored: the signed integer of the same bits."""
    return flags - (1 << 32) if flags >= 1 << 31 else flags


def _unsigned32(stored: int) -> int:
    """Stored flags back as the span's: rows written before they were 4-byte hold them
    unsigned already, which this leaves as they are."""
    return stored & 0xFFFF_FFFF


class _Refs:
    """Distinct resources and scopes of one write, keyed by object identity.

    Decoding shares one ``Resource``/``Scope`` object per OTLP block, so identity lookups make
    hashing happen once per block rather than once per span. (The spans being written keep
    those objects alive, so their ids cannot be reused while the write runs.)
    """

    def __init__(self, guard: TextGuard) -> None:
        self.guard = guard
        self._resources: dict[int, bytes] = {}
        self._scopes: dict[int, bytes] = {}
        self.resource_rows: dict[bytes, tuple[bytes, str]] = {}
        self.scope_rows: dict[bytes, tuple[bytes, str, str, str]] = {}
        self.services: dict[bytes, str] = {}
        """Each resource's ``service.name``, storable, by resource id."""

    def resource(self, resource: Resource) -> bytes:
        found = self._resources.get(id(resource))
        if found is None:
            encoded = self.guard.json(resource.attributes)
            found = _id_hash(encoded)
            self._resources[id(resource)] = found
            self.resource_rows[found] = (found, encoded)
            self.services[found] = self.guard.text(resource.service_name)
        return found

    def scope(self, scope: Scope) -> bytes:
        found = self._scopes.get(id(scope))
        if found is None:
            name, version = self.guard.text(scope.name), self.guard.text(scope.version)
            encoded = self.guard.json(scope.attributes)
            found = _id_hash(name, version, encoded)
            self._scopes[id(scope)] = found
            self.scope_rows[found] = (found, name, version, encoded)
        return found


_SPAN_COLUMNS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start_time_ns",
    "duration_ns",
    "status_code",
    "status_message",
    "trace_state",
    "flags",
    "attributes",
    "events",
    "links",
    "resource_id",
    "scope_id",
)
_LOG_COLUMNS = (
    "record_hash",
    "trace_id",
    "span_id",
    "time_ns",
    "observed_time_ns",
    "event_name",
    "severity_number",
    "severity_text",
    "body",
    "attributes",
    "flags",
    "resource_id",
    "scope_id",
)


@dataclass(frozen=True, slots=True)
class _FoundRefs:
    """The row ids of one write's resources and scopes, by hash."""

    resources: dict[bytes, int]
    scopes: dict[bytes, int]

    def referring(self, rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """Span or log rows (their resource and scope hashes last) with those hashes replaced
        by the rows' ids, as they are stored."""
        resources, scopes = self.resources, self.scopes
        return [(*row[:-2], resources[row[-2]], scopes[row[-1]]) for row in rows]


class _RefIds:
    """The ids of the resource and scope rows this store has written or found, by hash.

    A write looks up only the hashes it has not met yet (after the first requests, none):
    resources and scopes are never deleted, and an id is remembered only once the write that
    stored or found it has committed, so every remembered id names a committed row.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known = _FoundRefs({}, {})

    def resolve(self, conn: Connection, refs: _Refs) -> _FoundRefs:
        """The ids of ``refs``' resources and scopes, storing those not stored yet, in
        ``conn``'s transaction."""
        with self._lock:
            known = self._known
            found = _FoundRefs(
                {h: i for h in refs.resource_rows if (i := known.resources.get(h)) is not None},
                {h: i for h in refs.scope_rows if (i := known.scopes.get(h)) is not None},
            )
        for table, rows, ids in (
            (_RESOURCES, refs.resource_rows, found.resources),
            (_SCOPES, refs.scope_rows, found.scopes),
        ):
            missing = [row for digest, row in rows.items() if digest not in ids]
            if missing:
                ids.update(_store_refs(conn, table, missing))
        return found

    def learn(self, found: _FoundRefs) -> None:
        """Remember the ids of a committed write."""
        with self._lock:
            self._known.resources.update(found.resources)
            self._known.scopes.update(found.scopes)


def _store_refs(conn: Connection, table: Table, rows: list[tuple[Any, ...]]) -> dict[bytes, int]:
    """Insert resource or scope ``rows`` (their hash first, then the table's other columns in
    order) unless stored already, and return the ids of all of them by hash. PostgreSQL's
    ``ON CONFLICT DO NOTHING`` waits for a concurrent insert of the same hash to commit, and
    the select after it, a statement of its own, then sees that row."""
    names = [column.name for column in table.columns if column.name != "id"]
    conn.execute(
        dialect_insert(conn)(table).on_conflict_do_nothing(index_elements=["hash"]),
        [dict(zip(names, row, strict=True)) for row in rows],
    )
    hashes = [row[0] for row in rows]
    return {
        bytes(digest): ref_id
        for digest, ref_id in conn.execute(
            select(table.c.hash, table.c.id).where(table.c.hash.in_(hashes))
        )
    }


def _span_row(span: Span, refs: _Refs) -> tuple[Any, ...]:
    guard = refs.guard
    events = span.events
    links = span.links
    return (
        _id(span.trace_id),
        _id(span.span_id),
        _maybe_id(span.parent_span_id),
        guard.text(span.name),
        span.kind,
        span.start_time_ns,
        span.end_time_ns - span.start_time_ns,
        span.status_code,
        guard.text(span.status_message),
        guard.text(span.trace_state),
        _signed32(span.flags),
        packed.pack(guard.json(span.attributes)),
        guard.json([[e.name, e.time_ns, e.attributes] for e in events]) if events else None,
        guard.json([[k.trace_id, k.span_id, k.trace_state, k.attributes] for k in links])
        if links
        else None,
        refs.resource(span.resource),
        refs.scope(span.scope),
    )


def _log_row(record: LogRecord, refs: _Refs) -> tuple[Any, ...]:
    guard = refs.guard
    resource_id, scope_id = refs.resource(record.resource), refs.scope(record.scope)
    row = (
        record.trace_id,
        record.span_id,
        record.time_ns,
        record.observed_time_ns,
        guard.text(record.event_name),
        record.severity_number,
        guard.text(record.severity_text),
        None if record.body is None else guard.json(record.body),
        guard.json(record.attributes),
        record.flags,
        resource_id.hex(),
        scope_id.hex(),
    )
    # Hashed in the form the ids had when stored as hex text, so a retry of a record stored
    # then is still recognised.
    return (
        _id_hash(*map(str, row)),
        _maybe_id(record.trace_id),
        _maybe_id(record.span_id),
        *row[2:-2],
        resource_id,
        scope_id,
    )


def _trace_rows(
    span_rows: Sequence[tuple[Any, ...]],
    logs: Sequence[LogRecord],
    services: dict[bytes, str],
    now: float,
    max_skew: float,
) -> tuple[list[dict[str, Any]], int]:
    """Per-trace facts of one write, for :func:`~tracescore.store.trace_queue.touch_traces`, sorted by trace id;
    read from the span rows (:data:`_SPAN_COLUMNS`), whose text is storable already, and their
    resources' ``services`` (:attr:`_Refs.services`). Span times more than ``max_skew`` seconds
    in the future of ``now`` count as ``now``: also returns how many spans had one."""
    rows: dict[bytes, dict[str, Any]] = {}
    latest, arrival, clamped = int((now + max_skew) * 1e9), int(now * 1e9), 0
    for trace_id, _, parent_span_id, name, _, start, duration, *_, resource_id, _ in span_rows:
        service_name = services[resource_id]
        end = start + duration
        if start > latest or end > latest:
            clamped += 1
            start, end = min(start, arrival), min(end, arrival)
        row = rows.get(trace_id)
        is_root = parent_span_id is None
        if row is None:
            rows[trace_id] = {
                "trace_id": trace_id,
                "service_name": service_name,
                "root_name": name if is_root else "",
                "has_root": is_root,
                "start_time_ns": start,
                "end_time_ns": end,
                "now": now,
            }
            continue
        if is_root and not row["has_root"]:
            row.update(has_root=True, root_name=name, service_name=service_name)
        if start < row["start_time_ns"]:
            row["start_time_ns"] = start
        if end > row["end_time_ns"]:
            row["end_time_ns"] = end
    for record in logs:
        if record.trace_id is not None and (trace_id := _id(record.trace_id)) not in rows:
            rows[trace_id] = {
                "trace_id": trace_id,
                "service_name": "",
                "root_name": "",
                "has_root": False,
                "start_time_ns": None,
                "end_time_ns": None,
                "now": now,
            }
    return [rows[trace_id] for trace_id in sorted(rows)], clamped


class _AlreadyConsumed(Exception):
    """Rolls back a write whose journal entries another process stored first."""


@functools.cache
def _list_query(dialect: str, after: bool, service: bool, since: bool) -> Select[Any]:
    """:meth:`SpanStore.list_traces`' statement on ``dialect`` with the filters asked for."""
    table = _TRACES
    query = select(*_SUMMARY_COLUMNS)
    if after:
        moment: BindParameter[float] = bindparam("moment")
        query = query.where(
            or_(
                table.c.last_seen < moment,
                and_(table.c.last_seen == moment, table.c.trace_id > bindparam("after_id")),
            )
        )
    if service:
        query = query.where(table.c.service_name == bindparam("service"))
    if since:
        query = query.where(table.c.last_seen >= bindparam("since"))
    limit = bindparam("limit", type_=Integer, literal_execute=True)
    return in_last_seen_order(query, dialect, limit, newest_first=True)


class SpanStore:
    """Spans, logs and trace assembly state in one SQL database (SQLite or PostgreSQL).

    Thread-safe: the collector calls :meth:`write` from a thread pool. On SQLite, writes and
    claims of all threads and processes are serialized by a :class:`SqliteWriteLock` (SQLite has
    one writer anyway; waiting on a lock is cheaper and prompter than its busy-retry loop).
    """

    def __init__(
        self,
        engine: Engine,
        rules: ReadinessRules | None = None,
        read_limit: ReadLimit | None = None,
    ) -> None:
        self.engine = engine
        self.rules = rules or ReadinessRules()
        self.read_limit = read_limit or ReadLimit()
        """How much of one trace a read loads (:mod:`~tracescore.store.trace_cut`)."""
        self.dialect = engine.dialect.name
        self._write_lock: SqliteWriteLock | None = (
            SqliteWriteLock(engine.url.database) if self.dialect == "sqlite" else None
        )
        style = engine.dialect.paramstyle
        self._insert_spans = (
            new_spans_insert(_SPAN_COLUMNS)
            if self.dialect == "postgresql"
            else bulk_insert(self.dialect, style, "spans", _SPAN_COLUMNS)
        )
        self._insert_logs = bulk_insert(self.dialect, style, "logs", _LOG_COLUMNS)
        self._ref_ids = _RefIds()
        self._loaded_refs = _LoadedRefs()
        self._text_replaced = 0
        self._future_times = 0
        self._counts_lock = threading.Lock()
        self.journal = IngestJournal(engine, self.write_transaction)
        """Acknowledged requests waiting to become rows (:mod:`~tracescore.store.ingest_journal`)."""
        self.queue = TraceQueue(self.write_transaction, self.journal.kept, self.rules)
        """The traces waiting to be scored, and their claims (:mod:`~tracescore.store.trace_queue`)."""

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def write_transaction(self) -> Iterator[Connection]:
        """A connection in a write transaction, committed on exit (rolled back on error).

        Other stages writing to the same database should use it rather than
        ``engine.begin()``: on SQLite it queues behind the collector's own writes instead of
        racing them into "database is locked" errors.
        """
        if self._write_lock is None:
            with self.engine.begin() as conn:
                yield conn
            return
        with self._write_lock, self.engine.begin() as conn:
            yield conn

    # ------------------------------------------------------------------ ingest

    def write(
        self,
        spans: Sequence[Span],
        logs: Sequence[LogRecord] = (),
        *,
        received_at: float | None = None,
        consume: Sequence[JournalEntry] = (),
    ) -> bool:
        """Store spans and log records and update their traces, in one transaction.

        Returns only once committed (durable); raises on any database failure, with nothing
        written. A span already stored (same trace and span id, e.g. an exporter retry) is kept
        as first stored; an identical log record is stored once. ``received_at`` is when the
        collector received them (default now: it drives trace readiness).

        With ``consume``, the records are those of these journal entries, which are consumed in
        the same transaction; if any is already consumed (another process unpacked it) nothing
        is written and the result is False.
        """
        if not spans and not logs and not consume:
            return True
        refs = _Refs(TextGuard())
        span_rows = [_span_row(span, refs) for span in spans]
        log_rows = [_log_row(record, refs) for record in logs]
        trace_rows, clamped = _trace_rows(
            span_rows,
            logs,
            refs.services,
            time.time() if received_at is None else received_at,
            self.rules.max_clock_skew,
        )
        try:
            with self.write_transaction() as conn:
                if consume and not self.journal.kept.consume(conn, consume):
                    raise _AlreadyConsumed
                found = self._ref_ids.resolve(conn, refs)
                if span_rows:
                    self._insert_spans(conn, found.referring(span_rows))
                if log_rows:
                    self._insert_logs(conn, found.referring(log_rows))
                if trace_rows:
                    touch_traces(conn, trace_rows)
        except _AlreadyConsumed:
            return False
        self._ref_ids.learn(found)
        if refs.guard.replaced or clamped:
            with self._counts_lock:
                self._text_replaced += refs.guard.replaced
                self._future_times += clamped
        if consume:
            self.journal.kept.release(consume)
        return True

    def take_counts(self) -> tuple[int, int]:
        """For the metrics, what writes since the last call stored altered: text values with
        NUL characters or unpaired surrogates replaced (see :mod:`tracescore.store.text`), and
        spans whose times lay beyond ``rules.max_clock_skew`` in the future."""
        with self._counts_lock:
            taken = self._text_replaced, self._future_times
            self._text_replaced = self._future_times = 0
        return taken

    # ------------------------------------------------------------------ reads

    def load_trace(self, trace_id: str, *, settle: bool = True) -> Trace | None:
        """Every stored span and log record of a trace (spans by start time), or ``None``.

        Like every read here it first waits for the requests acknowledged before it to be
        unpacked (:meth:`IngestJournal.settle`).
        """
        return self.load_traces([trace_id], settle=settle).get(trace_id.lower())

    def load_traces(
        self,
        trace_ids: Sequence[str],
        *,
        settle: bool = True,
        span_counts: Mapping[str, int] | None = None,
    ) -> dict[str, Trace]:
        """The stored traces among ``trace_ids``, by id: one query for all their spans (and one
        per trace over the read limit), one for their log records and one per kind of
        reference, whatever their number (the scoring worker loads a whole batch so). The
        worker, which only loads traces found idle as of the journal's oldest entry, passes
        ``settle=False``.

        Each trace is read within :attr:`read_limit` (:mod:`~tracescore.store.trace_cut`): the
        rows are streamed, a trace's spans past the limit are counted (not read), its log
        records past it read and counted but not kept, and a trace read in part says so in
        ``Trace.cut``. ``span_counts``: the traces' span counts as the caller knows them (a
        claim's), which tell the traces over the limit without asking the database (see
        :func:`_read_spans`: a count that grew since changes how a trace is read, not what is
        read)."""
        if settle:
            self.journal.settle()
        wanted = sorted({trace_id.lower() for trace_id in trace_ids})
        cuts: dict[str, TraceCut] = {}
        with self.engine.connect() as conn:
            span_rows = _read_spans(conn, wanted, self.read_limit, cuts, span_counts)
            log_rows = _read_logs(conn, wanted, self.read_limit, cuts, span_rows)
            if not span_rows and not log_rows:
                return {}
            resources, scopes = self._loaded_refs.load(
                conn,
                {row[-2] for rows in (span_rows, log_rows) for row in rows},
                {row[-1] for rows in (span_rows, log_rows) for row in rows},
            )
        traces: dict[str, Trace] = {}
        for row in span_rows:
            span = _span_from_row(row, resources, scopes)
            if (trace := traces.get(span.trace_id)) is None:
                trace = traces[span.trace_id] = Trace(span.trace_id)
                if (cut := cuts[span.trace_id]).oversized:
                    cut.fit_first(span)
            trace.spans.append(span)
        for row in log_rows:
            record = _log_from_row(row, resources, scopes)
            trace_id = record.trace_id or ""  # the query asked for these traces' records only
            if (trace := traces.get(trace_id)) is None:
                trace = traces[trace_id] = Trace(trace_id)
            trace.logs.append(record)
        for trace_id, trace in traces.items():
            cut = cuts[trace_id]
            trace.cut = cut.note()
            if trace.cut is not None:
                trace.whole_before_ns = cut.whole_before(trace.spans)
        return traces

    def list_traces(
        self,
        limit: int = 50,
        service: str | None = None,
        since: float | None = None,
        after: tuple[float, str] | None = None,
    ) -> list[TraceSummary]:
        """Most recently active traces first; ``since`` is epoch seconds of last activity;
        ``after`` (a summary's ``last_seen`` and ``trace_id``) starts after that trace."""
        self.journal.settle()
        query = _list_query(self.dialect, after is not None, service is not None, since is not None)
        moment, trace_id = after or (None, None)
        parameters = {
            "moment": moment,
            "after_id": trace_id,
            "service": service,
            "since": since,
            "limit": limit,
        }
        with self.engine.connect() as conn:
            return [TraceSummary(**row._mapping) for row in conn.execute(query, parameters)]

    def trace_summary(self, trace_id: str) -> TraceSummary | None:
        self.journal.settle()
        table = _TRACES
        query = select(*_SUMMARY_COLUMNS).where(table.c.trace_id == trace_id.lower())
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else TraceSummary(**row._mapping)

    def count_spans(self) -> int:
        """Stored spans in total (monitoring and benchmarks)."""
        self.journal.settle()
        with self.engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM spans")).scalar_one())


_STREAMED = {"yield_per": 1_000}
"""A read's rows fetched 1,000 at a time (a server-side cursor on PostgreSQL), never all held
by the driver at once."""


def _read_spans(
    conn: Connection,
    trace_ids: list[str],
    limit: ReadLimit,
    cuts: dict[str, TraceCut],
    span_counts: Mapping[str, int] | None = None,
) -> list[Any]:
    """The span rows of ``trace_ids`` that ``limit`` keeps (``cuts`` counts them per trace).

    A trace with more spans than the limit (by its summary) is read on its own, with the
    limit in the query: the database then sorts only the spans it returns (SQLite's top-N
    sort), not all of a 200,000-span trace's rows, which took 30 MB of SQLite's memory. Rows
    are streamed; at the first one a trace's limit refuses, the read stops, counts the
    trace's spans, and resumes at the traces not reached yet. So which traces are read on
    their own changes how, not what, is read: ``span_counts`` (a claim's, perhaps older than
    the summary) tell them without a query, one less per scoring batch."""
    traces_t = _TRACES
    if span_counts is not None and all(trace_id in span_counts for trace_id in trace_ids):
        big = [trace_id for trace_id in trace_ids if span_counts[trace_id] > limit.spans]
    else:
        big = [
            trace_id
            for (trace_id,) in conn.execute(
                select(traces_t.c.trace_id).where(
                    traces_t.c.trace_id.in_(trace_ids), traces_t.c.span_count > limit.spans
                )
            )
        ]
    rows: list[Any] = []
    with _scan_cache(conn, bool(big)):
        for trace_id in big:
            rows += _read_span_rows(conn, [trace_id], limit, cuts)
    return rows + _read_span_rows(conn, [t for t in trace_ids if t not in big], limit, cuts)


@contextmanager
def _scan_cache(conn: Connection, scanning: bool) -> Iterator[None]:
    """SQLite's page cache at its default size while a huge trace is scanned: the scan passes
    all the trace's pages (the database sorts them for the first ones by start time), which
    filled the 32 MiB cache a connection keeps (25 MB more at 200,000 spans than at 20,000)."""
    if not scanning or conn.dialect.name != "sqlite":
        yield
        return
    conn.exec_driver_sql(SCAN_CACHE_PRAGMA)
    try:
        yield
    finally:
        conn.exec_driver_sql(CACHE_PRAGMA)


def _read_span_rows(
    conn: Connection, trace_ids: list[str], limit: ReadLimit, cuts: dict[str, TraceCut]
) -> list[Any]:
    """:func:`_read_spans` for some of the traces (one, with the limit in the query)."""
    spans_t = _SPANS
    rows: list[Any] = []
    remaining = trace_ids
    while remaining:  # once more per trace cut, for the traces after it
        query = (
            select(*_SPAN_READ)
            .where(spans_t.c.trace_id.in_(remaining))
            .order_by(spans_t.c.trace_id, spans_t.c.start_time_ns, spans_t.c.span_id)
        )
        if len(remaining) == 1:
            query = query.limit(limit.spans + 1)
        stopped = None
        with conn.execute(query, execution_options=_STREAMED) as found:
            for row in found:
                if (cut := cuts.get(row[0])) is None:
                    cut = cuts[row[0]] = TraceCut(limit)
                if not cut.span(packed.unpacked_size(row[7]) + _stored_size(row[8], row[9])):
                    stopped = row[0]
                    break
                rows.append(row)
        if stopped is None:
            break
        cuts[stopped].spans = conn.execute(
            select(func.count()).where(spans_t.c.trace_id == stopped)
        ).scalar_one()
        remaining = [trace_id for trace_id in remaining if trace_id not in cuts]
    return rows


def _read_logs(
    conn: Connection,
    trace_ids: list[str],
    limit: ReadLimit,
    cuts: dict[str, TraceCut],
    span_rows: list[Any],
) -> list[Any]:
    """The log records of ``trace_ids`` that ``limit`` keeps: of a cut trace, those of the
    spans kept (and of no span) until the limit refuses one; the others are counted."""
    logs_t = _LOGS
    kept_spans = {(row[0], row[1]) for row in span_rows}
    rows: list[Any] = []
    with conn.execute(
        select(*_LOG_READ)
        .where(logs_t.c.trace_id.in_(trace_ids))
        .order_by(logs_t.c.trace_id, logs_t.c.time_ns, logs_t.c.id),
        execution_options=_STREAMED,
    ) as found:
        for row in found:
            if (cut := cuts.get(row[2])) is None:
                cut = cuts[row[2]] = TraceCut(limit)
            cut_off = cut.spans_kept < cut.spans and row[3] is not None
            if cut_off and (row[2], row[3]) not in kept_spans:
                cut.skip_log()  # the trace was cut, and this record's span left out
            elif cut.log(_stored_size(row[7], row[8])):
                rows.append(row)
    return rows


def _stored_size(*columns: str | bytes | None) -> int:
    """Bytes (or characters) of a row's stored text columns, what :class:`TraceCut` counts."""
    return sum(len(column) for column in columns if column is not None)


class _LoadedRefs:
    """The resources and scopes this store has read, by row id: their rows never change once
    written (nor are they deleted), so each is read and decoded once per process rather than
    once per trace load. The objects are shared by every trace loaded after, as one load's
    spans always shared them. Bounded: a store meeting ever new resources (a client sending a
    new ``service.instance.id`` each start) starts again past :data:`_REFS_KEPT` of them."""

    def __init__(self) -> None:
        self.resources: dict[int, Resource] = {}
        self.scopes: dict[int, Scope] = {}

    def load(
        self, conn: Connection, resource_ids: set[int], scope_ids: set[int]
    ) -> tuple[dict[int, Resource], dict[int, Scope]]:
        """Every resource and scope of ``resource_ids`` and ``scope_ids``, by id, reading only
        those not read yet."""
        resources, scopes = self.resources, self.scopes
        if len(resources) + len(scopes) > _REFS_KEPT:
            resources, scopes = self.resources, self.scopes = {}, {}
        if missing := resource_ids - resources.keys():
            resources.update(_read_resources(conn, missing))
        if missing := scope_ids - scopes.keys():
            scopes.update(_read_scopes(conn, missing))
        return resources, scopes


_REFS_KEPT = 10_000
"""Resources and scopes a store keeps decoded (:class:`_LoadedRefs`)."""


def _read_resources(conn: Connection, resource_ids: set[int]) -> dict[int, Resource]:
    resources_t = _RESOURCES
    return {
        resource_id: Resource(codec.decode(attributes))
        for resource_id, attributes in conn.execute(
            select(resources_t.c.id, resources_t.c.attributes).where(
                resources_t.c.id.in_(resource_ids)
            )
        )
    }


def _read_scopes(conn: Connection, scope_ids: set[int]) -> dict[int, Scope]:
    scopes_t = _SCOPES
    return {
        scope_id: Scope(name, version, codec.decode(attributes))
        for scope_id, name, version, attributes in conn.execute(
            select(scopes_t.c.id, scopes_t.c.name, scopes_t.c.version, scopes_t.c.attributes).where(
                scopes_t.c.id.in_(scope_ids)
            )
        )
    }


_SPAN_READ = tuple(
    _SPANS.c[name]
    for name in (
        "trace_id",
        "span_id",
        "parent_span_id",
        "name",
        "kind",
        "start_time_ns",
        "duration_ns",
        "attributes",
        "events",
        "links",
        "status_code",
        "status_message",
        "trace_state",
        "flags",
        "resource_id",  # the references last: load_traces reads them as row[-2] and row[-1]
        "scope_id",
    )
)
"""The span columns a read selects, in the order :func:`_span_from_row` unpacks them: a row
unpacked as a tuple costs about a microsecond, its sixteen values read by name (SQLAlchemy's
``Row.__getattr__``) about twenty, which was a third of a scoring batch's load."""

_LOG_READ = tuple(
    _LOGS.c[name]
    for name in (
        "time_ns",
        "observed_time_ns",
        "trace_id",
        "span_id",
        "event_name",
        "severity_number",
        "severity_text",
        "body",
        "attributes",
        "flags",
        "resource_id",
        "scope_id",
    )
)
"""The log columns a read selects, in the order :func:`_log_from_row` unpacks them."""


def _span_from_row(row: Any, resources: dict[int, Resource], scopes: dict[int, Scope]) -> Span:
    (
        trace_id,
        span_id,
        parent_span_id,
        name,
        kind,
        start_time_ns,
        duration_ns,
        attributes,
        events,
        links,
        status_code,
        status_message,
        trace_state,
        flags,
        resource_id,
        scope_id,
    ) = row
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_span_id,
        name=name,
        kind=kind,
        start_time_ns=start_time_ns,
        end_time_ns=start_time_ns + duration_ns,
        attributes=codec.decode(packed.unpack(attributes)),
        resource=resources[resource_id],
        scope=scopes[scope_id],
        events=[SpanEvent(*event) for event in codec.decode(events) or ()],
        links=[SpanLink(*link) for link in codec.decode(links) or ()],
        status_code=status_code,
        status_message=status_message,
        trace_state=trace_state,
        flags=_unsigned32(flags),
    )


def _log_from_row(row: Any, resources: dict[int, Resource], scopes: dict[int, Scope]) -> LogRecord:
    (
        time_ns,
        observed_time_ns,
        trace_id,
        span_id,
        event_name,
        severity_number,
        severity_text,
        body,
        attributes,
        flags,
        resource_id,
        scope_id,
    ) = row
    return LogRecord(
        time_ns=time_ns,
        observed_time_ns=observed_time_ns,
        trace_id=trace_id,
        span_id=span_id,
        event_name=event_name,
        severity_number=severity_number,
        severity_text=severity_text,
        body=codec.decode(body),
        attributes=codec.decode(attributes),
        resource=resources[resource_id],
        scope=scopes[scope_id],
        flags=flags,
    )
