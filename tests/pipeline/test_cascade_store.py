"""A cascade scored by the worker on a real store, SQLite and PostgreSQL: the runs its upstream
flagged are scored, the others stored as ``skipped_cascade``, and coverage (SQL over the rows'
``steps.cascade``, on each dialect) gives every stage; the offline path decides the same."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.paths import CAPTURES
from tracescore.config import parse_config
from tracescore.extract import extract_runs
from tracescore.ingest.files import load_traces
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.config import WorkersConfig
from tracescore.pipeline.scoring import Scoring
from tracescore.pipeline.scoring_task import build_worker
from tracescore.store import open_store
from tracescore.store.score_aggregates import coverage
from tracescore.store.score_reads import trace_scores

TRACES = [
    CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent",
    CAPTURES / "openllmetry-openai" / "plain_chat",
    CAPTURES / "pydantic-ai",
]
CONFIG = """
scorers:
  - name: short
    scorer: tests.support.custom_scorers:answer_present
    after: {binding: long-enough, below: 0.5}
  - name: long-enough
    scorer: tests.support.custom_scorers:length_at_least
    options: {minimum: 100}
  - name: every-run
    scorer: tests.support.custom_scorers:answer_present
    after: {binding: long-enough, below: 2}
"""


def _decided(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Each run's outcome for the cascade binding: its trigger, or ``skipped_cascade``."""
    return {
        row["trace_id"]: row["steps"]["cascade"]["trigger"]
        if row["status"] == "ok"
        else row["status"]
        for row in rows
        if row["binding"] == "short"
    }


def test_a_cascade_on_the_store_scores_the_flagged_runs_and_coverage_counts_each_stage(
    db_url: str,
) -> None:
    store = open_store(db_url)
    traces = load_traces(TRACES)
    for trace in traces:
        store.write(trace.spans, trace.logs)
    config = parse_config(CONFIG)
    worker = build_worker(config.scoring(), store)

    async def score_all() -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for claim in store.queue.claim(worker.owner, 100, 30.0, now=4_000_000_000.0):
            rows.extend(await worker.process(claim))
        return rows

    rows = asyncio.run(score_all())
    length = {row["trace_id"]: row["score"] for row in rows if row["binding"] == "long-enough"}
    decided = _decided(rows)
    assert len(length) == 14 and 0 < sum(length.values()) < 14
    assert decided == {
        trace_id: "flagged" if score == 0.0 else "skipped_cascade"
        for trace_id, score in length.items()
    }
    short = len([score for score in length.values() if score == 0.0])
    with store.engine.connect() as connection:
        found = {c.binding: c for c in coverage(connection, None, None)}
    cascade = found["short"]
    assert (cascade.eligible, cascade.sampled, cascade.scored) == (14, short, short)
    assert cascade.statuses == {"ok": short, "skipped_cascade": 14 - short}
    assert cascade.cascade == {
        "after": "long-enough",
        "upstream_scored": 14,
        "upstream_errored": 0,
        "flagged": short,
        "explored": 0,
        "not_triggered": 14 - short,
        "scored": short,
        "cost_usd": 0.0,
    }
    assert found["long-enough"].cascade is None
    everything = found["every-run"]  # a cascade that filtered nothing still shows its stages
    assert (everything.eligible, everything.sampled) == (14, 14)
    assert everything.cascade is not None
    assert (everything.cascade["flagged"], everything.cascade["not_triggered"]) == (14, 0)

    # The offline commands' path (score_runs) decides every run the same way.
    runs = [run for trace in traces for run in extract_runs(trace)]
    bindings = compile_bindings(config.scorers, {}, None)
    offline, _ = asyncio.run(Scoring(bindings, WorkersConfig(), timed=False).score_runs(runs))
    assert _decided(offline) == decided

    # A backfill (rescore) of the cascade binding alone: its upstream's stored rows decide.
    def stored(trace_ids: Any) -> list[Any]:
        with store.engine.connect() as connection:
            return [row for trace_id in trace_ids for row in trace_scores(connection, trace_id)]

    backfill, _ = asyncio.run(
        worker.scoring.score_runs(runs, lambda binding, _run: binding.name == "short", stored)
    )
    assert {row["binding"] for row in backfill} == {"short"}
    assert _decided(backfill) == decided
    store.close()


ON_ERRORS = """
scorers:
  - name: fallback
    scorer: tests.support.custom_scorers:answer_present
    after: {binding: flaky, errored: true}
  - name: flaky
    scorer: tests.support.custom_scorers:exploding
"""


def test_coverage_of_a_cascade_on_errored_runs_counts_what_its_upstream_errored_on(
    db_url: str,
) -> None:
    """Every upstream scoring errors and a cascade flags errored runs: its stages say the
    upstream errored on each run it flagged (they said 14 flagged of 0 scored)."""
    store = open_store(db_url)
    for trace in load_traces(TRACES):
        store.write(trace.spans, trace.logs)
    worker = build_worker(parse_config(ON_ERRORS).scoring(), store)

    async def score_all() -> None:
        for claim in store.queue.claim(worker.owner, 100, 30.0, now=4_000_000_000.0):
            await worker.process(claim)

    asyncio.run(score_all())
    with store.engine.connect() as connection:
        stages = {c.binding: c for c in coverage(connection, None, None)}["fallback"].cascade
    assert stages is not None
    assert (stages["upstream_scored"], stages["upstream_errored"]) == (0, 14)
    assert stages["flagged"] == stages["scored"] == 14
    store.close()
