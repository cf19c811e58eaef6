"""Scoring (``tracescore/pipeline/scoring.py``) and its routing (``pipeline/route.py``) on real
captures, with no store: the live worker's routing and the offline commands' agree (boosts
included), rows come back in the bindings' order with every decision counted, a synchronous
scorer is held to its time budget only live, and offline scoring leaves a shared store's
queue alone (issue 51)."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from tests.support.paths import CAPTURES
from tracescore.config import parse_config
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.ingest.files import load_traces
from tracescore.offline.rescore import Backfill
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.boost import Boosts
from tracescore.pipeline.config import BudgetConfig, ScorerBinding, WorkersConfig
from tracescore.pipeline.route import Routed
from tracescore.pipeline.scoring import Scoring
from tracescore.pipeline.scoring_task import build_worker
from tracescore.store import open_store
from tracescore.store.scores import StoredScore

ANSWER = "tests.support.custom_scorers:answer_present"
CAPTURES_USED = [
    CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent",  # WeatherBot
    CAPTURES / "pydantic-ai",
    CAPTURES / "openllmetry-openai" / "plain_chat",
]


class Recorded:
    """The metrics a :class:`Scoring` records, kept to be read back."""

    def __init__(self) -> None:
        self.decisions: Counter[tuple[str, bool]] = Counter()
        self.scores: list[tuple[str, str]] = []

    def sampling_decision(self, binding: str, sampled: bool, count: int = 1) -> None:
        self.decisions[binding, sampled] += count

    def observe_score(
        self, binding: str, scorer: str, status: str, score: float | None, latency_seconds: float
    ) -> None:
        self.scores.append((binding, status))

    def judge_call(self, *args: Any, **kwargs: Any) -> None: ...

    def traces_done(self, count: int) -> None: ...

    def text_values_replaced(self, where: str, count: int) -> None: ...

    def trace_unread(self, service: str, reason: str, count: int = 1) -> None: ...

    def trace_read_elsewhere(self, service: str, count: int = 1) -> None: ...

    def traces_failed(self, reason: str, count: int) -> None: ...

    def stale_completions(self, count: int) -> None: ...


def _bindings(*specs: dict[str, Any]) -> list[ScorerBinding]:
    return [ScorerBinding.model_validate(spec) for spec in specs]


def _runs() -> list[AgentRun]:
    return [run for trace in load_traces(CAPTURES_USED) for run in extract_runs(trace)]


def _key(row: StoredScore) -> tuple[str, str, str, str]:
    return (row["binding"], row["trace_id"], row["span_id"], row["status"])


def test_live_and_offline_routing_sample_alike_with_a_boost_firing_for_one_agent() -> None:
    """A binding sampling nothing, boosted to every run while its rule fires for WeatherBot:
    the offline path and the live one (each trace decided at the ceiling first, then each
    run at its agent's rate) score WeatherBot's runs only, and decide the others alike."""
    configs = _bindings(
        {
            "name": "boosted",
            "scorer": ANSWER,
            "sampling": {"rate": 0.0, "boost": {"rate": 1.0, "while": "bad-answers"}},
        },
        {"name": "always", "scorer": ANSWER},
    )

    def firing(rules: Any) -> dict[str, list[dict[str, Any]]]:
        return {"bad-answers": [{"agent": "WeatherBot"}]}

    scoring = Scoring(
        compile_bindings(configs, {}, None), WorkersConfig(), boosts=Boosts(configs, firing, 3.0)
    )
    runs = _runs()
    offline, decisions = asyncio.run(scoring.score_runs(runs))
    boosted = [row for row in offline if row["binding"] == "boosted"]
    assert boosted and {row["agent"] for row in boosted} == {"WeatherBot"}
    assert decisions and all(d["binding"] == "boosted" and not d["sampled"] for d in decisions)

    now = datetime.now(UTC)
    live = Routed()
    for trace_id in dict.fromkeys(run.trace_id for run in runs):
        trace = Routed()
        ceilings = scoring.router.ceilings()
        assert ceilings == [1.0, 1.0]  # the rule fires: WeatherBot's runs may be sampled
        verdicts = [rate >= 1.0 for rate in ceilings]
        scoring.router.route(
            [r for r in runs if r.trace_id == trace_id], trace, now, verdicts=verdicts
        )
        live.rows += trace.rows
        live.decisions += trace.decisions
        assert not trace.later  # code scorers: all scored in the pass
    assert sorted(map(_key, live.rows)) == sorted(map(_key, offline))
    assert sorted(d["id"] for d in live.decisions) == sorted(d["id"] for d in decisions)


def test_score_runs_gives_rows_in_binding_order_counts_decisions_and_publishes() -> None:
    configs = _bindings(
        {"name": "half", "scorer": ANSWER, "sampling": {"rate": 0.5}},
        {"name": "gate", "scorer": "tests.support.custom_scorers:length_at_least"},
        {"name": "after-gate", "scorer": ANSWER, "after": {"binding": "gate", "below": 2}},
    )
    recorded = Recorded()
    emitted: list[StoredScore] = []
    scoring = Scoring(
        compile_bindings(configs, {}, None), WorkersConfig(), metrics=recorded, emit=emitted.append
    )
    # Cascades come after their upstream, whatever the order they were written in.
    assert [binding.name for binding in scoring.bindings] == ["half", "gate", "after-gate"]
    runs = _runs()
    rows, decisions = asyncio.run(scoring.score_runs(runs))
    order = [row["binding"] for row in rows]
    assert order == sorted(order, key=["half", "gate", "after-gate"].index)
    eligible = len(scoring.bindings[0].eligible(runs))
    unsampled = len(decisions)
    assert 0 < unsampled < eligible  # half of the traces, by their ids
    assert recorded.decisions == {
        ("half", False): unsampled,
        ("half", True): eligible - unsampled,
        ("gate", True): eligible,
        ("after-gate", True): eligible,
    }
    cascade = [row for row in rows if row["binding"] == "after-gate"]
    assert len(cascade) == eligible and all(row["steps"]["cascade"] for row in cascade)
    assert recorded.scores == [] and emitted == []  # scoring stores and publishes nothing
    scoring.publish(rows)
    assert [row["id"] for row in emitted] == [row["id"] for row in rows]
    assert recorded.scores == [(row["binding"], row["status"]) for row in rows]


def test_a_synchronous_scorer_is_held_to_its_time_budget_only_when_timed() -> None:
    configs = _bindings(
        {
            "name": "spin",
            "scorer": "tests.support.custom_scorers:spinning_for_weatherbot",
            "options": {"seconds": 1.5},
            "target": "trace",
        }
    )
    budget = WorkersConfig(budget=BudgetConfig(scorer_seconds=0.2))
    weatherbot = [run for run in _runs() if run.agent_name == "WeatherBot"]
    statuses = {}
    for timed in (True, False):
        scoring = Scoring(compile_bindings(configs, {}, None), budget, timed=timed)
        rows, _ = asyncio.run(scoring.score_runs(weatherbot))
        statuses[timed] = [(row["status"], (row["error"] or "")[:12]) for row in rows]
    assert statuses == {True: [("error", "stopped afte")], False: [("ok", "")]}


def test_offline_scoring_leaves_the_shared_queue_alone(sqlite_url: str) -> None:
    """Issue 51: building the worker set the queue's hooks from its constructor, so a backfill
    on the service's store (which built one) changed what promotion skipped. Only
    :func:`build_worker`, where a worker meets its store, sets them now."""
    store = open_store(sqlite_url)
    try:
        config = parse_config(
            f"scorers:\n  - {{name: a, scorer: '{ANSWER}', sampling: {{rate: 0.5}}}}\n"
        )
        bindings = compile_bindings(config.scorers, {}, None)
        Backfill(store, bindings)
        assert (store.queue.sampling, store.queue.on_failed, store.queue.on_skipped) == (None,) * 3
        build_worker(config.scoring(), store)
        assert store.queue.sampling is not None and store.queue.sampling.bindings == ("a",)
        assert store.queue.on_failed is not None and store.queue.on_skipped is not None
    finally:
        store.close()
