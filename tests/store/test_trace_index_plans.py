"""The traces table's partial indexes are the ones promotion, claims and the lists read.

``ix_traces_*_last_seen`` and ``ix_traces_pending_since`` hold the traces of one state only
(``store/tables.py``); SQLite uses such an index only for a statement spelling its condition,
and would otherwise narrow by ``ix_traces_state_end`` and sort every trace of the state, which
behind a backlog is what the claim's design avoids. Checked on SQLite's query plans, which do
not depend on the rows (PostgreSQL's planner takes a small table's rows in one scan anyway).
On PostgreSQL, the lists in last-seen order read every state from its index (the settled ones
from ``ix_traces_last_seen``, which holds only those): checked with sequential scans disabled,
so a condition an index's could not be proven from would show as a scan of the table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, select

from tracescore.store import open_store
from tracescore.store.trace_queue import _PROMOTE_IDLE, _PROMOTE_OVERDUE, _SQL
from tracescore.store.traces import TRACES, in_last_seen_order

VALUES = {
    ":cut": "1.0",
    ":now": "1.0",
    ":limit": "5",
    ":owner": "'o'",
    ":token": "'t'",
    ":expires": "2.0",
}


@pytest.fixture
def connection(sqlite_url: str) -> Iterator[Connection]:
    store = open_store(sqlite_url)
    with store.engine.connect() as opened:
        yield opened
    store.close()


def _indexes(connection: Connection, sql: str) -> list[str]:
    for name, value in VALUES.items():
        sql = sql.replace(name, value)
    plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}").all()
    return [row[-1] for row in plan if "traces USING" in row[-1]]


@pytest.mark.parametrize(
    ("statement", "indexes"),
    [
        (_PROMOTE_IDLE, ["ix_traces_pending_last_seen (state=? AND last_seen<?)"]),
        (_PROMOTE_OVERDUE, ["ix_traces_pending_since (state=? AND pending_since<?)"]),
        (
            _SQL.claim_sqlite,
            [
                "ix_traces_claimed_last_seen (state=?)",
                "ix_traces_ready_last_seen (state=?)",
                "sqlite_autoindex_traces_1 (trace_id=?)",
            ],
        ),
    ],
)
def test_promotion_and_claims_read_the_index_of_their_state(
    connection: Connection, statement: object, indexes: list[str]
) -> None:
    plan = _indexes(connection, str(statement))
    assert plan == [f"SEARCH traces USING INDEX {index}" for index in indexes]


def test_postgresql_lists_read_each_state_from_its_index(pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        query = in_last_seen_order(
            select(TRACES.c.trace_id, TRACES.c.last_seen).where(TRACES.c.last_seen < 1e12),
            "postgresql",
            50,
            newest_first=True,
        )
        sql = str(query.compile(store.engine, compile_kwargs={"literal_binds": True}))
        with store.engine.connect() as opened:
            opened.exec_driver_sql("SET enable_seqscan = off")
            plan = "\n".join(row[0] for row in opened.exec_driver_sql(f"EXPLAIN {sql}"))
    finally:
        store.close()
    assert "Seq Scan" not in plan
    read = sorted(set(re.findall(r"Index (?:Only )?Scan(?: Backward)? using (\w+)", plan)))
    assert read == [
        "ix_traces_claimed_last_seen",
        "ix_traces_last_seen",
        "ix_traces_pending_last_seen",
        "ix_traces_ready_last_seen",
    ]
