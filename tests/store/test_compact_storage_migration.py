"""Revision ``0018_compact_storage`` on rows of the release before, on SQLite and PostgreSQL: a
code score's steps become the marker (keeping ``input_cut``, ``cascade`` and ``trigger``), and
what cannot be computed again is left as it was: a judge's steps, ``consistency``'s (read by
insights in SQL), an error's, a conversation's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, inspect, text

from tracescore.store import migrate
from tracescore.store.engine import make_engine

BEFORE = "0017_failure_signatures"
STEPS = {
    "failed_step": None,
    "preprocess_step_result": {"words": 3},
    "steps": [{"name": "preprocess", "result": {"words": 3, "cascade": "a nested key"}}],
}
CUT = {"max_chars": 10, "input_chars": 20, "output_chars": 5}
CASCADE = {"kind": "flagged", "after": None}


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _score(connection: Any, row_id: str, steps: Any, **columns: Any) -> None:
    values = {
        "status": "ok",
        "scorer_id": "tone-scorer",
        "judge_model": None,
        "input_tokens": 0,
        "conversation_id": None,
        **columns,
    }
    connection.execute(
        text(
            "INSERT INTO scores (id, trace_id, span_id, binding, scorer_id, scorer_version, "
            "status, score, steps, judge_model, input_tokens, output_tokens, cost_usd, "
            "latency_ms, run_kind, conversation_id, created_at, updated_at) VALUES (:id, 't', "
            "'s', 'b', :scorer_id, '1', :status, 1.0, :steps, :judge_model, :input_tokens, 0, "
            "0, 0, 'agent', :conversation_id, '2026-12-01 00:00:00', '2026-12-01 00:00:00')"
        ),
        {"id": row_id, "steps": None if steps is None else json.dumps(steps), **values},
    )


def test_code_steps_become_the_marker_and_the_rest_stays(engine: Engine) -> None:
    judged = {**STEPS, "steps": [{"name": "analyze", "judge_calls": [{"model": "m"}]}]}
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        _score(connection, "code", STEPS)
        _score(connection, "kept", {**STEPS, "input_cut": CUT, "cascade": CASCADE})
        _score(connection, "judge", judged, judge_model="m", input_tokens=40)
        _score(connection, "consistency", STEPS, scorer_id="consistency")
        _score(connection, "error", STEPS, status="error")
        _score(connection, "conversation", STEPS, conversation_id="c1")
        _score(connection, "skipped", None, status="skipped_budget")
    with engine.begin() as connection:  # this revision's work (a later one stores ids as bytes)
        command.upgrade(migrate.alembic_config(connection), "0018_compact_storage")
    with engine.connect() as connection:
        stored = {
            row_id: json.loads(steps) if isinstance(steps, str) else steps
            for row_id, steps in connection.execute(text("SELECT id, steps FROM scores"))
        }
    assert stored == {
        "code": {"recompute": True},
        "kept": {"recompute": True, "input_cut": CUT, "cascade": CASCADE},
        "judge": judged,
        "consistency": STEPS,
        "error": STEPS,
        "conversation": STEPS,
        "skipped": None,
    }
    (index,) = [
        found
        for found in inspect(engine).get_indexes("scores")
        if found["name"] == "ix_scores_conversation"
    ]
    options = index.get("dialect_options", {})
    where = options.get("sqlite_where", options.get("postgresql_where"))
    assert "conversation_id IS NOT NULL" in str(where)
