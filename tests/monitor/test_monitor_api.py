"""The monitoring REST API and /metrics over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from tests.support.live_app import serve_app
from tests.support.score_streams import insert_rows, score_row
from tracescore import metrics
from tracescore.monitor.api import create_monitor_router
from tracescore.monitor.config import MonitorConfig
from tracescore.store import SpanStore, open_store
from tracescore.store.score_aggregates import aggregate_scores
from tracescore.store.score_reads import ScoreFilter
from tracescore.store.scores import upsert_decisions
from tracescore.times import utc_text

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _rows() -> list[dict[str, Any]]:
    """Three hours of mixed scores: two scorers, agents, models, statuses, and tied timestamps."""
    rng = random.Random(7)
    rows = []
    for index in range(240):
        moment = T0 + timedelta(seconds=45 * index)
        status = rng.choices(["ok", "error", "not_scorable", "skipped_budget"], [80, 10, 5, 5])[0]
        rows.append(
            score_row(
                moment,
                round(rng.random(), 4) if status == "ok" else None,
                status=status,
                scorer_id=rng.choice(["answer-relevancy", "toxicity"]),
                binding=rng.choice(["quality", "safety"]),
                agent=rng.choice(["support", "sales", None]),
                model=rng.choice(["gpt-4o", "claude"]),
                service=rng.choice(["shop", "crm"]),
            )
        )
    # Ten rows sharing one timestamp: pagination must neither skip nor repeat them.
    tied = T0 + timedelta(minutes=30, microseconds=123)
    rows += [score_row(tied, 0.5, agent="support") for _ in range(10)]
    return rows


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    store = open_store(db_url)
    yield store
    store.close()


@pytest.fixture
def rows(store: SpanStore) -> list[dict[str, Any]]:
    rows = _rows()
    insert_rows(store.engine, rows)
    return rows


@pytest.fixture
def api(store: SpanStore) -> Iterator[httpx.Client]:
    app = FastAPI()
    app.include_router(create_monitor_router(store.engine, MonitorConfig(max_page_size=500)))
    with serve_app(app) as base_url, httpx.Client(base_url=base_url) as client:
        yield client


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _all_pages(api: httpx.Client, params: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    items, cursor = [], None
    while True:
        paging = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = api.get("/api/scores", params={**params, **paging})
        assert page.status_code == 200, page.text
        body = page.json()
        assert len(body["items"]) <= limit
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items


FILTERS: list[dict[str, Any]] = [
    {},
    {"scorer": "toxicity"},
    {"binding": "safety", "status": "ok"},
    {"agent": "support", "model": "claude"},
    {"service": "crm", "status": "error"},
    {"since": _iso(T0 + timedelta(hours=1)), "until": _iso(T0 + timedelta(hours=2))},
]
_COLUMNS = {
    "scorer": "scorer_id",
    "binding": "binding",
    "status": "status",
    "agent": "agent",
    "model": "model",
    "service": "service",
}


def _matches(row: dict[str, Any], params: dict[str, Any]) -> bool:
    if any(row[_COLUMNS[k]] != v for k, v in params.items() if k in _COLUMNS):
        return False
    if "since" in params and row["created_at"] < datetime.fromisoformat(params["since"]):
        return False
    return not ("until" in params and row["created_at"] >= datetime.fromisoformat(params["until"]))


def test_score_list_filters_and_pages(api: httpx.Client, rows: list[dict[str, Any]]) -> None:
    for params in FILTERS:
        expected = sorted(
            (r for r in rows if _matches(r, params)),
            key=lambda r: (r["created_at"], r["id"]),
            reverse=True,
        )
        assert expected, f"{params} should select something"
        got = _all_pages(api, params, limit=7)
        assert [item["id"] for item in got] == [r["id"] for r in expected], params
        assert datetime.fromisoformat(got[0]["created_at"]) == expected[0]["created_at"]
        assert "steps" not in got[0]
    (with_steps,) = api.get("/api/scores", params={"limit": 1, "steps": "true"}).json()["items"]
    newest = max(rows, key=lambda r: (r["created_at"], r["id"]))
    assert with_steps["id"] == newest["id"] and "steps" in with_steps


def test_score_list_rejects_bad_input(api: httpx.Client, rows: list[dict[str, Any]]) -> None:
    assert api.get("/api/scores", params={"cursor": "not-a-cursor"}).status_code == 422
    assert api.get("/api/scores", params={"limit": 501}).status_code == 422
    assert api.get("/api/scores", params={"status": "nonsense"}).status_code == 422


def _expected_summary(
    rows: list[dict[str, Any]], group_by: str
) -> dict[tuple[Any, ...], dict[str, Any]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        bucket = row["created_at"].replace(minute=0, second=0, microsecond=0)
        groups.setdefault((row["scorer_id"], utc_text(bucket), row[group_by]), []).append(row)
    expected = {}
    for key, members in groups.items():
        scores = [r["score"] for r in members if r["status"] == "ok"]
        attempted = [r for r in members if r["status"] != "skipped_budget"]
        errors = sum(r["status"] == "error" for r in members)
        expected[key] = {
            "count": len(scores),
            "mean": float(np.mean(scores)) if scores else None,
            "p10": float(np.percentile(scores, 10)) if scores else None,
            "p50": float(np.percentile(scores, 50)) if scores else None,
            "p90": float(np.percentile(scores, 90)) if scores else None,
            "errors": errors,
            "error_rate": errors / len(attempted) if attempted else None,
        }
    return expected


def test_summary_per_scorer_bucket_and_agent(api: httpx.Client, rows: list[dict[str, Any]]) -> None:
    response = api.get(
        "/api/scores/summary",
        params={
            "since": _iso(T0),
            "until": _iso(T0 + timedelta(hours=3)),
            "bucket": "1h",
            "group_by": "agent",
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["bucket_seconds"] == 3600 and body["group_by"] == ["agent"]
    expected = _expected_summary(rows, "agent")
    got = {(s["scorer"], s["bucket"], s["agent"]): s for s in body["series"]}
    assert set(got) == set(expected)
    for key, want in expected.items():
        for name, value in want.items():
            assert got[key][name] == (pytest.approx(value) if value is not None else None), (
                key,
                name,
            )


def test_summary_filters_and_validates(api: httpx.Client, rows: list[dict[str, Any]]) -> None:
    body = api.get(
        "/api/scores/summary",
        params={
            "scorer": "toxicity",
            "model": "claude",
            "since": _iso(T0),
            "until": _iso(T0 + timedelta(hours=3)),
            "bucket": "3h",
        },
    ).json()
    scores = [
        r["score"]
        for r in rows
        if r["scorer_id"] == "toxicity" and r["model"] == "claude" and r["status"] == "ok"
    ]
    assert [(s["scorer"], s["count"]) for s in body["series"]] == [("toxicity", len(scores))]
    assert body["series"][0]["mean"] == pytest.approx(np.mean(scores))
    too_many = {"since": _iso(T0), "until": _iso(T0 + timedelta(days=30)), "bucket": "1s"}
    assert api.get("/api/scores/summary", params=too_many).status_code == 422
    assert api.get("/api/scores/summary", params={"bucket": "soon"}).status_code == 422
    assert api.get("/api/scores/summary", params={"group_by": "trace_id"}).status_code == 422


def test_percentiles_in_sql_match_python(pg_url: str) -> None:
    """PostgreSQL's percentile_cont and the Python interpolation SQLite uses give the same values."""
    store = open_store(pg_url)
    try:
        insert_rows(store.engine, _rows())
        where = ScoreFilter(since=T0, until=T0 + timedelta(hours=3))
        with store.engine.connect() as connection:
            results = [
                aggregate_scores(
                    connection,
                    where,
                    ["scorer_id", "model"],
                    bucket_seconds=1800,
                    quantiles=[0.1, 0.5, 0.9, 0.99],
                    sql_quantiles=in_sql,
                )
                for in_sql in (True, False)
            ]
    finally:
        store.close()
    in_sql, in_python = ({(g.group, g.bucket): g for g in result} for result in results)
    assert set(in_sql) == set(in_python) and len(in_sql) >= 8
    for key, group in in_sql.items():
        other = in_python[key]
        assert group.moments == other.moments
        for q, value in group.quantiles.items():
            assert value == pytest.approx(other.quantiles[q], rel=1e-12), (key, q)


