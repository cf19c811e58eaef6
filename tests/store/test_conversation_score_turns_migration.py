"""Revision ``0011_conversation_score_turns`` on a database of the release before it, on SQLite
and PostgreSQL: the conversation scores it holds are labelled with the turns they covered (the
turns up to the one each score hangs on, or the conversation's count when that turn is gone),
run scores stay unlabelled, and the schema then equals the models."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import Engine, text

from tests.support.schema_drift import drift as schema_drift
from tracescore.store import migrate
from tracescore.store.engine import make_engine

BEFORE = "0010_failure_modes"
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
SCORED_AT_3, ANCHOR_GONE, A_RUN_SCORE = "a3" * 16, "a9" * 16, "a1" * 16
"""Score ids, hex as every stored id is (a later revision keeps them as bytes)."""


def _trace(name: str) -> str:
    """A hex trace id named after a turn (``t3`` → ``…03``)."""
    return f"{'1' if name[0] == 't' else '2'}{int(name[1:]):031x}"


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _conversation(connection: object, conversation_id: str, turns: int) -> None:
    connection.execute(  # type: ignore[attr-defined]
        text(
            "INSERT INTO conversations (conversation_id, turn_count, generation, first_seen, "
            "last_seen, pending_since, state, attempts) "
            "VALUES (:id, :turns, :turns, 0, 0, 0, 'scored', 0)"
        ),
        {"id": conversation_id, "turns": turns},
    )


def _turn(connection: object, conversation_id: str, trace_id: str, start_ns: int) -> None:
    connection.execute(  # type: ignore[attr-defined]
        text(
            "INSERT INTO conversation_turns (conversation_id, trace_id, span_id, start_time_ns, "
            "user_text, answer_text, recorded_at) VALUES (:c, :t, 'a1', :s, 'hi', 'hello', 0)"
        ),
        {"c": conversation_id, "t": _trace(trace_id), "s": start_ns},
    )


def _score(connection: object, score_id: str, trace_id: str, conversation_id: str | None) -> None:
    connection.execute(  # type: ignore[attr-defined]
        text(
            "INSERT INTO scores (id, trace_id, span_id, binding, scorer_id, scorer_version, "
            "status, score, input_tokens, output_tokens, cost_usd, latency_ms, run_kind, "
            "conversation_id, created_at, updated_at) VALUES (:id, :trace, 'a1', 'b', 's', '1', "
            "'ok', 1.0, 0, 0, 0, 0, 'agent', :conversation, :now, :now)"
        ),
        {"id": score_id, "trace": _trace(trace_id), "conversation": conversation_id, "now": NOW},
    )


def test_earlier_conversation_scores_are_labelled_with_their_turns(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        _conversation(connection, "went-on", 4)
        for index in range(4):  # scored at its third turn, then it went on to a fourth
            _turn(connection, "went-on", f"t{index + 1}", 1_000 + index)
        _score(connection, SCORED_AT_3, "t3", "went-on")
        _conversation(connection, "pruned", 2)  # the turn its score hangs on is gone
        _turn(connection, "pruned", "p1", 1_000)
        _score(connection, ANCHOR_GONE, "p2", "pruned")
        _score(connection, A_RUN_SCORE, "t1", None)
    assert "0011_conversation_score_turns" in migrate.upgrade(engine)
    with engine.connect() as connection:
        labelled = {
            bytes(score_id).hex(): turns
            for score_id, turns in connection.execute(
                text("SELECT id, conversation_turns FROM scores")
            )
        }
        drift = schema_drift(connection)
    assert labelled == {SCORED_AT_3: 3, ANCHOR_GONE: 2, A_RUN_SCORE: None}
    assert drift == []
