"""``rescore_on_change`` in process on SQLite and PostgreSQL: what changes a binding's
fingerprint (and what does not), a new scorer version re-scoring its sample beside the old
scores with runs whose spans are gone counted, and two processes starting at once doing the
work once."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.score_rows import ScoreView
from tracescore.config import parse_config
from tracescore.ingest.decode import decode_traces
from tracescore.judge.config import JudgeConfig
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.config import ScorerBinding
from tracescore.pipeline.rescore import BindingRescore, fingerprint, rescore_tasks
from tracescore.pipeline.scoring_task import build_worker
from tracescore.pipeline.scoring_worker import ScoringWorker
from tracescore.store import ReadinessRules, SpanStore, connect, open_store
from tracescore.store.rescores import rescore_job
from tracescore.store.scores import SCORES, score_id, upsert_scores

FAR_FUTURE = 4_000_000_000.0
GHOST_TRACE = "ab" * 16
"""A run scored once whose spans are no longer stored, as retention leaves it."""


def _digest(scorer: str, judge_model: str = "openai/gpt-4o-mini", **options: Any) -> str:
    judges = {"default": JudgeConfig(model=judge_model, api_base="http://127.0.0.1:1/v1")}
    binding = ScorerBinding(name="b", scorer=scorer, judge="default", options=options)
    return fingerprint(compile_bindings([binding], judges, None)[0].scorer).digest


def test_the_fingerprint_follows_the_prompt_the_version_and_the_judge_model() -> None:
    custom = "tests.support.rubric_scorer:rubric_judge"
    base = _digest(custom, rubric="RUBRIC-A")
    assert _digest(custom, rubric="RUBRIC-A") == base
    assert _digest(custom, rubric="RUBRIC-B") != base  # the prompt
    assert _digest(custom, rubric="RUBRIC-A", version="2") != base  # the version
    assert _digest(custom, "openai/gpt-4o", rubric="RUBRIC-A") != base  # the judge model
    # A prebuilt judge scorer renders every step (answers sketched): each is fingerprinted.
    assert _digest("faithfulness") != _digest("faithfulness", "openai/gpt-4o")


def test_where_the_judge_answers_is_no_part_of_the_fingerprint() -> None:
    def digest(api_base: str) -> str:
        judges = {"default": JudgeConfig(model="openai/gpt-4o-mini", api_base=api_base)}
        binding = ScorerBinding(name="b", scorer="answer-relevancy")
        return fingerprint(compile_bindings([binding], judges, None)[0].scorer).digest

    assert digest("http://127.0.0.1:1/v1") == digest("http://127.0.0.1:2/v1")


def _config(db_url: str, version: str, per_char: float) -> Any:
    return parse_config(
        "scorers:\n"
        "  - name: length\n"
        "    scorer: 'tests.support.custom_scorers:answer_length'\n"
        f"    options: {{version: '{version}', per_char: {per_char}}}\n"
        "    rescore_on_change: {sample: 10, since: 1d, poll: 0.2}\n"
    ).scoring()


def _rows(store: SpanStore) -> list[ScoreView]:
    with store.engine.connect() as connection:
        return [ScoreView(**r._mapping) for r in connection.execute(select(SCORES))]


def _score_live(store: SpanStore, worker: ScoringWorker) -> None:
    async def go() -> None:
        for claim in store.queue.claim(worker.owner, 100, 30.0, now=FAR_FUTURE):
            await worker.process(claim)

    asyncio.run(go())


def _ghost_score(store: SpanStore) -> None:
    now = datetime.now(UTC)
    row = dict(_rows(store)[0].model_dump())
    row.update(
        id=score_id(GHOST_TRACE, "cd" * 8, "length", "1"),
        trace_id=GHOST_TRACE,
        span_id="cd" * 8,
        created_at=now,
        updated_at=now,
    )
    with store.write_transaction() as connection:
        upsert_scores(connection, [row])  # type: ignore[list-item]


def test_a_new_version_rescores_once_beside_the_old_scores(
    db_url: str,
) -> None:
    store = open_store(db_url, ReadinessRules(idle_timeout=0.0, max_wait=60.0, max_attempts=3))
    rng = random.Random(5)
    traces = [agent_trace(rng, city) for city in ("Paris", "Reykjavik", "Oslo", "Lima")]
    for trace in traces:
        store.write(decode_traces(export_request(trace.spans), json=False).spans, [])
    first = build_worker(_config(db_url, "1", 0.01), store)
    _score_live(store, first)
    _ghost_score(store)
    (recording,) = rescore_tasks(first.scoring, store, first.owner)
    asyncio.run(recording.run())
    with connect(store.engine) as connection:
        recorded = rescore_job(connection, "length")
    assert recorded is not None and recorded.state == "recorded"

    # Two processes start with version 2 at once: one re-scores, the other waits it out.
    workers = [build_worker(_config(db_url, "2", 0.02), store) for _ in range(2)]
    scored_by: dict[str, int] = {}
    for worker in workers:
        original = worker.scoring.score

        async def counted(binding: Any, run: Any, _w: Any = worker, _o: Any = original) -> Any:
            scored_by[_w.owner] = scored_by.get(_w.owner, 0) + 1
            return await _o(binding, run)

        worker.scoring.score = counted  # type: ignore[method-assign]

    async def both() -> None:
        tasks: list[BindingRescore] = [
            task for w in workers for task in rescore_tasks(w.scoring, store, w.owner)
        ]
        await asyncio.gather(*(task.run() for task in tasks))

    asyncio.run(both())
    with connect(store.engine) as connection:
        job = rescore_job(connection, "length")
    assert job is not None and job.state == "done"
    assert (job.old_version, job.new_version) == ("1", "2")
    assert len(job.runs) == 5 and (job.rescored, job.missing, job.errored) == (4, 1, 0)
    assert job.estimate_usd == 0.0  # a code scorer calls no judge
    assert list(scored_by.values()) == [4]  # one process did all of it

    rows = _rows(store)
    old = {r.trace_id: r for r in rows if r.scorer_version == "1"}
    new = {r.trace_id: r for r in rows if r.scorer_version == "2"}
    assert set(old) == {t.trace_id for t in traces} | {GHOST_TRACE}
    assert set(new) == {t.trace_id for t in traces}
    for trace_id, row in new.items():
        assert row.score == pytest.approx(min(1.0, old[trace_id].score * 2))

    # Started again with version 2: nothing left to do, nothing scored.
    again = build_worker(_config(db_url, "2", 0.02), store)
    again.scoring.score = None  # type: ignore[assignment]  # would fail if it were called
    asyncio.run(rescore_tasks(again.scoring, store, again.owner)[0].run())
    assert len(_rows(store)) == len(rows)
    store.close()


def test_a_first_start_after_a_version_change_rescores(sqlite_url: str) -> None:
    """No fingerprint recorded yet (``rescore_on_change`` added with the new version): the
    scores show the version changed, and the sample is re-scored."""
    store = open_store(sqlite_url, ReadinessRules(idle_timeout=0.0, max_wait=60.0, max_attempts=3))
    rng = random.Random(6)
    for city in ("Paris", "Oslo"):
        trace = agent_trace(rng, city)
        store.write(decode_traces(export_request(trace.spans), json=False).spans, [])
    _score_live(store, build_worker(_config(sqlite_url, "1", 0.01), store))
    second = build_worker(_config(sqlite_url, "2", 0.02), store)
    asyncio.run(rescore_tasks(second.scoring, store, second.owner)[0].run())
    with connect(store.engine) as connection:
        job = rescore_job(connection, "length")
    assert job is not None and (job.state, job.old_version, job.new_version) == ("done", "1", "2")
    assert job.rescored == 2
    assert sorted(r.scorer_version for r in _rows(store)) == ["1", "1", "2", "2"]
    store.close()


def test_a_process_whose_lease_lapsed_cannot_overwrite_the_progress_of_the_next(
    db_url: str,
) -> None:
    """Progress is written only from where the writer left it: a stalled process that lost
    the job to another writes neither its progress nor its score."""
    from tracescore.store.rescores import RescoreJob, advance_job, save_job

    store = open_store(db_url)
    job = RescoreJob("b", "f" * 64, "1", "running", "1", "2", [("a" * 32, "b" * 16)] * 3)
    with store.write_transaction() as connection:
        save_job(connection, job)
    taker = RescoreJob(**{**job.__dict__, "position": 1, "rescored": 1})
    with store.write_transaction() as connection:
        assert advance_job(connection, taker, 0)
    stale = RescoreJob(**{**job.__dict__, "position": 1, "skipped_budget": 1})
    with store.write_transaction() as connection:
        assert not advance_job(connection, stale, 0)
    with connect(store.engine) as connection:
        stored = rescore_job(connection, "b")
    assert stored is not None and (stored.position, stored.rescored, stored.skipped_budget) == (
        1,
        1,
        0,
    )
    store.close()
