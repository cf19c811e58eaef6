"""The real insights pass over a real SQLite database: the planted failure modes of the
synthetic stream recovered (adjusted Rand index), named by their terms, tracked across passes,
a mode planted mid-stream firing the failure_mode alert rule; and the same on PostgreSQL."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sklearn.metrics import adjusted_rand_score

from tests.support.failure_modes import planted_run, planted_stream, store_runs
from tracescore.extract.registry import CONVENTIONS
from tracescore.insights.config import InsightsConfig
from tracescore.insights.passes import PassResult, run_pass
from tracescore.monitor.config import FailureModeRule
from tracescore.monitor.rules import evaluate_rule
from tracescore.store import SpanStore, connect, open_store
from tracescore.store.insights import group_runs, list_groups, run_texts

START = 1_800_000_000.0


def _labels(result: PassResult) -> dict[tuple[str, str], str]:
    return {(m["trace_id"], m["span_id"]): m["group_id"] for m in result.memberships}


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


@pytest.fixture
def store(tmp_path: Path) -> SpanStore:
    return open_store(f"sqlite:///{tmp_path / 'insights.db'}")


def test_the_pass_recovers_the_planted_modes_and_names_them(store: SpanStore) -> None:
    runs = planted_stream(per_mode=300, noise=300, start=START)
    store_runs(store, runs)
    result = run_pass(store, InsightsConfig(), CONVENTIONS, now=_at(START + 7200))
    labels = _labels(result)
    found = [labels.get((run.trace_id, run.span_id), "none") for run in runs]
    assert adjusted_rand_score([run.mode for run in runs], found) >= 0.8
    names = {group["name"] for group in result.groups[:3]}
    assert "get_weather timed out, answer apologised" in names
    assert "answered in Spanish to an English question" in names
    assert any(name.startswith("refused the request") for name in names)
    first = next(group for group in result.groups if "timed out" in group["name"])
    assert first["size"] == 300 and first["share"] == pytest.approx(300 / 1200)
    assert sum(first["details"]["trend"]) == 300
    assert first["details"]["flagged_by"] == {"answer-relevancy": 300}
    with connect(store.engine) as connection:  # the runs' texts, kept for the next passes
        assert len(run_texts(connection, [(r.trace_id, r.span_id) for r in runs])) == len(runs)
    # Deterministic: the same runs and settings give the same groups (here from stored texts).
    again = run_pass(store, InsightsConfig(), CONVENTIONS, now=_at(START + 7200), save=False)
    assert [g["id"] for g in again.groups] == [g["id"] for g in result.groups]
    assert _labels(again) == labels


def test_a_mode_planted_mid_stream_is_new_fires_the_alert_and_keeps_its_id(
    store: SpanStore,
) -> None:
    config = InsightsConfig(window=3600)
    rule = FailureModeRule(name="new-mode", type="failure_mode", new_runs=60, window=3600)
    before = [
        r for r in planted_stream(per_mode=120, noise=120, start=START) if r.mode != "refusal"
    ]
    store_runs(store, before)
    first = run_pass(store, config, CONVENTIONS, now=_at(START + 3600))
    planted = [g for g in first.groups if g["size"] >= 60]  # the rest: noise sharing a topic
    assert len(planted) == 2, [g["size"] for g in first.groups]
    with connect(store.engine) as connection:
        verdicts = evaluate_rule(connection, rule, _at(START + 3600 + 600))
    assert {v.segment["failure_mode"] for v in verdicts if v.firing} == {g["id"] for g in planted}
    # An hour later the same two modes go on, and the prompt change starts the refusals.
    rng = random.Random(3)
    later = [
        planted_run(rng, mode, START + 3600 + i * 2)
        for i, mode in enumerate(["lisbon_timeout", "wrong_language", "refusal", "noise"] * 120)
    ]
    store_runs(store, later)
    second = run_pass(store, config, CONVENTIONS, now=_at(START + 7200))
    old_ids = {g["id"] for g in planted}
    new = [g for g in second.groups if g["id"] not in old_ids and g["size"] >= 60]
    assert old_ids <= {g["id"] for g in second.groups} and len(new) == 1
    assert "refused" in new[0]["name"]
    with connect(store.engine) as connection:
        verdicts = {
            v.segment["failure_mode"]: v for v in evaluate_rule(connection, rule, _at(START + 7200))
        }
    assert verdicts[new[0]["id"]].firing
    assert not any(verdicts[group_id].firing for group_id in old_ids)
    assert [v.segment["failure_mode"] for v in verdicts.values() if v.firing] == [new[0]["id"]]
    with connect(store.engine) as connection:
        groups, _ = list_groups(connection, 10, None)
        previous = {g["id"]: g["previous_size"] for g in groups}
        assert all(previous[g["id"]] == g["size"] for g in planted)
        page, cursor = group_runs(connection, new[0]["id"], 50, None)
        assert len(page) == 50 and cursor is not None
        rest, end = group_runs(connection, new[0]["id"], 500, cursor)
        assert len(rest) == 70 and end is None


def test_the_pass_stores_its_groups_on_postgresql(pg_url: str) -> None:
    store = open_store(pg_url)
    runs = planted_stream(per_mode=40, noise=20, start=START, seed=11)
    store_runs(store, runs)
    result = run_pass(store, InsightsConfig(), CONVENTIONS, now=_at(START + 7200))
    with connect(store.engine) as connection:
        groups, _ = list_groups(connection, 10, None)
    assert {g["id"] for g in groups} == {g["id"] for g in result.groups}
    assert sum(g["size"] for g in groups) == len(result.memberships) >= 80
    store.close()


def test_a_window_without_failed_runs_empties_the_current_groups(store: SpanStore) -> None:
    store_runs(store, planted_stream(per_mode=20, noise=0, start=START))
    found = run_pass(store, InsightsConfig(window=3600), CONVENTIONS, now=_at(START + 3600))
    assert len(found.groups) >= 3
    quiet = run_pass(store, InsightsConfig(window=3600), CONVENTIONS, now=_at(START + 86400))
    assert quiet.failed == 0 and quiet.groups == []
    with connect(store.engine) as connection:
        assert list_groups(connection, 10, None)[0] == []
        gone, _ = list_groups(connection, 10, None, include_gone=True)
    assert {g["id"] for g in gone} == {g["id"] for g in found.groups}
    assert all(g["size"] == 0 and g["previous_size"] > 0 for g in gone)