def test_a_score_just_before_a_second_ends_falls_in_that_seconds_bucket(db_url: str) -> None:
    """Buckets floor the time as Python does: SQLite's date functions round to the millisecond,
    so a score at hh:mm:05.9996 fell in second 06, beside the next second's scores (the
    overview then drew one point fewer than there were seconds with scores)."""
    store = open_store(db_url)
    late = T0.replace(microsecond=999_600)
    rows = [score_row(late, 0.2), score_row(late + timedelta(microseconds=500), 0.4)]
    try:
        insert_rows(store.engine, rows)
        with store.engine.connect() as connection:
            groups = aggregate_scores(
                connection, ScoreFilter(since=T0, until=T0 + timedelta(minutes=1)), bucket_seconds=1
            )
    finally:
        store.close()
    assert sorted((g.start, g.moments.n) for g in groups) == [
        (late.replace(microsecond=0), 1),
        (late.replace(microsecond=0) + timedelta(seconds=1), 1),
    ]


def test_coverage_counts_eligible_sampled_scored(api: httpx.Client, store: SpanStore) -> None:
    moment = T0 + timedelta(minutes=5)
    decisions = [
        {
            "id": f"d{i}",
            "trace_id": f"f{i}",
            "span_id": "5a",
            "binding": "quality",
            "sampled": i % 2 == 0,
            "created_at": moment,
        }
        for i in range(10)
    ]
    scores = [
        # run f0 has two scorers under one binding: still one scored run
        score_row(moment, 0.9, trace_id="f0", span_id="5a"),
        score_row(moment, 0.8, trace_id="f0", span_id="5a", scorer_id="toxicity"),
        score_row(moment, 0.7, trace_id="f2", span_id="5a"),
        score_row(moment, None, trace_id="f4", span_id="5a", status="error"),
        score_row(moment, None, trace_id="f6", span_id="5a", status="skipped_budget"),
    ]
    with store.engine.begin() as connection:
        upsert_decisions(connection, decisions)
    insert_rows(store.engine, scores)
    body = api.get(
        "/api/coverage", params={"since": _iso(T0), "until": _iso(T0 + timedelta(hours=1))}
    ).json()
    (quality,) = body["bindings"]
    assert quality == {
        "binding": "quality",
        "eligible": 10,
        "sampled": 5,
        "scored": 2,
        "statuses": {"ok": 3, "error": 1, "skipped_budget": 1},
        "sample_rate": 0.5,
        "scored_rate": 0.4,
        "cascade": None,  # no after: binding
    }
    outside = api.get("/api/coverage", params={"since": _iso(T0 + timedelta(hours=1))}).json()
    assert outside["bindings"] == []


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_endpoint_exports_pipeline_and_judge_series(api: httpx.Client) -> None:
    before = _samples(api.get("/metrics").text)
    metrics.observe_score("quality", "answer-relevancy", "ok", 0.85, 1.5)
    metrics.observe_score("quality", "answer-relevancy", "error", None, 0.2)
    metrics.judge_call("gpt-4o-mini", 120, 30, 0.0021, 0.8)
    metrics.sampling_decision("quality", sampled=False)
    metrics.spans_received.labels("http").inc(5)
    metrics.queue_depth.set(17)
    response = api.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    after = _samples(response.text)

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after[key] - before.get(key, 0.0)

    assert (
        delta("tracescore_scores_total", binding="quality", scorer="answer-relevancy", status="ok")
        == 1
    )
    assert (
        delta(
            "tracescore_scores_total", binding="quality", scorer="answer-relevancy", status="error"
        )
        == 1
    )
    assert (
        delta("tracescore_score_bucket", binding="quality", scorer="answer-relevancy", le="0.8")
        == 0
    )
    assert (
        delta("tracescore_score_bucket", binding="quality", scorer="answer-relevancy", le="0.9")
        == 1
    )
    assert delta("tracescore_score_count", binding="quality", scorer="answer-relevancy") == 1
    assert (
        delta(
            "tracescore_scorer_latency_seconds_count", binding="quality", scorer="answer-relevancy"
        )
        == 2
    )
    assert delta("tracescore_judge_tokens_total", model="gpt-4o-mini", direction="input") == 120
    assert delta("tracescore_judge_cost_usd_total", model="gpt-4o-mini") == pytest.approx(0.0021)
    assert delta("tracescore_judge_latency_seconds_sum", model="gpt-4o-mini") == pytest.approx(0.8)
    assert delta("tracescore_sampling_decisions_total", binding="quality", sampled="false") == 1
    assert delta("tracescore_spans_received_total", transport="http") == 5
    assert after[("tracescore_queue_depth", ())] == 17
    assert all(name.startswith(("tracescore_", "process_", "python_")) for name, _ in after)
