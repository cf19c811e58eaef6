"""Revision ``0026_aligned_spans`` on rows of the revision before it, on SQLite and PostgreSQL:
spans written before it read back the same through the store and the schema equals the models;
on PostgreSQL the span columns are in aligned order with a 2-byte kind and status code, a
trace's counters are 4-byte, ``ix_traces_state_end`` holds settled traces only, and the reads that need it (retention by
state, the backlog counts) still find their traces."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import Engine, select, text

from tests.support.schema_drift import drift as schema_drift
from tracescore.spans import Resource, Scope, Span, SpanEvent, SpanLink
from tracescore.store import migrate, open_store
from tracescore.store.engine import make_engine
from tracescore.store.leased_queue import TraceState, state_is
from tracescore.store.spanstore import SpanStore
from tracescore.store.trace_queue import count_in_states
from tracescore.store.traces import TRACES, prune_settled_traces

BEFORE = "0025_queue_leases"
TRACE, LATE = "4bf92f3577b34da6a3ce929d0e0e4736", "5c77f2a4d458539be0232f55b2dd0dd4"
RESOURCE = Resource({"service.name": "support-bot"})
SCOPE = Scope("agent-sdk", "0.3", {})


def _span(trace_id: str, number: int) -> Span:
    """A span using every column: the root with events, a link, flags and an error status."""
    root = number == 1
    return Span(
        trace_id=trace_id,
        span_id=f"{number:016x}",
        parent_span_id=None if root else f"{1:016x}",
        name=f"step {number}",
        kind=2 if root else 3,
        start_time_ns=1_700_000_000_000_000_000 + number,
        end_time_ns=1_700_000_001_000_000_000,
        attributes={"gen_ai.operation.name": "chat", "n": number},
        resource=RESOURCE,
        scope=SCOPE,
        events=[SpanEvent("gen_ai.evaluation.result", 1_700_000_000_500_000_000, {"s": 1})]
        if root
        else [],
        links=[SpanLink(LATE, f"{9:016x}", "k=v", {"why": "retry"})] if root else [],
        status_code=2 if root else 0,
        status_message="boom" if root else "",
        trace_state="vendor=1" if root else "",
        flags=0x301 if root else 0,
    )


SPANS = [_span(TRACE, 1), _span(TRACE, 2)]


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _upgraded(engine: Engine) -> Engine:
    """The database at the revision before, with :data:`SPANS` written by the store, then
    upgraded."""
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
    before = SpanStore(engine)  # the store's writes name their columns: valid at either revision
    before.write(SPANS)
    assert "0026_aligned_spans" in migrate.upgrade(engine)
    return engine


def test_spans_written_before_read_back_the_same(engine: Engine) -> None:
    _upgraded(engine)
    with engine.connect() as connection:
        drift = schema_drift(connection)
    assert drift == []
    store = open_store(engine.url.render_as_string(hide_password=False))
    try:
        trace = store.load_trace(TRACE)
        assert trace is not None
        assert trace.spans == SPANS
        store.write([_span(TRACE, 3)])  # and writes go on into the copied table
        reread = store.load_trace(TRACE)
        assert reread is not None
        assert reread.spans == [*SPANS, _span(TRACE, 3)]
        assert store.trace_summary(TRACE).span_count == 3  # type: ignore[union-attr]
    finally:
        store.close()


def test_postgresql_spans_are_aligned_and_the_end_index_holds_settled_traces(
    engine: Engine,
) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite's schema is unchanged by the revision")
    _upgraded(engine)
    with engine.begin() as connection:
        columns = connection.execute(
            text(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = 'spans' AND table_schema = current_schema() "
                "ORDER BY ordinal_position"
            )
        ).all()
        counters = connection.execute(
            text(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = 'traces' AND table_schema = current_schema() "
                "AND column_name IN ('span_count', 'log_count', 'generation', "
                "'claimed_generation', 'scored_generation')"
            )
        ).all()
        condition = connection.execute(
            text(
                "SELECT pg_get_expr(indpred, indrelid) FROM pg_index "
                "WHERE indexrelid = 'ix_traces_state_end'::regclass"
            )
        ).scalar_one()
        connection.execute(
            text("UPDATE traces SET state = 'scored' WHERE trace_id = :t"),
            {"t": bytes.fromhex(TRACE)},
        )
    assert [name for name, _ in columns[:7]] == [
        "start_time_ns",
        "duration_ns",
        "flags",
        "resource_id",
        "scope_id",
        "kind",
        "status_code",
    ]
    assert dict(columns)["kind"] == dict(columns)["status_code"] == "smallint"
    assert dict(counters) == {
        "span_count": "integer",
        "log_count": "integer",
        "generation": "integer",
        "claimed_generation": "integer",
        "scored_generation": "integer",
    }
    assert "scored" in condition and "pending" not in condition
    assert count_in_states(engine, [TraceState.PENDING, TraceState.SCORED]) == {"scored": 1}
    by_end = (
        select(TRACES.c.trace_id)
        .where(state_is(TRACES.c.state, TraceState.SCORED), TRACES.c.end_time_ns < 5)
        .order_by(TRACES.c.end_time_ns)
        .compile(engine, compile_kwargs={"render_postcompile": True})
    )
    with engine.begin() as connection:
        connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
        plan = connection.exec_driver_sql(f"EXPLAIN {by_end}", by_end.params).scalars().all()
        pruned = prune_settled_traces(connection, TraceState.SCORED, 2 * 10**18, 10)
    assert "ix_traces_state_end" in "\n".join(plan)
    assert pruned is not None and pruned.spans == 2
