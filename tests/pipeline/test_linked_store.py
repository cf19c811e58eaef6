"""Loops traced one trace per model call, joined beyond one process's memory (issue 45): the
steps read by another scoring process, or before a restart, are found through the store's
``call_links`` table; a re-score, a backfill and the trace page read the joined loop again as
scoring read it; and an ordinary trace writes no link row.

Each "process" here is a worker of its own on a store handle of its own (its memory of links
starts empty, as a new process's or a restarted one's does), on the real SQLite file or the
real PostgreSQL server.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from sqlalchemy import event, func, select
from typer.testing import CliRunner

from tests.support.extract_support import linked_traces
from tests.support.paths import CAPTURES
from tests.support.score_rows import ScoreView
from tracescore.cli import app
from tracescore.config import Config, parse_config
from tracescore.extract import extract_runs
from tracescore.extract.content import awaits_tool_results
from tracescore.extract.linked import joined_key
from tracescore.extract.model import AgentRun
from tracescore.ingest.files import load_traces
from tracescore.pipeline.rescore import rescore_tasks
from tracescore.pipeline.scoring_task import build_worker
from tracescore.retention.config import RetentionConfig
from tracescore.retention.prune import Pruner
from tracescore.spans import Trace
from tracescore.store import SpanStore, connect, open_store
from tracescore.store.call_links import CALL_LINKS, StoredLinks
from tracescore.store.rescores import rescore_job
from tracescore.store.scores import SCORES
from tracescore.web.trace_view import trace_page

FAR_FUTURE = 4_000_000_000.0
AGENTS = ["pydantic-ai", "openinference-langchain", "mastra", "strands"]
"""Captures of agent frameworks: each turn one trace, its calls answered within it."""
LOOPS = [
    ("anthropic-sdk", "tool_call"),  # joined by tool call id
    ("openinference-openai", "responses_loop_tool_error"),  # by previous_response_id alone
]


def _yaml(version: str = "1") -> str:
    return (
        "scorers:\n"
        "  - name: length\n"
        "    scorer: 'tests.support.custom_scorers:answer_length'\n"
        f"    options: {{version: '{version}', per_char: 0.001}}\n"
        "    rescore_on_change: {sample: 100, since: 1d}\n"
    )


def _config(version: str = "1") -> Config:
    return parse_config(_yaml(version))


def _in_order(library: str, scenario: str) -> list[Trace]:
    """The capture's traces in the order they ended (so became ready)."""
    traces = load_traces([CAPTURES / library / scenario])
    return sorted(traces, key=lambda t: max(span.end_time_ns for span in t.spans))


def _score_in(db_url: str, traces: list[Trace], config: Config) -> None:
    """Store and score ``traces`` in one batch of a process of their own."""
    store = open_store(db_url)
    for trace in traces:
        store.write(trace.spans, trace.logs)
    worker = build_worker(config.scoring(), store)
    claims = store.queue.claim(worker.owner, 10_000, 30.0, now=FAR_FUTURE)
    assert {claim.trace_id for claim in claims} == {trace.trace_id for trace in traces}
    asyncio.run(worker.process_batch(claims))
    store.close()


def _rows(store: SpanStore) -> list[ScoreView]:
    with store.engine.connect() as connection:
        return [ScoreView(**r._mapping) for r in connection.execute(select(SCORES))]


def _link_rows(store: SpanStore) -> list[tuple[str, str]]:
    with connect(store.engine) as connection:
        rows = connection.execute(select(CALL_LINKS.c.key, CALL_LINKS.c.trace_id))
        return [(bytes(key).hex(), trace_id) for key, trace_id in rows]


def _loop_in_one_batch(traces: list[Trace]) -> tuple[str, AgentRun]:
    """The answering trace and its agent run, as one batch holding every trace reads them."""
    ((trace_id, loop),) = [
        (trace_id, run)
        for trace_id, found in linked_traces(traces).items()
        for run in found.runs
        if run.kind == "agent"
    ]
    return trace_id, loop


@pytest.mark.parametrize(("library", "scenario"), LOOPS)
def test_steps_read_by_other_processes_are_joined_and_read_again_so(
    db_url: str, library: str, scenario: str, tmp_path: Path
) -> None:
    traces = _in_order(library, scenario)
    answer_id, expected = _loop_in_one_batch(traces)
    for trace in traces:  # each trace read by a process (or a restart) of its own
        _score_in(db_url, [trace], _config())

    store = open_store(db_url)
    rows = {row.trace_id: row for row in _rows(store)}
    assert (rows[answer_id].run_kind, rows[answer_id].span_id) == ("agent", expected.span_id)
    assert {r.run_kind for t, r in rows.items() if t != answer_id} == {"llm"}  # the steps
    step_ids = {trace.trace_id for trace in traces} - {answer_id}
    joined = StoredLinks.of(store).find([joined_key(answer_id)])
    assert set(joined[joined_key(answer_id)]) == step_ids

    # The trace page shows the loop scoring saw, with its score (no orphan).
    page = trace_page(store, answer_id)
    assert page is not None and not page["orphan_scores"]
    assert page["steps_from"] == sorted(step_ids)
    (shown,) = page["runs"]
    assert shown.run.model_dump() == expected.model_dump() and shown.scores

    # A backfill (``tracescore rescore``) scores that run again, not the answering call alone.
    before = {row.id for row in _rows(store)}
    config = tmp_path / "config.yaml"
    config.write_text(_yaml())
    result = CliRunner().invoke(
        app, ["rescore", "--db", db_url, "--config", str(config), "--force"]
    )
    assert result.exit_code == 0, result.stderr
    assert {row.id for row in _rows(store)} == before

    # rescore_on_change finds the joined run by its span id and reads it whole.
    worker = build_worker(_config("2").scoring(), store)
    (task,) = rescore_tasks(worker.scoring, store, worker.owner)
    asyncio.run(task.run())
    with connect(store.engine) as connection:
        job = rescore_job(connection, "length")
    assert job is not None and (job.rescored, job.missing) == (len(traces), 0)
    again = [r for r in _rows(store) if r.trace_id == answer_id and r.scorer_version == "2"]
    assert [r.run_kind for r in again] == ["agent"]
    store.close()


