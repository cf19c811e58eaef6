"""The scoring worker (``tracescore/pipeline/scoring_worker.py``) on a real store: routing,
sampling, limits, errors and idempotent upserts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support import custom_scorers
from tests.support.paths import CAPTURES
from tests.support.score_rows import ScoreView
from tracescore.config import Config, parse_config
from tracescore.ingest.files import load_traces
from tracescore.pipeline.scoring_task import build_worker
from tracescore.store import ReadinessRules, open_store
from tracescore.store.score_aggregates import coverage
from tracescore.store.scores import SCORES, SamplingDecisionRow
from tracescore.store.sources import list_sources

AGENT_CAPTURE = CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"
FAR_FUTURE = 4_000_000_000.0


def _store_with(db_url: str, *captures: Path):
    store = open_store(db_url)
    for trace in load_traces(captures):
        store.write(trace.spans, trace.logs)
    return store


def _config(yaml_bindings: str, **extra: str) -> Config:
    return parse_config("scorers:\n" + yaml_bindings + "".join(extra.values()))


def _score_all(store, config: Config) -> list[dict]:
    worker = build_worker(config.scoring(), store)

    async def go() -> list[dict]:
        rows: list[dict] = []
        claims = store.queue.claim(worker.owner, 100, 30.0, now=FAR_FUTURE)
        for claim in claims:
            rows.extend(await worker.process(claim))
        return rows

    return asyncio.run(go())


def _stored(store) -> list[ScoreView]:
    with store.engine.connect() as connection:
        return [ScoreView(**row._mapping) for row in connection.execute(select(SCORES))]


def test_agent_run_is_scored_once_and_rescoring_upserts(db_url: str) -> None:
    store = _store_with(db_url, AGENT_CAPTURE)
    config = _config(
        "  - {name: answer, scorer: 'tests.support.custom_scorers:answer_present', threshold: 0.5}\n"
    )
    custom_scorers.CALLS.clear()
    rows = _score_all(store, config)
    assert len(rows) == 1
    (row,) = _stored(store)
    assert (row.status, row.score, row.label, row.agent) == ("ok", 1.0, "pass", "WeatherBot")
    assert row.reason.startswith("answer of ") and row.trace_id == rows[0]["trace_id"]
    assert row.model == "gpt-4o-mini" and row.service == "otel-openai-v2-demo"

    # The same trace scored again (a late span, a lost lease): same row, not a second one.
    worker = build_worker(config.scoring(), store)
    asyncio.run(worker.scoring.score_runs([]))
    from tracescore.extract import extract_runs

    trace = store.load_trace(row.trace_id)
    again, _ = asyncio.run(worker.scoring.score_runs(extract_runs(trace)))
    with store.engine.begin() as connection:
        from tracescore.store.scores import upsert_scores

        upsert_scores(connection, again)
    assert len(_stored(store)) == 1 and len(custom_scorers.CALLS) == 2


def test_llm_only_traces_have_their_outermost_llm_run_stand_for_the_agent(sqlite_url: str) -> None:
    store = _store_with(sqlite_url, CAPTURES / "openinference-openai" / "tool_call")
    config = _config("  - {name: answer, scorer: 'tests.support.custom_scorers:answer_present'}\n")
    _score_all(store, config)
    stored = _stored(store)
    assert len(stored) == 2  # two independent traces, one LLM call each
    assert {row.run_kind for row in stored} == {"llm"}


def test_targets_llm_and_tool_runs(sqlite_url: str) -> None:
    store = _store_with(sqlite_url, AGENT_CAPTURE)
    config = _config(
        "  - {name: per-llm, scorer: 'tests.support.custom_scorers:answer_present', target: llm}\n"
        "  - {name: per-tool, scorer: 'tests.support.custom_scorers:answer_present', target: tool}\n"
        "  - {name: per-trace, scorer: 'tests.support.custom_scorers:answer_present', target: trace}\n"
    )
    _score_all(store, config)
    by_binding: dict[str, int] = {}
    for row in _stored(store):
        by_binding[row.binding] = by_binding.get(row.binding, 0) + 1
    assert by_binding == {"per-llm": 2, "per-tool": 1, "per-trace": 1}


def test_filters_and_sampling_decisions_are_recorded(sqlite_url: str) -> None:
    store = _store_with(sqlite_url, AGENT_CAPTURE, CAPTURES / "openllmetry-openai" / "plain_chat")
    config = _config(
        "  - name: weather-only\n    scorer: 'tests.support.custom_scorers:answer_present'\n"
        "    filter: {agent: ['Weather*'], service: ['re:otel-.*']}\n"
        "  - name: never-sampled\n    scorer: 'tests.support.custom_scorers:answer_present'\n"
        "    sampling: {rate: 0.0}\n"
    )
    _score_all(store, config)
    stored = _stored(store)
    assert [(row.binding, row.agent) for row in stored] == [("weather-only", "WeatherBot")]
    with store.engine.connect() as connection:
        decisions = connection.execute(select(SamplingDecisionRow.__table__)).all()
        found = {c.binding: c for c in coverage(connection, None, None)}
    # Decision rows for unsampled runs only: the sampled run's score row stands for its own.
    summary = sorted((d.binding, d.sampled) for d in decisions)
    assert summary == [("never-sampled", False), ("never-sampled", False)]
    assert (found["weather-only"].eligible, found["weather-only"].sampled) == (1, 1)
    assert (found["never-sampled"].eligible, found["never-sampled"].sampled) == (2, 0)


def test_a_failing_scorer_is_stored_as_error_and_others_still_score(sqlite_url: str) -> None:
    store = _store_with(sqlite_url, AGENT_CAPTURE)
    config = _config(
        "  - {name: boom, scorer: 'tests.support.custom_scorers:exploding'}\n"
        "  - {name: fine, scorer: 'tests.support.custom_scorers:length_at_least', options: {minimum: 5}}\n"
    )
    _score_all(store, config)
    rows = {row.binding: row for row in _stored(store)}
    assert rows["boom"].status == "error" and "exploded on purpose" in rows["boom"].error
    assert (rows["fine"].status, rows["fine"].score) == ("ok", 1.0)
    # The trace is done: nothing is left to claim.
    assert store.queue.claim("again", 10, 30.0, now=FAR_FUTURE) == []


def test_budget_and_rate_limits_skip_with_a_reason(sqlite_url: str) -> None:
    store = _store_with(
        sqlite_url,
        AGENT_CAPTURE,
        CAPTURES / "otel-genai-openai-v2-latest" / "plain_chat",
        CAPTURES / "otel-genai-openai-v2-latest" / "reasoning",
    )
    config = _config(
        "  - name: broke\n    scorer: 'tests.support.custom_scorers:answer_present'\n"
        "    limits: {usd_per_day: 0}\n"
        "  - name: slow\n    scorer: 'tests.support.custom_scorers:answer_present'\n"
        "    limits: {per_minute: 1}\n"
    )
    _score_all(store, config)
    rows = _stored(store)
    broke = [row for row in rows if row.binding == "broke"]
    slow = sorted(row.status for row in rows if row.binding == "slow")
    assert len(broke) == 3 and {row.status for row in broke} == {"skipped_budget"}
    assert "daily budget" in broke[0].error
    assert slow == ["ok", "skipped_rate", "skipped_rate"]


def test_a_slow_trace_does_not_hold_back_the_traces_behind_it(sqlite_url: str) -> None:
    store = open_store(sqlite_url, ReadinessRules(idle_timeout=0.05))
    for trace in load_traces([AGENT_CAPTURE]):  # WeatherBot: its scorer takes 3 s
        store.write(trace.spans, trace.logs)
    config = _config(
        "  - {name: slow, scorer: 'tests.support.custom_scorers:slow_for_weatherbot', target: trace}\n"
        + "workers: {poll_interval: 0.05, claim_batch: 4}\n"
    )
    worker = build_worker(config.scoring(), store)

    async def go() -> list[str]:
        task = asyncio.create_task(worker.run())
        await asyncio.sleep(0.5)  # the WeatherBot trace is claimed and being scored
        for trace in load_traces([CAPTURES / "openllmetry-openai" / "plain_chat"]):
            store.write(trace.spans, trace.logs)
        while not any(row.agent != "WeatherBot" for row in _stored(store)):
            await asyncio.sleep(0.05)
        agents = [row.agent for row in _stored(store)]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return agents

    # The trace behind it is scored while WeatherBot's is still in its 3 s scorer: its score
    # row is there first, and WeatherBot's is not yet.
    agents = asyncio.run(go())
    assert agents and "WeatherBot" not in agents


def test_failed_judge_calls_count_in_the_row_the_metrics_and_the_budget(sqlite_url: str) -> None:
    """Issue 32 (4): a judge call that failed (its answer still invalid after the repair) had
    been paid for twice, yet left no trace: the row said $0, the metrics counted no tokens, and
    the daily budget let every later run through to fail and pay again."""
    from tests.support.judge_server import JudgeServer, Reply
    from tracescore import metrics

    store = _store_with(
        sqlite_url,
        AGENT_CAPTURE,
        CAPTURES / "otel-genai-openai-v2-latest" / "plain_chat",
        CAPTURES / "otel-genai-openai-v2-latest" / "reasoning",
    )
    with JudgeServer() as server:
        server.script("ToxicityVerdicts", Reply(content="It looks fine to me.", usage=(1000, 100)))
        config = parse_config(
            f"judges:\n  default: {{model: openai/gpt-4o-mini, api_base: '{server.base_url}', "
            "cache: false, timeout: 10}\n"
            "scorers:\n  - {name: rude, scorer: toxicity, limits: {usd_per_day: 0.0001}}\n"
        )
        labels = {"model": "openai/gpt-4o-mini", "outcome": "error"}
        before = metrics.REGISTRY.get_sample_value("tracescore_judge_calls_total", labels) or 0.0
        cost_before = (
            metrics.REGISTRY.get_sample_value(
                "tracescore_judge_cost_usd_total", {"model": "openai/gpt-4o-mini"}
            )
            or 0.0
        )
        _score_all(store, config)
    rows = sorted(_stored(store), key=lambda row: row.status)
    assert [row.status for row in rows] == ["error", "skipped_budget", "skipped_budget"]
    spent = 2 * (1000 * 0.15e-6 + 100 * 0.6e-6)  # the call and its repair
    assert rows[0].cost_usd == pytest.approx(spent) and server.count == 2
    assert metrics.REGISTRY.get_sample_value("tracescore_judge_calls_total", labels) == before + 1
    assert metrics.REGISTRY.get_sample_value(
        "tracescore_judge_cost_usd_total", {"model": "openai/gpt-4o-mini"}
    ) == pytest.approx(cost_before + spent)


def test_linked_calls_are_read_once_and_a_per_call_loop_as_one_run(sqlite_url: str) -> None:
    """A batch holding the Anthropic SDK's traces beside OpenLLMetry's and LiteLLM's per-call
    traces: the SDK's content-less twins are scored as nothing (their source says where they
    were read), each loop is one agent run in its answering call's trace, and each step keeps
    its model-call run."""
    store = _store_with(
        sqlite_url,
        CAPTURES / "anthropic-sdk-openllmetry" / "tool_call",
        CAPTURES / "litellm-otel" / "tool_call",
    )
    config = _config("  - {name: answer, scorer: 'tests.support.custom_scorers:answer_present'}\n")
    worker = build_worker(config.scoring(), store)
    claims = store.queue.claim(worker.owner, 100, 30.0, now=FAR_FUTURE)
    assert len(claims) == 6

    from tracescore import metrics

    def elsewhere() -> float:
        return sum(
            sample.value
            for metric in metrics.traces_read_elsewhere.collect()
            for sample in metric.samples
            if sample.name.endswith("_total")
        )

    def twins_unread() -> float:
        return sum(
            sample.value
            for metric in metrics.traces_unread.collect()
            for sample in metric.samples
            if sample.name.endswith("_total") and sample.labels["reason"] == "read_elsewhere"
        )

    before, unread_before = elsewhere(), twins_unread()
    asyncio.run(worker.process_batch(claims))
    kinds = sorted(row.run_kind for row in _stored(store))
    assert kinds == ["agent", "agent", "llm", "llm"]  # two loops, two steps; no SDK twin
    sdk_trace_ids = {
        trace.trace_id
        for trace in load_traces([CAPTURES / "anthropic-sdk-openllmetry" / "tool_call"])
        if trace.spans[0].scope.name == "com.anthropic.sdk.python"
    }
    assert not sdk_trace_ids & {row.trace_id for row in _stored(store)}
    with store.engine.connect() as connection:
        sdk = next(s for s in list_sources(connection) if s.scope == "com.anthropic.sdk.python")
    assert (sdk.runs, sdk.reason, sdk.unread_traces) == (0, "read_elsewhere", 0)
    # Read elsewhere is counted apart from the unread traces, once a twin.
    assert (elsewhere() - before, twins_unread() - unread_before) == (2, 0)


def test_a_batch_stored_trace_by_trace_still_counts_the_text_it_replaced(db_url: str) -> None:
    """Issue 51: when the database refuses a batch's transaction (here a token count beyond
    its column), each trace is stored on its own; the text values replaced on the way (a NUL
    in a conversation's turn) had been counted only on the batch's own path."""
    import random

    from tests.support.agent_otlp import agent_trace, export_request
    from tracescore import metrics
    from tracescore.ingest.decode import decode_traces

    def replaced() -> float:
        sample = metrics.REGISTRY.get_sample_value(
            "tracescore_text_replaced_total", {"where": "conversation_turns"}
        )
        return sample or 0.0

    store = open_store(db_url)
    config = _config("  - {name: answer, scorer: 'tests.support.custom_scorers:answer_present'}\n")
    worker = build_worker(config.scoring(), store)
    counted = []
    for seed in (1, 2):  # the batch's path, then the trace-by-trace one
        trace = agent_trace(random.Random(seed), "Pa\x00ris", conversation=f"talk-{seed}")
        store.write(decode_traces(export_request(trace.spans), json=False).spans, [])
        claims = store.queue.claim(worker.owner, 10, 30.0, now=FAR_FUTURE)
        batch = worker._prepare(claims)
        [done] = batch.done
        assert done.turn is not None and "\x00" in done.turn.user_text
        if seed == 2:
            done.rows[0]["input_tokens"] = 2**70  # refused by both databases
        before = replaced()
        worker._store(batch.done, batch.unsampled, batch.tallies)
        counted.append(replaced() - before)
    assert counted[0] >= 1 and counted[1] == counted[0]
    rows = {row.trace_id: row for row in _stored(store)}
    assert len(rows) == 2 and sorted(row.status for row in rows.values()) == ["error", "ok"]
    assert store.queue.claim("again", 10, 30.0, now=FAR_FUTURE) == []  # both completed
