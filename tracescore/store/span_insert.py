"""The spans insert on PostgreSQL, which skips the spans already stored without a unique key.

PostgreSQL's ``spans`` has no primary key: its one index holds the trace id alone
(``ix_spans_trace``), so a trace's spans share one entry where a (trace id, span id) key took an
entry each, 160 bytes a four-span trace. Without that key, ``ON CONFLICT DO NOTHING`` cannot
skip an exporter's retry of spans already stored, so the insert does it itself:

1. it takes a transaction-level advisory lock on each of the write's traces, in one order, so
   that two writes of one trace (a retry unpacked by another process while the first is still
   in its transaction) store its spans one after the other;
2. it reads the ids of the spans already stored for those traces (one range of the index per
   trace);
3. it copies the rest, the first of each (trace id, span id) in the write, straight into the
   table: no staging table and no ``INSERT … SELECT``.

The locks are two-key advisory locks (:data:`_LOCK_SPACE`, then 32 bits of the trace id), a
space of their own beside the one-key locks of the schema and the judge reservations. Two
traces whose ids share those bits only wait for each other. Every other writer of a trace's
row (claims, completions, retention) takes no such lock, so none can wait on one in a cycle.
SQLite keeps its key and ``ON CONFLICT DO NOTHING`` (:func:`~tracescore.store.bulk.bulk_insert`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from tracescore.store.bulk import BulkInsert

_LOCK_SPACE = 0x5EA5_0001
"""The advisory locks' first key: theirs, among the database's two-key advisory locks."""

_LOCK = "SELECT pg_advisory_xact_lock(%s, key) FROM unnest(%s::integer[]) AS key"
_STORED = "SELECT trace_id, span_id FROM spans WHERE trace_id = ANY(%s)"


def new_spans_insert(columns: Sequence[str]) -> BulkInsert:
    """The insert of span rows of ``columns`` (the trace id first, the span id second) that
    stores only the spans not stored yet."""
    if tuple(columns[:2]) != ("trace_id", "span_id"):
        raise ValueError("span rows must start with their trace id and span id")
    copy_sql = f"COPY spans ({', '.join(columns)}) FROM STDIN"

    def insert(conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
        first: dict[tuple[bytes, bytes], tuple[Any, ...]] = {}
        for row in rows:
            first.setdefault((row[0], row[1]), row)
        traces = sorted({trace_id for trace_id, _ in first})
        keys = sorted({int.from_bytes(trace_id[:4], "big", signed=True) for trace_id in traces})
        driver = conn.connection.driver_connection
        assert driver is not None, "a connection in use has its driver's (psycopg's) connection"
        with driver.cursor() as cursor:
            cursor.execute(_LOCK, (_LOCK_SPACE, keys))
            stored = {(bytes(t), bytes(s)) for t, s in cursor.execute(_STORED, (traces,))}
            new = [row for key, row in first.items() if key not in stored]
            if new:
                with cursor.copy(copy_sql) as copy:
                    for row in new:
                        copy.write_row(row)

    return insert
