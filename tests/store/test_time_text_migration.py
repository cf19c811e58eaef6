"""Revision ``0015_sqlite_time_text`` on a database of the release before it, on SQLite and
PostgreSQL: score rows and sampling decisions the bulk writer stored with ``+00:00`` text (on
SQLite) are rewritten into the one form bound times take, so a page of scores cut inside a run of
equal times goes on with the rest of the run, and a range cut exactly at a stored time keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from alembic import command
from sqlalchemy import Engine, text

from tracescore.store import migrate
from tracescore.store.engine import make_engine
from tracescore.store.score_reads import ScoreFilter, list_scores

BEFORE = "0014_score_label_length"
WHOLE = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
FRACTION = WHOLE + timedelta(microseconds=123)
ROWS = 60


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _stored_as_before(engine: Engine, moment: datetime) -> object:
    """The value the bulk writer of the release before handed the driver: on SQLite the
    driver's own text of an aware time (``… 12:00:00+00:00``)."""
    return str(moment) if engine.dialect.name == "sqlite" else moment


def _score(connection: object, index: int, moment: object) -> None:
    connection.execute(  # type: ignore[attr-defined]
        text(
            "INSERT INTO scores (id, trace_id, span_id, binding, scorer_id, scorer_version, "
            "status, score, input_tokens, output_tokens, cost_usd, latency_ms, run_kind, "
            "created_at, updated_at) VALUES (:id, :id, 'a1', 'b', 's', '1', 'ok', 1.0, 0, 0, 0, "
            "0, 'agent', :at, :at)"
        ),
        {"id": f"{index:032d}", "at": moment},
    )


def test_earlier_time_text_pages_and_ranges_right(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        for index in range(ROWS):
            _score(connection, index, _stored_as_before(engine, (WHOLE, FRACTION)[index % 2]))
        connection.execute(
            text(
                "INSERT INTO sampling_decisions (id, trace_id, span_id, binding, sampled, "
                "created_at) VALUES (:d, :d, 'a1', 'b', true, :at)"
            ),
            {"d": "d" * 32, "at": _stored_as_before(engine, WHOLE)},
        )
        command.upgrade(migrate.alembic_config(connection), "0015_sqlite_time_text")
        if engine.dialect.name == "sqlite":
            texts = connection.execute(
                text(
                    "SELECT created_at FROM scores UNION SELECT updated_at FROM scores "
                    "UNION SELECT created_at FROM sampling_decisions"
                )
            ).scalars()
            assert sorted(texts) == ["2026-11-27 12:00:00.000000", "2026-11-27 12:00:00.000123"]
    migrate.upgrade(engine)  # to the models' schema, which the reads below are written for
    with engine.connect() as connection:
        seen: list[str] = []
        cursor = None
        for _ in range(ROWS):
            page, cursor = list_scores(connection, ScoreFilter(), 7, cursor)
            seen += [row["id"] for row in page]
            if cursor is None:
                break
        exactly_whole = ScoreFilter(since=WHOLE, until=FRACTION)
        in_range, _ = list_scores(connection, exactly_whole, ROWS)
    assert sorted(seen) == [f"{index:032d}" for index in range(ROWS)]
    assert len(in_range) == ROWS // 2
