"""The feedback API over the real app, on SQLite and PostgreSQL: recording, listing and deleting
verdicts, calibration figures against a direct computation, and the review queue's rules."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.feedback_support import kappa_of, pearson, ranks
from tests.support.score_streams import insert_rows, score_row
from tracescore.config import Config, parse_config
from tracescore.service import create_app
from tracescore.store import SpanStore, open_store

API_KEY = "feedback-test-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
CONFIG = """
server: {{api_keys: [{key}]}}
scorers:
  - {{name: quality, scorer: completeness, threshold: 0.6}}
  - {{name: tone, scorer: tone}}
feedback:
  review: {{near_threshold: 0.05, disagreement: 0.5, new_version_reviews: 3, random_share: {share}}}
"""
PRIORITY = ["random", "near_threshold", "disagreement", "new_version"]


def _config(random_share: float = 0.25) -> Config:
    return parse_config(CONFIG.format(key=API_KEY, share=random_share))


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    store = open_store(db_url)
    yield store
    store.close()


@pytest.fixture
def client(store: SpanStore) -> TestClient:
    return TestClient(create_app(_config(), store), headers=AUTH)


def _trace() -> str:
    return uuid.uuid4().hex


def test_a_verdict_is_recorded_replaced_by_its_author_listed_and_deleted(
    client: TestClient,
) -> None:
    trace, span = _trace(), "ab" * 8
    first = client.post(
        "/api/feedback",
        json={
            "trace_id": trace.upper(),
            "span_id": span,
            "binding": "quality",
            "value": 0.2,
            "label": "fail",
            "comment": "made up the refund policy",
            "author": "ana",
        },
    )
    assert first.status_code == 201, first.text
    again = client.post(
        "/api/feedback",
        json={
            "trace_id": trace,
            "span_id": span,
            "binding": "quality",
            "label": "pass",
            "author": "ana",
        },
    )
    assert again.status_code == 201 and again.json()["id"] == first.json()["id"]
    other = client.post(
        "/api/feedback",
        json={
            "trace_id": trace,
            "span_id": span,
            "name": "thumbs",
            "label": "thumbs_up",
            "author": "ana",
        },
    )
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]

    listed = client.get("/api/feedback", params={"trace_id": trace}).json()["feedback"]
    assert len(listed) == 2
    (quality,) = [item for item in listed if item["name"] == "quality"]
    # The second post replaced the first: the label it sent, the value and comment it left out.
    assert quality | {"created_at": None} == {
        "id": first.json()["id"],
        "trace_id": trace,
        "span_id": span,
        "name": "quality",
        "value": None,
        "label": "pass",
        "comment": None,
        "author": "ana",
        "source": "api",
        "created_at": None,
    }
    assert [
        i["name"]
        for i in client.get("/api/feedback", params={"binding": "thumbs"}).json()["feedback"]
    ] == ["thumbs"]
    assert client.get("/api/feedback", params={"since": "1h"}).json()["feedback"] != []
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert client.get("/api/feedback", params={"since": future}).json()["feedback"] == []

    assert client.delete(f"/api/feedback/{first.json()['id']}").status_code == 204
    assert client.delete(f"/api/feedback/{first.json()['id']}").status_code == 404
    assert [
        i["name"]
        for i in client.get("/api/feedback", params={"trace_id": trace}).json()["feedback"]
    ] == ["thumbs"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"binding": "quality"}, "value"),
        ({"binding": "quality", "name": "x", "value": 1}, "not both"),
        ({"value": 1}, "binding"),
        ({"binding": "nope", "value": 1}, "no binding named"),
        ({"binding": "quality", "value": 1, "trace_id": "xyz"}, "trace_id"),
        ({"binding": "quality", "value": 1, "span_id": "12"}, "span_id"),
    ],
)
def test_incomplete_or_unknown_verdicts_are_refused(
    client: TestClient, body: dict[str, Any], problem: str
) -> None:
    response = client.post("/api/feedback", json={"trace_id": _trace(), **body})
    assert response.status_code == 422
    assert problem in response.text


def test_the_api_key_guards_writes_and_reads(store: SpanStore) -> None:
    anonymous = TestClient(create_app(_config(), store))
    body = {"trace_id": _trace(), "binding": "quality", "value": 1}
    assert anonymous.post("/api/feedback", json=body).status_code == 401
    assert anonymous.get("/api/feedback").status_code == 401
    assert anonymous.get("/api/calibration", params={"binding": "quality"}).status_code == 401
    assert anonymous.post("/api/feedback", json=body, headers=AUTH).status_code == 201


def _scored_runs(
    store: SpanStore, rng: random.Random, n: int, **fields: Any
) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    rows = [
        score_row(
            now - timedelta(minutes=rng.randrange(1, 600)),
            round(rng.random(), 2),
            binding="quality",
            **fields,
        )
        for _ in range(n)
    ]
    insert_rows(store.engine, rows)
    return rows


def _expected(pairs: list[tuple[float, float]], threshold: float) -> dict[str, Any]:
    scores, values = [s for s, _ in pairs], [v for _, v in pairs]
    cells = {(j, h): 0 for j in (True, False) for h in (True, False)}
    for score, value in pairs:
        cells[(score >= threshold, value >= threshold)] += 1
    return {
        "n": len(pairs),
        "mae": sum(abs(s - v) for s, v in pairs) / len(pairs),
        "spearman": pearson(ranks(scores), ranks(values)),
        "kappa": kappa_of(cells),
    }


def test_calibration_matches_a_direct_computation_per_version_and_judge(
    client: TestClient, store: SpanStore
) -> None:
    rng = random.Random(24)
    groups = {("1", "gpt-4o-mini"): 0.1, ("2", "gpt-4o-mini"): 0.3, ("2", "claude-haiku"): 0.05}
    expected_pairs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    recent_pairs: list[tuple[float, float]] = []  # of scores made in the last five hours
    for (version, judge), noise in groups.items():
        rows = _scored_runs(store, rng, 40, scorer_version=version, judge_model=judge)
        pairs = []
        for row in rows[:30]:  # ten runs of each group have no feedback: not paired
            value = round(min(1.0, max(0.0, row["score"] + rng.gauss(0, noise))), 2)
            response = client.post(
                "/api/feedback",
                json={
                    "trace_id": row["trace_id"],
                    "span_id": row["span_id"],
                    "binding": "quality",
                    "value": value,
                    "author": "reviewer",
                },
            )
            assert response.status_code == 201
            pairs.append((row["score"], value))
            if row["created_at"] >= datetime.now(UTC) - timedelta(hours=5):
                recent_pairs.append((row["score"], value))
        expected_pairs[(version, judge)] = pairs
    # Feedback on a trace as a whole (no span) pairs with its scored run, and another
    # binding's scores and errors never pair.
    (whole,) = _scored_runs(store, rng, 1, scorer_version="1", judge_model="gpt-4o-mini")
    client.post(
        "/api/feedback", json={"trace_id": whole["trace_id"], "binding": "quality", "value": 0.5}
    )
    expected_pairs[("1", "gpt-4o-mini")].append((whole["score"], 0.5))
    if whole["created_at"] >= datetime.now(UTC) - timedelta(hours=5):
        recent_pairs.append((whole["score"], 0.5))
    insert_rows(
        store.engine,
        [
            score_row(
                datetime.now(UTC),
                None,
                binding="quality",
                trace_id=whole["trace_id"],
                span_id="ff" * 8,
            )
        ],
    )

    report = client.get("/api/calibration", params={"binding": "quality"}).json()
    assert report["threshold"] == 0.6  # the binding's
    by_group = {(g["scorer_version"], g["judge_model"]): g for g in report["groups"]}
    assert set(by_group) == set(groups)
    for key, pairs in expected_pairs.items():
        expected = _expected(pairs, 0.6)
        figures = by_group[key]
        assert figures["n"] == expected["n"]
        assert figures["mae"] == pytest.approx(expected["mae"], abs=1e-9)
        assert figures["spearman"] == pytest.approx(expected["spearman"], abs=1e-9)
        assert figures["kappa"] == pytest.approx(expected["kappa"], abs=1e-9)
        assert figures["kappa_ci"][0] <= figures["kappa"] <= figures["kappa_ci"][1]
        assert sum(figures["confusion"].values()) == expected["n"]
    everything = [pair for pairs in expected_pairs.values() for pair in pairs]
    assert report["overall"]["n"] == len(everything) == 91
    assert report["overall"]["kappa"] == pytest.approx(
        _expected(everything, 0.6)["kappa"], abs=1e-9
    )
    # The noisier version agrees worse: what the report is for.
    assert by_group[("2", "gpt-4o-mini")]["mae"] > by_group[("2", "claude-haiku")]["mae"]

    only_two = client.get(
        "/api/calibration", params={"binding": "quality", "scorer_version": "2", "threshold": 0.3}
    ).json()
    assert only_two["overall"]["n"] == 60 and only_two["threshold"] == 0.3
    two = expected_pairs[("2", "gpt-4o-mini")] + expected_pairs[("2", "claude-haiku")]
    assert only_two["overall"]["kappa"] == pytest.approx(_expected(two, 0.3)["kappa"], abs=1e-9)
    # since: the scores made in the period, whenever their verdicts came.
    recent = client.get("/api/calibration", params={"binding": "quality", "since": "5h"}).json()
    assert 0 < recent["overall"]["n"] == len(recent_pairs) < 90
    assert recent["overall"]["mae"] == pytest.approx(_expected(recent_pairs, 0.6)["mae"], abs=1e-9)
    assert (
        client.get("/api/calibration", params={"binding": "quality", "since": "bad"}).status_code
        == 422
    )


def test_the_review_queue_proposes_unreviewed_runs_by_its_rules(
    client: TestClient, store: SpanStore
) -> None:
    now = datetime.now(UTC)
    trace = _trace()
    near = score_row(now, 0.62, binding="quality", scorer_version="1")
    far = [score_row(now, 0.95, binding="quality", scorer_version="1") for _ in range(6)]
    # Two bindings disagreeing on one run.
    judged = score_row(
        now, 0.9, binding="quality", scorer_version="1", trace_id=trace, span_id="cd" * 8
    )
    toned = score_row(
        now, 0.1, binding="tone", scorer_version="1", trace_id=trace, span_id="cd" * 8
    )
    fresh = score_row(now, 0.99, binding="quality", scorer_version="2")
    stale = score_row(now - timedelta(days=30), 0.6, binding="quality", scorer_version="1")
    insert_rows(store.engine, [near, *far, judged, toned, fresh, stale])
    # Version 1 has three reviewed runs (enough), version 2 none.
    for row in far[:3]:
        client.post(
            "/api/feedback",
            json={
                "trace_id": row["trace_id"],
                "span_id": row["span_id"],
                "binding": "quality",
                "label": "pass",
            },
        )

    # Without a random share, each rule's runs come first; what is left is drawn at random.
    by_rules = TestClient(create_app(_config(random_share=0), store), headers=AUTH)
    runs = by_rules.get("/api/review-queue", params={"limit": 20}).json()["runs"]
    why = {(r["trace_id"], r["binding"]): r["why"] for r in runs}
    assert len(runs) == len(why)  # each run once
    assert why == {
        (near["trace_id"], "quality"): "near_threshold",
        (trace, "quality"): "disagreement",
        (trace, "tone"): "disagreement",
        (fresh["trace_id"], "quality"): "new_version",
        **{(row["trace_id"], "quality"): "random" for row in far[3:]},
    }  # neither the reviewed runs nor the one older than the window
    fill_order = [*PRIORITY[1:], "random"]
    assert [fill_order.index(r["why"]) for r in runs] == sorted(
        fill_order.index(r["why"]) for r in runs
    )
    assert all(
        r["review_url"] == f"/ui/review/{r['trace_id']}?span={r['span_id']}&binding={r['binding']}"
        for r in runs
    )

    # A short queue keeps its random share (a quarter of 4: one) and gives the rest to the rules.
    short = client.get("/api/review-queue", params={"limit": 4}).json()["runs"]
    assert len(short) == 4 and short[0]["why"] == "random"
    assert [PRIORITY.index(r["why"]) for r in short[1:]] == sorted(
        PRIORITY.index(r["why"]) for r in short[1:]
    )
    assert {
        r["binding"]
        for r in client.get("/api/review-queue", params={"binding": "tone"}).json()["runs"]
    } == {"tone"}


def test_verdicts_page_with_a_cursor_without_gaps_or_repeats(client: TestClient) -> None:
    trace = _trace()
    for author in ("a", "b", "c", "d", "e"):
        posted = client.post(
            "/api/feedback",
            json={"trace_id": trace, "binding": "quality", "value": 0.5, "author": author},
        )
        assert posted.status_code == 201, posted.text
    everything = client.get("/api/v1/feedback", params={"trace_id": trace}).json()
    assert everything["next_cursor"] is None and len(everything["items"]) == 5
    seen, cursor = [], None
    while True:
        page = client.get(
            "/api/v1/feedback",
            params={"trace_id": trace, "limit": 2, **({"cursor": cursor} if cursor else {})},
        ).json()
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [item["id"] for item in everything["items"]]
    assert {item["binding"] for item in everything["items"]} == {"quality"}
    assert client.get("/api/v1/feedback", params={"cursor": "nonsense"}).status_code == 422
