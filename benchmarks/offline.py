"""Offline scoring throughput: ``tracescore score`` on a JSONL of runs, and ``rescore`` on a store.

Builds ``--runs`` Mastra-shaped runs by giving the hand-written fixture runs fresh ids, then:

1. ``score``: the runs through the worker's routing and scoring (the default code scorers), as
   ``tracescore score runs.jsonl`` does, without the file reading;
2. ``score (OTLP)``: ``benchmarks/pipeline.py``'s agent traces (4 spans each) as an OTLP protobuf
   export file, read, extracted and scored as ``tracescore score export.pb`` does: runs/s and
   CPU ms per trace, to set beside that benchmark's live CPU per trace and in-process floor;
3. ``rescore``: the same number of demo traces stored in a SQLite file and scored again from the
   store (load, extract, score, upsert), as ``tracescore rescore --force`` does.

    python benchmarks/offline.py                 # 2,000 runs
    python benchmarks/offline.py --runs 500 --concurrency 4
    python benchmarks/offline.py --only score   # the two score measurements, no rescore
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracescore.batch_gc import bulk_scoring
from tracescore.config import Config
from tracescore.ingest.decode import decode_traces
from tracescore.offline.demo import DemoSender
from tracescore.offline.inputs import read_runs, runs_from_json
from tracescore.offline.rescore import Backfill
from tracescore.offline.runner import by_trace, compile_offline, score_groups
from tracescore.pipeline.bindings import CompiledBinding, primary_only
from tracescore.store import open_store

FIXTURE = (
    Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "runs" / "mastra_runs.jsonl"
)


def _runs(count: int) -> bytes:
    base = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    lines = [json.dumps({**base[i % len(base)], "runId": f"bench-{i}"}) for i in range(count)]
    return "\n".join(lines).encode()


def _demo_spans(count: int) -> bytes:
    """``count`` demo traces, exported in memory and encoded as one OTLP protobuf request."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    memory = InMemorySpanExporter()
    sender = DemoSender("unused", seed=1, drop_after=float("inf"), exporter=memory)
    for _ in range(count):
        sender.send_one()
    return encode_spans(memory.get_finished_spans()).SerializeToString()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--only", choices=("score", "rescore"), help="run only these measurements")
    args = parser.parse_args()
    bindings = compile_offline(Config().scorers, {})

    if args.only != "rescore":
        _score(args, bindings)
        _score_otlp(args, bindings)
    if args.only != "score":
        _rescore(args)


def _score(args: argparse.Namespace, bindings: list[CompiledBinding]) -> None:
    runs = runs_from_json(_runs(args.runs))
    # Warm up: scorers load their word lists and lexicons on first use.
    asyncio.run(score_groups(by_trace(runs[:8]), bindings))
    started = time.perf_counter()
    with bulk_scoring():  # as `tracescore score` sets the collector
        rows = asyncio.run(score_groups(by_trace(runs), bindings, concurrency=args.concurrency))
    elapsed = time.perf_counter() - started
    scored = sum(map(len, rows))
    print(
        f"score:   {len(runs)} runs x {len(bindings)} scorers in {elapsed:.2f} s: "
        f"{len(runs) / elapsed:,.0f} runs/s, {scored / elapsed:,.0f} scores/s"
    )


def _score_otlp(args: argparse.Namespace, bindings: list[CompiledBinding]) -> None:
    """The pipeline benchmark's traces through ``tracescore score``'s reader and scoring."""
    from benchmarks.pipeline import agent_spans, export_body

    now = time.time_ns()
    body = export_body([span for n in range(args.runs) for span in agent_spans(now - n * 1000)[0]])
    with tempfile.TemporaryDirectory() as directory:
        export = Path(directory) / "export.pb"
        export.write_bytes(body)
        started, cpu = time.perf_counter(), time.process_time()
        with bulk_scoring():  # as `tracescore score` sets the collector
            runs = read_runs([export], only_primary=primary_only(bindings))
            rows = asyncio.run(score_groups(by_trace(runs), bindings, concurrency=args.concurrency))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    scored = sum(map(len, rows))
    print(
        f"score (OTLP): {args.runs} pipeline traces, {len(runs)} runs, {scored} scores in {elapsed:.2f} s: "
        f"{args.runs / elapsed:,.0f} traces/s, {cpu / args.runs * 1000:.2f} ms CPU per trace "
        "(read, extract, score)"
    )


def _rescore(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = open_store(f"sqlite:///{directory}/bench.db")
        decoded = decode_traces(_demo_spans(args.runs), json=False)
        store.write(decoded.spans, decoded.logs)
        backfill = Backfill(
            store,
            compile_offline(Config().scorers, {}, store.engine),
            force=True,
            concurrency=args.concurrency,
        )
        started = time.perf_counter()
        outcome = asyncio.run(backfill.run(backfill.trace_ids(0.0)))
        elapsed = time.perf_counter() - started
        print(
            f"rescore: {outcome.traces_scored} stored traces, {len(outcome.rows)} scores in "
            f"{elapsed:.2f} s: {outcome.traces_scored / elapsed:,.0f} traces/s"
        )
        started = time.perf_counter()
        plan = backfill.plan(0.0)
        print(
            f"dry run: {len(plan.traces)} traces planned in {time.perf_counter() - started:.2f} s"
        )
        store.close()


if __name__ == "__main__":
    main()
