"""Revision ``0024_score_series`` on score rows of the revision before it, on SQLite and
PostgreSQL: the names each row repeated become one row per combination in ``score_series``
(NULL names kept apart from any text), every score reads back as it was through the store, the
schema equals the models, and a write after the upgrade finds the series stored by it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, text

from tests.support.schema_drift import drift as schema_drift
from tests.support.score_rows import stored_score
from tracescore.outcomes import FAILED_RUN_REASON
from tracescore.store import migrate, open_store
from tracescore.store.column_types import utc_micros
from tracescore.store.engine import make_engine
from tracescore.store.score_aggregates import aggregate_scores
from tracescore.store.score_reads import ScoreFilter, list_scores, trace_scores
from tracescore.store.scores import prepare_scores

BEFORE = "0023_compact_spans_traces"
TRACE = "0af7651916cd43dd8448eb211c80319c"
AT = datetime(2026, 12, 1, 9, 30, 15, 123456, tzinfo=UTC)
NAMED = {
    "11" * 16: ("tone", "ok", "support", "gpt-4o", None),
    "22" * 16: ("tone", "ok", "support", "gpt-4o", None),
    "33" * 16: ("tone", "not_scorable", "support", "gpt-4o", None),
    "44" * 16: ("faithfulness", "ok", None, None, "gpt-4o-mini"),
    "55" * 16: ("faithfulness", "ok", "", None, "gpt-4o-mini"),
}
"""id: binding, status, agent, model, judge model. Two rows share a series; one has an empty
agent where another has none."""
REASONS = {
    "11" * 16: "every check passed (grounding, contradiction, entities, non_answer, truncation, "
    "language, leak)",
    "33" * 16: f"{FAILED_RUN_REASON}TimeoutError: the tool did not answer",
}
"""A code scorer's reason (compressed after the upgrade) and a failed run's (kept plain, which
the error rate's SQL matches); the others' is ``why``."""


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _seed(connection: Any) -> None:
    for index, (row_id, (binding, status, agent, model, judge)) in enumerate(NAMED.items()):
        moment = utc_micros(AT + timedelta(seconds=index))
        connection.execute(
            text(
                "INSERT INTO scores (id, trace_id, span_id, binding, scorer_id, scorer_version, "
                "status, score, reason, judge_model, input_tokens, output_tokens, cost_usd, "
                "latency_ms, run_kind, service, agent, model, created_at, updated_at) VALUES "
                "(:id, :trace, :span, :binding, :binding, '1', :status, 0.5, :reason, :judge, 0, "
                "0, 0.25, 3.5, 'agent', 'shop', :agent, :model, :at, :at)"
            ),
            {
                "id": bytes.fromhex(row_id),
                "trace": bytes.fromhex(TRACE),
                "span": bytes.fromhex(f"{index + 1:016x}"),
                "binding": binding,
                "status": status,
                "reason": REASONS.get(row_id, "why"),
                "judge": judge,
                "agent": agent,
                "model": model,
                "at": moment,
            },
        )


def test_score_names_become_series_and_read_back(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        _seed(connection)
    migrate.upgrade(engine)

    with engine.connect() as connection:
        series = connection.execute(text("SELECT count(*) FROM score_series")).scalar_one()
        assert schema_drift(connection) == []
        stored = {row["id"]: row for row in trace_scores(connection, TRACE)}
        (tone,) = aggregate_scores(connection, ScoreFilter(binding="tone"))
    assert series == 4  # two rows of one series; '' and NULL agents apart
    assert set(stored) == set(NAMED)
    for row_id, (binding, status, agent, model, judge) in NAMED.items():
        row = stored[row_id]
        assert (row["binding"], row["scorer_id"], row["status"]) == (binding, binding, status)
        assert (row["agent"], row["model"], row["judge_model"]) == (agent, model, judge)
        assert (row["service"], row["run_kind"], row["scorer_version"]) == ("shop", "agent", "1")
        assert (row["score"], row["cost_usd"]) == (0.5, 0.25)
        assert row["reason"] == REASONS.get(row_id, "why")
    assert stored["55" * 16]["created_at"] == AT + timedelta(seconds=4)
    assert (tone.attempted, tone.errors, tone.failed_runs) == (3, 1, 1)

    # The store writes a row of a migrated series under that series, not a new one.
    store = open_store(engine.url.render_as_string(hide_password=False))
    try:
        row = stored_score(
            id="66" * 16,
            trace_id=TRACE,
            binding="tone",
            scorer_id="tone",
            status="ok",
            service="shop",
            agent="support",
            model="gpt-4o",
            score=0.25,
        )
        prepared = prepare_scores(store.engine, [row])
        with store.write_transaction() as connection:
            prepared.write(connection)
        with store.engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM score_series")).scalar_one() == 4
            listed, _ = list_scores(connection, ScoreFilter(agent="support", status="ok"), 10)
    finally:
        store.close()
    assert [score["id"] for score in listed] == ["66" * 16, "22" * 16, "11" * 16]
    with engine.connect() as connection:
        packed = connection.execute(
            text("SELECT reason FROM scores WHERE id = :id"), {"id": bytes.fromhex("11" * 16)}
        ).scalar_one()
    if engine.dialect.name == "sqlite":  # PostgreSQL keeps the rows it converted plain
        assert len(packed) < 40
