"""What storing a trace costs by itself: its spans and its score rows, in SQLite, by the store's
own calls, with no HTTP, process, queue or scorer around them.

The pipeline's capacity benchmark (``benchmarks/pipeline.py``) compares the live path's CPU per
trace with an in-process floor of decode, extract and score. Storing is not in that floor, yet
the live path cannot skip it: spans are stored before they are scored (the dashboard reads
them, a crash must not lose them) and every score is a row. This prints, per trace of
``pipeline.py``'s agent traces (four spans, five default scores):

- the spans written as the unpacker writes them (``SpanStore.write``, one transaction per
  request of ``--traces-per-request`` traces);
- the score rows written as a scoring batch writes them (``prepare_scores`` and the upsert, one
  transaction per ``workers.claim_batch`` traces), on the real schema and again on a database
  whose ``scores`` table has no secondary index (what the dashboard's and API's reads need
  costs the rest);
- each as a share of the in-process floor measured here on the same traces.

    python benchmarks/storage_floor.py --traces 20000
"""

from __future__ import annotations

import argparse
import copy
import gc
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.pipeline import agent_spans, export_body, in_process_floor
from tracescore.batch_gc import bulk_scoring
from tracescore.config import Config
from tracescore.extract import extract_runs
from tracescore.ingest.decode import decode_traces
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.score_rows import score_row
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.spans import Span, Trace
from tracescore.store import SpanStore, open_store
from tracescore.store.scores import StoredScore, prepare_scores, score_id


def request_spans(traces: int, per_request: int) -> Iterator[list[Span]]:
    """The decoded spans of ``traces`` agent traces, a request's worth at a time."""
    now = time.time_ns()
    for start in range(0, traces, per_request):
        spans = [
            span
            for n in range(start, min(traces, start + per_request))
            for span in agent_spans(now - n * 1000)[0]
        ]
        yield decode_traces(export_body(spans), json=False).spans


def template_rows() -> list[StoredScore]:
    """The five score rows the default scorers give one benchmark trace."""
    bindings = compile_bindings(Config().scorers, {}, None)
    trace = Trace("")
    trace.spans = next(request_spans(1, 1))
    trace.trace_id = trace.spans[0].trace_id
    now = datetime.now(UTC)
    rows = []
    for binding in bindings:
        for run in binding.eligible(extract_runs(trace), trace):
            result = binding.scorer.run_sync(ScorerRun.of(run))
            rows.append(score_row(binding, run, status=result.status, result=result, now=now))
    return rows


def score_batches(template: list[StoredScore], traces: int, batch: int) -> list[list[StoredScore]]:
    """``traces`` traces' rows (the template's, under new trace and span ids), in batches."""
    batches = []
    for start in range(0, traces, batch):
        rows = []
        now = datetime.now(UTC)
        for _ in range(start, min(traces, start + batch)):
            trace_id, span_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
            for row in template:
                fresh = copy.copy(row)
                fresh["id"] = score_id(trace_id, span_id, row["binding"], row["scorer_version"])
                fresh["trace_id"], fresh["span_id"] = trace_id, span_id
                fresh["created_at"] = fresh["updated_at"] = now
                rows.append(fresh)
        batches.append(rows)
    return batches


def cpu_per_trace(traces: int, work: Callable[[], None]) -> float:
    """CPU ms per trace of ``work`` (this process's, system time included)."""
    gc.collect()
    began = time.process_time()
    with bulk_scoring():
        work()
    return (time.process_time() - began) * 1000 / traces


def store_scores(store: SpanStore, batches: list[list[StoredScore]]) -> None:
    for rows in batches:
        prepared = prepare_scores(store.engine, rows)
        with store.write_transaction() as connection:
            prepared.write(connection)


def without_secondary_indexes(store: SpanStore) -> None:
    with store.write_transaction() as connection:
        names = connection.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'scores' "
            "AND sql IS NOT NULL"
        ).scalars()
        for name in list(names):
            connection.execute(text(f'DROP INDEX "{name}"'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--traces-per-request", type=int, default=25)
    args = parser.parse_args()
    batch = Config().workers.claim_batch
    requests = list(request_spans(args.traces, args.traces_per_request))
    batches = score_batches(template_rows(), args.traces, batch)
    floor_traces = min(args.traces, 10_000)
    bodies = [
        export_body([s for n in range(25) for s in agent_spans(time.time_ns() - n)[0]])
        for _ in range(floor_traces // 25)
    ]
    floor = in_process_floor(bodies, Config().model_dump(mode="json", exclude_unset=True))
    floor_ms = (floor.decode + floor.extract + floor.score) * 1000 / floor.traces
    print(
        f"{args.traces} traces (four spans and five scores each); in-process floor "
        f"{floor_ms:.3f} ms a trace (decode, extract, score)"
    )
    with tempfile.TemporaryDirectory() as workdir:
        figures = {}
        store = open_store(f"sqlite:///{workdir}/spans.db")
        figures["spans, as the unpacker writes them"] = cpu_per_trace(
            args.traces, lambda: [store.write(spans) for spans in requests]
        )
        store.close()
        store = open_store(f"sqlite:///{workdir}/scores.db")
        figures["score rows, as a scoring batch writes them"] = cpu_per_trace(
            args.traces, lambda: store_scores(store, batches)
        )
        store.close()
        store = open_store(f"sqlite:///{workdir}/bare.db")
        without_secondary_indexes(store)
        figures["score rows, no secondary index on scores"] = cpu_per_trace(
            args.traces, lambda: store_scores(store, batches)
        )
        store.close()
    for what, ms in figures.items():
        print(f"  {what}: {ms:.3f} ms a trace ({ms / floor_ms:.0%} of the floor)")


if __name__ == "__main__":
    main()
