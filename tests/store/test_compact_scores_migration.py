"""Revision ``0020_compact_scores`` on a database of the revision before it, on SQLite and
PostgreSQL: ids become their bytes, times integer microseconds, long steps compressed; every
score, decision and tally reads back as it was through the store, the schema equals the models,
and the downgrade gives the earlier form back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from tests.support.schema_drift import drift as schema_drift
from tracescore.store import migrate
from tracescore.store.column_types import from_utc_micros
from tracescore.store.engine import make_engine
from tracescore.store.score_aggregates import coverage
from tracescore.store.score_reads import ScoreFilter, list_scores, trace_scores

BEFORE = "0018_compact_storage"
TRACE, SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
AT = datetime(2026, 12, 1, 9, 30, 15, 123456, tzinfo=UTC)
JUDGED = {
    "steps": [
        {
            "name": "analyze",
            "prompt": "Rate the answer's tone. " * 30,
            "judge_calls": [{"model": "m", "output": "polite, " * 40}],
        }
    ]
}
"""A judge's steps: long and repetitive, as a prompt repeats the run."""
ROWS = {
    "11" * 16: ("tone", "judge-model", JUDGED),
    "22" * 16: ("consistency", None, {"analyze_step_result": {"grounding": {"passed": True}}}),
    "33" * 16: ("keywords", None, {"recompute": True}),
    "44" * 16: ("skipped", None, None),
}


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _time(engine: Engine, moment: datetime) -> object:
    """A time as the revision before stored it: SQLAlchemy's text on SQLite."""
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f") if engine.dialect.name == "sqlite" else moment


def _seed(engine: Engine, connection: Any) -> None:
    for row_id, (binding, judge_model, steps) in ROWS.items():
        connection.execute(
            text(
                "INSERT INTO scores (id, trace_id, span_id, binding, scorer_id, scorer_version, "
                "status, score, reason, steps, judge_model, input_tokens, output_tokens, "
                "cost_usd, latency_ms, run_kind, agent, created_at, updated_at) VALUES (:id, "
                ":trace, :span, :binding, :binding, '1', 'ok', 0.5, 'why', :steps, :judge, 0, 0, "
                "0.25, 3.5, 'agent', 'WeatherBot', :at, :at)"
            ),
            {
                "id": row_id,
                "trace": TRACE,
                "span": SPAN,
                "binding": binding,
                "steps": None if steps is None else json.dumps(steps),
                "judge": judge_model,
                "at": _time(engine, AT),
            },
        )
    connection.execute(
        text(
            "INSERT INTO sampling_decisions (id, trace_id, span_id, binding, sampled, created_at) "
            "VALUES (:id, :trace, :span, 'tone', false, :at)"
        ),
        {"id": "55" * 16, "trace": TRACE, "span": SPAN, "at": _time(engine, AT)},
    )
    connection.execute(
        text("INSERT INTO sampling_tallies (binding, minute, unsampled) VALUES ('tone', :at, 7)"),
        {"at": _time(engine, AT.replace(second=0, microsecond=0))},
    )


def test_scores_read_back_as_they_were_and_are_stored_compact(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        _seed(engine, connection)
    assert "0020_compact_scores" in migrate.upgrade(engine)
    with engine.connect() as connection:
        read = trace_scores(connection, TRACE)
        listed, _ = list_scores(connection, ScoreFilter(since=AT, until=AT.replace(second=16)), 10)
        (tone,) = [found for found in coverage(connection, None, None) if found.binding == "tone"]
        stored = {
            bytes(row_id).hex(): (steps, created_at)
            for row_id, steps, created_at in connection.execute(
                text("SELECT id, steps, created_at FROM scores")
            )
        }
        decision = connection.execute(
            text("SELECT id, trace_id, created_at FROM sampling_decisions")
        ).one()
        drift = schema_drift(connection)
    assert drift == []
    assert {row["id"]: (row["binding"], row["steps"]) for row in read} == {
        row_id: (binding, steps) for row_id, (binding, _, steps) in ROWS.items()
    }
    assert {(row["trace_id"], row["span_id"], row["created_at"]) for row in read} == {
        (TRACE, SPAN, AT)
    }
    assert sorted(row["id"] for row in listed) == sorted(ROWS)
    # Its score (sampled), the unsampled decision and the tally's 7 unsampled traces.
    assert (tone.eligible, tone.sampled) == (9, 1)
    assert all(from_utc_micros(created_at) == AT for _, created_at in stored.values())
    judged, _ = stored["11" * 16]
    assert bytes(judged)[:1] == b"x" and len(judged) < len(json.dumps(JUDGED)) // 3
    short = bytes(stored["33" * 16][0])  # kept as its JSON text: too short to gain
    assert json.loads(short) == {"recompute": True} and short[:1] == b"{"
    assert stored["44" * 16][0] is None
    assert (bytes(decision.id).hex(), bytes(decision.trace_id).hex()) == ("55" * 16, TRACE)
    assert from_utc_micros(decision.created_at) == AT


def test_the_downgrade_gives_the_earlier_form_back(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        _seed(engine, connection)
    with engine.begin() as connection:  # 0019_packed_spans, before it, has no downgrade
        command.upgrade(migrate.alembic_config(connection), "0020_compact_scores")
        command.downgrade(migrate.alembic_config(connection), "0019_packed_spans")
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT id, trace_id, span_id, steps, created_at FROM scores")
        ).all()
        minute = connection.execute(text("SELECT minute FROM sampling_tallies")).scalar_one()
    steps = {
        row.id: json.loads(row.steps) if isinstance(row.steps, str) else row.steps for row in rows
    }
    assert steps == {row_id: steps for row_id, (_, _, steps) in ROWS.items()}
    assert {(row.trace_id, row.span_id) for row in rows} == {(TRACE, SPAN)}
    moments = {
        datetime.fromisoformat(row.created_at)
        if isinstance(row.created_at, str)
        else row.created_at
        for row in rows
    }
    assert {
        moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment for moment in moments
    } == {AT}
    assert str(minute).startswith("2026-12-01 09:30:00")


def test_an_id_that_is_not_hex_fails_the_upgrade_naming_its_table(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        connection.execute(
            text(
                "INSERT INTO sampling_decisions (id, trace_id, span_id, binding, sampled, "
                "created_at) VALUES ('not-hex', :trace, :span, 'tone', true, :at)"
            ),
            {"trace": TRACE, "span": SPAN, "at": _time(engine, AT)},
        )
    with pytest.raises(DBAPIError, match=r"sampling_decisions|hexadecimal"):
        migrate.upgrade(engine)
    assert migrate.schema_state(engine).current == BEFORE