def _link_statements(store: SpanStore) -> list[str]:
    """The statements on ``call_links`` the store's engine runs from now on."""
    seen: list[str] = []

    def note(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if "call_links" in statement:
            seen.append(statement.split()[0].upper())

    event.listen(store.engine, "before_cursor_execute", note)
    return seen


def test_a_step_read_elsewhere_is_found_in_one_query_per_batch(sqlite_url: str) -> None:
    """The first process reads the step; the second, a batch of ordinary agent traces (which
    asks nothing of the table), then the answer's batch: one lookup for it, one write (which
    traces it was joined from)."""
    step, answer = _in_order("anthropic-sdk", "tool_call")
    ordinary = load_traces([CAPTURES / name for name in AGENTS])
    _score_in(sqlite_url, [step], _config())
    store = open_store(sqlite_url)
    for trace in [*ordinary, answer]:
        store.write(trace.spans, trace.logs)
    worker = build_worker(_config().scoring(), store)
    statements = _link_statements(store)
    ordinary_ids = {trace.trace_id for trace in ordinary}
    claims = store.queue.claim(worker.owner, 100, 30.0, now=FAR_FUTURE)
    asyncio.run(worker.process_batch([c for c in claims if c.trace_id in ordinary_ids]))
    assert statements == []
    asyncio.run(worker.process_batch([c for c in claims if c.trace_id == answer.trace_id]))
    assert statements == ["SELECT", "INSERT"]
    assert [r.run_kind for r in _rows(store) if r.trace_id == answer.trace_id] == ["agent"]
    store.close()


def test_an_ordinary_trace_writes_no_link_row(db_url: str) -> None:
    """Every capture scored in one batch: only the traces of a loop's steps traced on their
    own are named in ``call_links`` (their calls, their response ids, the traces they were
    joined into); an agent's trace, however it calls tools, adds nothing."""
    traces = load_traces([CAPTURES])
    _score_in(db_url, traces, _config())
    store = open_store(db_url)
    named = {trace_id for _, trace_id in _link_rows(store)}
    steps = {
        trace.trace_id
        for trace in traces
        if (primary := [r for r in extract_runs(trace, only_primary=True) if r.primary])
        and all(r.kind == "llm" and awaits_tool_results(r) for r in primary)
    }
    assert named and named <= steps
    agent = load_traces([CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"])
    assert not named & {trace.trace_id for trace in agent}
    with connect(store.engine) as connection:
        count = connection.execute(select(func.count()).select_from(CALL_LINKS)).scalar_one()
    assert count == len(_link_rows(store)) < 10 * len(steps)
    store.close()


def test_links_go_with_the_spans_retention(db_url: str) -> None:
    traces = _in_order("anthropic-sdk", "tool_call")
    for trace in traces:
        _score_in(db_url, [trace], _config())
    store = open_store(db_url)
    written = len(_link_rows(store))
    assert written
    pruner = Pruner(store.write_transaction, RetentionConfig(spans="1d"))
    assert "call_links" not in pruner.run(time.time()).removed  # written just now: kept
    assert pruner.run(time.time() + 2 * 86400).removed["call_links"] == written
    assert _link_rows(store) == []
    store.close()


def _twins() -> tuple[list[Trace], list[Trace]]:
    """(the Anthropic SDK's content-less traces, OpenLLMetry's traces of the same requests)."""
    traces = load_traces([CAPTURES / "anthropic-sdk-openllmetry" / "tool_call"])
    sdk = [t for t in traces if t.spans[0].scope.name == "com.anthropic.sdk.python"]
    return sdk, [t for t in traces if t not in sdk]


def test_twins_across_batches_are_read_once_within_a_process_memory(db_url: str) -> None:
    """The requests with content scored in one batch, their content-less twins in a later
    batch of the same process: the twins are no runs (read elsewhere)."""
    sdk, content = _twins()
    store = open_store(db_url)
    worker = build_worker(_config().scoring(), store)
    for batch in (content, sdk):
        for trace in batch:
            store.write(trace.spans, trace.logs)
        claims = store.queue.claim(worker.owner, 100, 30.0, now=FAR_FUTURE)
        assert len(claims) == len(batch)
        asyncio.run(worker.process_batch(claims))
    scored = {row.trace_id for row in _rows(store)}
    assert scored and not scored & {t.trace_id for t in sdk}
    store.close()


def test_a_twin_read_before_its_request_with_content_stays_a_run(db_url: str) -> None:
    """The documented limit (``tracescore.extract.linked``): a content-less twin read by
    another process, before the same request's trace with content, is scored as a run of its
    own; the trace with content is scored as ever, the loop joined."""
    sdk, content = _twins()
    _score_in(db_url, sdk, _config())
    _score_in(db_url, content, _config())
    store = open_store(db_url)
    kinds = {row.trace_id: row.run_kind for row in _rows(store)}
    assert {kinds[t.trace_id] for t in sdk} == {"llm"}
    assert sorted(kinds[t.trace_id] for t in content) == ["agent", "llm"]  # the loop, its step
    store.close()
