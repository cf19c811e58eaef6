"""Revisions ``0027_spans_trace_index``, ``0028_trace_indexes`` and ``0029_span_flags_int`` on
rows of the revision before them, on SQLite (which they leave as it is) and PostgreSQL: spans
written before read back the same (flags with their top bit set included) and are not stored
twice when retried, the schema equals the models, and on PostgreSQL the spans' one index is
their trace id's, the queue's indexes key their time alone and the flags are 4 bytes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import Engine, text

from tests.support.schema_drift import drift as schema_drift
from tests.support.store_spans import TRACE_ID as TRACE
from tests.support.store_spans import full_span
from tracescore.spans import Span
from tracescore.store import migrate, open_store
from tracescore.store.engine import make_engine
from tracescore.store.spanstore import SpanStore
from tracescore.store.trace_queue import count_in_states

BEFORE = "0026_aligned_spans"
ALL_FLAGS = 0xFFFF_FFFF
"""Flags with every bit set: above a signed 32-bit integer's range, as OTLP's fixed32 allows."""


def _span(number: int, flags: int = 0x301) -> Span:
    span = full_span(f"{number:016x}", None if number == 1 else f"{1:016x}")
    span.flags = flags
    return span


SPANS = [_span(1), _span(2, ALL_FLAGS)]


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _upgraded(engine: Engine) -> None:
    """The database at the revision before, with :data:`SPANS` stored as that release stored
    them (flags unsigned in an 8-byte column), then upgraded."""
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
    SpanStore(engine).write(SPANS)
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE spans SET flags = :flags WHERE span_id = :span_id"),
            {"flags": ALL_FLAGS, "span_id": bytes.fromhex(SPANS[1].span_id)},
        )
    applied = migrate.upgrade(engine)
    assert {"0027_spans_trace_index", "0028_trace_indexes", "0029_span_flags_int"} <= set(applied)


def test_spans_written_before_read_back_the_same_and_a_retry_stores_nothing(
    engine: Engine,
) -> None:
    _upgraded(engine)
    with engine.connect() as connection:
        assert schema_drift(connection) == []
    store = open_store(engine.url.render_as_string(hide_password=False))
    try:
        trace = store.load_trace(TRACE)
        assert trace is not None and trace.spans == SPANS
        store.write([*SPANS, _span(3, ALL_FLAGS)])  # a retry of the two, and one new span
        reread = store.load_trace(TRACE)
        assert reread is not None and reread.spans == [*SPANS, _span(3, ALL_FLAGS)]
        assert store.trace_summary(TRACE).span_count == 3  # type: ignore[union-attr]
        assert count_in_states(engine, ["pending"]) == {"pending": 1}
    finally:
        store.close()


def test_postgresql_spans_keep_one_index_of_trace_ids_and_queue_indexes_key_their_time(
    engine: Engine,
) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite's schema is unchanged by the revisions")
    _upgraded(engine)
    with engine.connect() as connection:
        indexes = dict(
            connection.execute(
                text(
                    "SELECT indexname, indexdef FROM pg_indexes "
                    "WHERE schemaname = current_schema() AND tablename IN ('spans', 'traces')"
                )
            ).all()
        )
        flags_type = connection.execute(
            text(
                "SELECT data_type FROM information_schema.columns WHERE table_name = 'spans' "
                "AND column_name = 'flags' AND table_schema = current_schema()"
            )
        ).scalar_one()
    assert [name for name, made in indexes.items() if " ON " in made and ".spans " in made] == [
        "ix_spans_trace"
    ]
    assert indexes["ix_spans_trace"].endswith("USING btree (trace_id)")
    assert indexes["ix_traces_pending_last_seen"].endswith(
        "USING btree (last_seen) WHERE ((state)::text = 'pending'::text)"
    )
    assert indexes["ix_traces_pending_since"].endswith(
        "USING btree (pending_since) WHERE ((state)::text = 'pending'::text)"
    )
    assert (
        "(last_seen) WHERE ((state)::text = 'ready'::text)" in indexes["ix_traces_ready_last_seen"]
    )
    assert (
        "(last_seen) WHERE ((state)::text = 'claimed'::text)"
        in (indexes["ix_traces_claimed_last_seen"])
    )
    assert flags_type == "integer"
