"""The scores store (``tracescore/store/scores.py``) on both databases: its upserts, what they
make storable, the compact ``{"recompute": true}`` rows, the tallies, and its reads.

The rows are written here by the store's own functions, not by a scoring worker, so a failure
points at the store: the worker's use of it is ``tests/pipeline/test_scoring_worker.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from tests.support.score_rows import stored_score
from tracescore.pipeline.score_rows import RECOMPUTE
from tracescore.store import SpanStore, open_store
from tracescore.store.score_reads import ScoreFilter, list_scores
from tracescore.store.scores import (
    SCORES,
    SamplingDecision,
    SamplingDecisionRow,
    SamplingTallyRow,
    StoredScore,
    add_tallies,
    conversation_scores,
    exported_scores,
    paid_steps,
    recent_scores,
    run_scores,
    score_id,
    score_ids_of,
    stored_spend,
    upsert_decisions,
    upsert_scores,
    version_scores,
)

TRACE = "ab" * 16
NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    opened = open_store(db_url)
    yield opened
    opened.close()


def _score(
    span: str = "1" * 16, binding: str = "helpful", version: str = "1", **values: Any
) -> StoredScore:
    """A score of the trace's run ``span``, ``values`` over this module's defaults."""
    defaults: dict[str, Any] = {
        "scorer_id": "helpfulness",
        "score": 0.5,
        "label": "pass",
        "reason": "fine",
        "latency_ms": 1.0,
        "service": "svc",
        "agent": "WeatherBot",
        "model": "gpt-4o-mini",
        "created_at": NOW,
        "updated_at": NOW,
    }
    return stored_score(
        id=score_id(TRACE, span, binding, version),
        trace_id=TRACE,
        span_id=span,
        binding=binding,
        scorer_version=version,
        **(defaults | values),
    )


def _write(store: SpanStore, *rows: StoredScore) -> int:
    with store.write_transaction() as connection:
        return upsert_scores(connection, rows)


def _stored(store: SpanStore) -> list[dict[str, Any]]:
    with store.engine.connect() as connection:
        return [
            dict(row._mapping) for row in connection.execute(select(SCORES).order_by(SCORES.c.id))
        ]


def test_a_score_written_again_updates_its_row_but_keeps_its_id_and_first_moment(
    store: SpanStore,
) -> None:
    _write(store, _score(score=0.2, reason="first"))
    later = NOW + timedelta(minutes=5)
    _write(store, _score(score=0.9, reason="again", created_at=later, updated_at=later))
    (row,) = _stored(store)
    assert (row["score"], row["reason"]) == (0.9, "again")
    assert row["id"] == score_id(TRACE, "1" * 16, "helpful", "1")
    assert row["created_at"].replace(tzinfo=UTC) == NOW  # kept: when it was first scored
    assert row["updated_at"].replace(tzinfo=UTC) == later
    # Another version is a row of its own, beside the first.
    _write(store, _score(version="2", score=0.4))
    assert sorted((r["scorer_version"], r["score"]) for r in _stored(store)) == [
        ("1", 0.9),
        ("2", 0.4),
    ]


def test_text_a_client_wrote_is_made_storable_and_counted(store: SpanStore) -> None:
    """An agent named with a NUL, a 300-character model and a reason with an unpaired
    surrogate are stored as both databases accept them, not refused with the whole batch."""
    replaced = _write(
        store,
        _score(
            agent="Weather\x00Bot", model="m" * 300, reason="bad \ud800 text", steps={"k": "\ud800"}
        ),
    )
    (row,) = _stored(store)
    assert "\x00" not in row["agent"] and row["agent"].startswith("Weather")
    assert len(row["model"]) == 200 and row["model"].endswith("…")
    assert "\ud800" not in row["reason"] and row["reason"].startswith("bad ")
    assert row["steps"] == {"k": "\ufffd"}
    assert replaced == 3  # the NUL, the surrogate in the reason and the one in the steps


def test_a_compact_row_keeps_its_marker_and_what_no_recomputation_gives_back(
    store: SpanStore,
) -> None:
    compact = {RECOMPUTE: 1, "input_cut": {"chars": 10}}
    _write(store, _score(steps=compact), _score(span="2" * 16, steps={"steps": [{"name": "a"}]}))
    with store.engine.connect() as connection:
        found = run_scores(connection, [TRACE], with_steps=True)[TRACE]
        listed = run_scores(connection, [TRACE])[TRACE]
    assert [row["steps"] for row in found] == [compact, {"steps": [{"name": "a"}]}]
    assert all("steps" not in row for row in listed)
    assert {row["created_at"] for row in found} == {NOW}  # in UTC on both databases


def test_decisions_and_tallies_are_upserts_and_sums(store: SpanStore) -> None:
    decision: SamplingDecision = {
        "id": "d" * 32,
        "trace_id": TRACE,
        "span_id": "1" * 16,
        "binding": "helpful",
        "sampled": False,
        "created_at": NOW,
    }
    # One transaction each, as the worker writes: on PostgreSQL the COPY's staging table is
    # emptied at commit, so a second bulk write of a table in one transaction would meet the
    # first's rows there again.
    with store.write_transaction() as connection:
        upsert_decisions(connection, [decision])
    with store.write_transaction() as connection:
        upsert_decisions(connection, [{**decision, "sampled": True}])
    with store.write_transaction() as connection:
        add_tallies(connection, {"helpful": 2, "other": 1}, NOW + timedelta(seconds=7))
        add_tallies(connection, {"helpful": 3}, NOW + timedelta(seconds=50))
        add_tallies(connection, {}, NOW)
    with store.engine.connect() as connection:
        decisions = connection.execute(select(SamplingDecisionRow.__table__)).all()
        tallies = connection.execute(select(SamplingTallyRow.__table__).order_by("binding")).all()
    assert [row.sampled for row in decisions] == [True]
    assert [(row.binding, row.unsampled, row.minute.replace(tzinfo=UTC)) for row in tallies] == [
        ("helpful", 5, NOW),
        ("other", 1, NOW),
    ]


def test_the_reads_of_each_caller(store: SpanStore) -> None:
    old = NOW - timedelta(days=2)
    _write(
        store,
        _score(
            span="1" * 16, score=0.2, created_at=old, cost_usd=0.5, output_tokens=3, steps={"n": 1}
        ),
        _score(span="2" * 16, score=0.8, cost_usd=0.25),
        _score(span="2" * 16, version="2", score=0.6, label=None),
        _score(
            span="3" * 16, status="error", score=None, cost_usd=1.0, output_tokens=5, steps={"n": 2}
        ),
        _score(span="4" * 16, binding="other", score=0.1),
        _score(span="5" * 16, conversation_id="conv-1", conversation_turns=3),
    )
    with store.engine.connect() as connection:
        recent = recent_scores(connection, "helpful", NOW - timedelta(days=1), limit=2)
        spent = stored_spend(connection, "helpful", NOW - timedelta(days=1))
        paid = paid_steps(connection, "helpfulness", limit=5)
        conversations = conversation_scores(connection, ["conv-1", "conv-2"])
        runs = run_scores(connection, [TRACE])[TRACE]
    # recent_scores: ok scores in the window only, newest first, at most the limit.
    assert len(recent) == 2
    assert {(r["span_id"], r["score"]) for r in recent} <= {
        ("2" * 16, 0.8),
        ("2" * 16, 0.6),
        ("5" * 16, 0.5),
    }
    # stored_spend: what the binding's scores cost since then, errors included.
    assert spent == pytest.approx(0.25 + 1.0)
    # paid_steps: the steps of scores that paid for judge output, newest first.
    assert paid == [{"n": 2}, {"n": 1}]
    # A conversation's own scores apart from its trace's run scores.
    assert (
        list(conversations) == ["conv-1"] and conversations["conv-1"][0]["conversation_turns"] == 3
    )
    assert "5" * 16 not in {r["span_id"] for r in runs} and len(runs) == 5
    # exported_scores: the first ok score of each run since then, oldest first, below a cut.
    everything = exported_scores(store.engine, "helpful", NOW - timedelta(days=3))
    assert [(r.span_id, r.score) for r in everything][:1] == [("1" * 16, 0.2)]
    assert {r.span_id for r in everything} == {"1" * 16, "2" * 16, "5" * 16}
    assert [r.span_id for r in exported_scores(store.engine, "helpful", old, below=0.5)] == [
        "1" * 16
    ]
    # version_scores and score_ids_of: the offline commands' reads.
    versions = version_scores(store.engine, "helpful", ["2"])
    assert [(v.span_id, v.score, v.label) for v in versions] == [("2" * 16, 0.6, None)]
    assert score_ids_of(store.engine, TRACE, ["error"]) == {
        score_id(TRACE, "3" * 16, "helpful", "1")
    }


@pytest.mark.parametrize(
    "where",
    [
        ScoreFilter(),
        ScoreFilter(agent="PlannerBot"),  # several series: a walk of the time index
        ScoreFilter(status="error"),
        ScoreFilter(binding="tone", agent="WeatherBot", status="ok"),  # one series: its range
        ScoreFilter(agent="nobody"),
    ],
    ids=["all", "one-agent", "errors", "one-series", "none"],
)
def test_a_filtered_list_pages_through_exactly_the_matching_rows_newest_first(
    store: SpanStore, where: ScoreFilter
) -> None:
    """Pages of 4 over 60 rows in three agents, two statuses and two bindings, many sharing a
    moment (the cursor's tie on ``id``): together exactly the rows the filter keeps, each
    once, newest first, whichever index the list walked."""
    rows = [
        _score(
            span=f"{index:016x}",
            binding=("tone", "helpful")[index % 2],
            agent=("WeatherBot", "PlannerBot", "MailBot")[index % 3],
            status="error" if index % 7 == 0 else "ok",
            created_at=NOW - timedelta(seconds=index // 3),
        )
        for index in range(60)
    ]
    _write(store, *rows)
    expected = sorted(
        (
            row
            for row in rows
            if all(
                getattr(where, name) in (None, row[column])  # type: ignore[literal-required]
                for name, column in (
                    ("agent", "agent"),
                    ("status", "status"),
                    ("binding", "binding"),
                )
            )
        ),
        key=lambda row: (row["created_at"], row["id"]),
        reverse=True,
    )

    listed: list[str] = []
    cursor = None
    with store.engine.connect() as connection:
        while True:
            page, cursor = list_scores(connection, where, 4, cursor)
            listed += [row["id"] for row in page]
            if cursor is None:
                break

    assert listed == [row["id"] for row in expected]
