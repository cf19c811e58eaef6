"""Ratio sampling: Mastra's decisions, the rate, nesting and agreement across processes."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import uuid

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.paths import FIXTURES
from tracescore.config import parse_config
from tracescore.ingest.decode import decode_traces
from tracescore.pipeline.sampling import is_sampled, unit_hash
from tracescore.pipeline.scoring_task import build_worker
from tracescore.store import open_store
from tracescore.store.score_aggregates import coverage

CASES = [
    case
    for line in (FIXTURES / "parity" / "sample.jsonl").read_text().splitlines()
    if (case := json.loads(line))["scorer"] == "sampling"
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_matches_mastra_decision_and_hash(case: dict) -> None:
    key = case["traceId"] or case["runId"]
    assert unit_hash(key) == pytest.approx(case["expected"]["extra"]["unitHash"], abs=1e-15)
    rate = case["options"]["sampling"]["rate"]
    assert is_sampled(key, rate) == bool(case["expected"]["score"])


def test_rate_is_kept_within_one_percent_over_ten_thousand_traces() -> None:
    ids = [uuid.uuid4().hex for _ in range(10_000)]
    share = sum(is_sampled(t, 0.1) for t in ids) / len(ids)
    assert 0.09 <= share <= 0.11


def test_rates_nest() -> None:
    ids = [uuid.uuid4().hex for _ in range(5_000)]
    at_10 = {t for t in ids if is_sampled(t, 0.1)}
    at_20 = {t for t in ids if is_sampled(t, 0.2)}
    assert at_10 and at_10 < at_20


def test_decisions_are_identical_in_another_process() -> None:
    ids = [uuid.uuid4().hex for _ in range(2_000)]
    here = [is_sampled(t, 0.3) for t in ids]
    script = (
        "import json,sys; from tracescore.pipeline.sampling import is_sampled;"
        "print(json.dumps([is_sampled(t, 0.3) for t in json.load(sys.stdin)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(ids),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    )
    assert json.loads(out.stdout) == here


def test_traces_no_binding_samples_are_completed_unread_and_coverage_still_counts_them(
    db_url: str,
) -> None:
    """Sampling is decided from the trace id before anything is loaded: a trace no binding
    samples is finished as it is promoted (never claimed, never loaded), counted in the
    per-minute tally; coverage is
    what per-run decisions gave (one agent run per trace here): eligible every trace, sampled
    those under the rate, scored the sampled ones. A late span sending a trace back to be
    scored again does not count it twice."""
    rng = random.Random(18)
    traces = [agent_trace(rng, city=f"city-{n}") for n in range(60)]
    config = parse_config(
        "scorers:\n"
        "  - {name: tone, scorer: tone, sampling: {rate: 0.3}}\n"
        "  - {name: similarity, scorer: content-similarity, sampling: {rate: 0.1}}\n"
    )
    store = open_store(db_url)
    try:
        for trace in traces:
            store.write(decode_traces(export_request(trace.spans), json=False).spans)
        worker = build_worker(config.scoring(), store)
        loaded: list[str] = []
        load_traces = store.load_traces

        def recording_load(trace_ids: list[str], **kwargs: object) -> object:
            loaded.extend(trace_ids)
            return load_traces(trace_ids, **kwargs)

        store.load_traces = recording_load  # type: ignore[method-assign]

        claimed: list[str] = []

        def score_everything() -> None:
            async def go() -> None:
                while claims := store.queue.claim(worker.owner, 16, 30.0, now=4_000_000_000.0):
                    claimed.extend(claim.trace_id for claim in claims)
                    await worker.process_batch(claims)

            asyncio.run(go())

        score_everything()
        sampled = {t.trace_id for t in traces if is_sampled(t.trace_id, 0.3)}
        assert 0 < len(sampled) < len(traces)
        assert set(loaded) == set(claimed) == sampled  # the others were never claimed or read
        with store.engine.connect() as connection:
            found = {c.binding: c for c in coverage(connection, None, None)}
        for name, rate in (("tone", 0.3), ("similarity", 0.1)):
            expected = sum(is_sampled(t.trace_id, rate) for t in traces)
            assert (found[name].eligible, found[name].sampled, found[name].scored) == (
                len(traces),
                expected,
                expected,
            )
        # A late span for an unsampled trace: scored again, counted once.
        late = next(t for t in traces if t.trace_id not in sampled)
        extra = Span(
            trace_id=bytes.fromhex(late.trace_id),
            span_id=rng.randbytes(8),
            name="late",
            start_time_unix_nano=1,
            end_time_unix_nano=2,
        )
        store.write(decode_traces(export_request([extra]), json=False).spans)
        score_everything()
        with store.engine.connect() as connection:
            again = {c.binding: c for c in coverage(connection, None, None)}
        assert again["tone"].eligible == len(traces)
        assert store.trace_summary(late.trace_id).state == "scored"  # type: ignore[union-attr]
    finally:
        store.close()
