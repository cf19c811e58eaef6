"""The scoring worker's synchronous pass in this process, and where its CPU time goes.

Stores ``--traces`` of ``benchmarks/pipeline.py``'s agent traces in a fresh SQLite file (or
``--db``), then has a worker built as a scoring process builds it (the service's config, the
real metric relay writing its report lines to ``/dev/null``) claim them in batches of
``workers.claim_batch`` and run each batch's synchronous pass: load, extract, score, build
rows, store, complete. No service, no event loop and no second process, so the figure is
steady from run to run: CPU ms per trace of the pass (claim included), then the same again
under cProfile, its time split into the pass's parts (``--top`` also prints the functions
that cost most). The profiler slows Python calls more than C, so read the split as shares of
the unprofiled figure, which it is scaled to.

    python benchmarks/scoring_pass.py --traces 5000
    python benchmarks/scoring_pass.py --traces 5000 --sampling 0.1 --top 30
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.pipeline import agent_spans, export_body, sampling_config
from tracescore.batch_gc import bulk_scoring
from tracescore.config import Config
from tracescore.ingest.decode import decode_traces
from tracescore.pipeline.scoring_processes import MetricRelay
from tracescore.pipeline.scoring_task import build_worker
from tracescore.store import open_store

PARTS: dict[str, list[tuple[str, str]]] = {
    "claim (TraceQueue.claim)": [("store/trace_queue.py", "claim")],
    "batch load (SpanStore.load_traces)": [("store/spanstore.py", "load_traces")],
    "extraction (build_runs)": [("extract/runs/__init__.py", "build_runs")],
    "sources and turn (read_sources, trace_turn)": [
        ("extract/sources.py", "read_sources"),
        ("pipeline/batches.py", "trace_turn"),
    ],
    "scorer input (ScorerRun.of, input budget)": [("pipeline/scoring.py", "scorer_input")],
    "scorers (run_sync through the watchdog)": [("pipeline/scoring.py", "_score_in_time")],
    "row building (score_row, decision_row)": [
        ("pipeline/score_rows.py", "score_row"),
        ("pipeline/score_rows.py", "decision_row"),
    ],
    "row preparation (prepare_scores, prepare_decisions)": [
        ("store/scores.py", "prepare_scores"),
        ("store/scores.py", "prepare_decisions"),
    ],
    "bulk write of scores and decisions (Prepared.write: executemany, COPY)": [
        ("store/scores.py", "write")
    ],
    "completion (TraceQueue.complete)": [("store/trace_queue.py", "complete")],
    "tallies, turns, source tallies": [
        ("store/scores.py", "add_tallies"),
        ("store/conversations.py", "record_turns"),
        ("store/sources.py", "add_source_tallies"),
    ],
    "commit (the driver)": [("sqlalchemy/engine/default.py", "do_commit")],
    "metrics relay (_observe)": [("pipeline/scoring_worker.py", "_observe")],
}
"""The pass's parts, as the cumulative CPU time of these functions (file, name; none of them
calls another of them, so each second is counted once)."""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", type=int, default=5000)
    parser.add_argument(
        "--sampling", "--sample", type=float, default=1.0, help="every binding's sampling rate"
    )
    parser.add_argument("--db", help="database URL (default: a SQLite file in a temp dir)")
    parser.add_argument(
        "--top", type=int, default=0, help="also print this many functions by own CPU time"
    )
    args = parser.parse_args()
    config = Config.model_validate(sampling_config(args.sampling))
    url = args.db or f"sqlite:///{tempfile.mkdtemp(prefix='tracescore-bench-pass-')}/pass.db"
    first = _scored_pass(url, config, args.traces, None)
    profile = cProfile.Profile(time.thread_time)
    second = _scored_pass(url, config, args.traces, profile)
    stats = pstats.Stats(profile)
    cumulative = {func: entry[3] for func, entry in stats.stats.items()}  # type: ignore[attr-defined]
    profiled_total = sum(entry[2] for entry in stats.stats.values())  # type: ignore[attr-defined]
    scale = first / args.traces * 1e6 / profiled_total
    print(
        f"scoring pass: {args.traces} traces, sampling {args.sampling:g}, {url.partition(':')[0]}, "
        f"batches of {config.workers.claim_batch}"
    )
    print(
        f"  CPU {first / args.traces * 1000:.3f} ms per trace (profiled: {second / args.traces * 1000:.3f}); "
        "split scaled to the unprofiled figure, µs per trace:"
    )
    accounted = 0.0
    for part, names in PARTS.items():
        seconds = sum(
            t
            for (path, _, function), t in cumulative.items()
            if any(path.endswith(file) and function == name for file, name in names)
        )
        accounted += seconds
        print(f"    {seconds * scale:7.1f}  {part}")
    print(
        f"    {(profiled_total - accounted) * scale:7.1f}  the rest (the pass's own code, sampling, lists)"
    )
    if args.top:
        stats.sort_stats("tottime").print_stats(args.top)


def sampling_traces(count: int) -> bytes:
    now = time.time_ns()
    return export_body([span for n in range(count) for span in agent_spans(now - n * 1000)[0]])


def _scored_pass(url: str, config: Config, count: int, profile: cProfile.Profile | None) -> float:
    """Store ``count`` fresh traces, then claim and run every batch's synchronous pass; the
    CPU seconds (this thread's) the passes took."""
    store = open_store(url, config.assembly.readiness())
    decoded = decode_traces(sampling_traces(count), json=False)
    store.write(decoded.spans, decoded.logs)
    with open(os.devnull, "w") as devnull:
        relay = MetricRelay(devnull)
        worker = build_worker(config.scoring(), store, metrics=relay)
        worker.scoring.warm_up()
        gc.collect()
        seconds = 0.0
        try:
            with bulk_scoring():  # the collector set as a scoring process sets it
                while True:
                    began = time.thread_time()
                    if profile is not None:
                        profile.enable()
                    claims = store.queue.claim(
                        worker.owner, config.workers.claim_batch, 60.0, now=time.time() + 3600
                    )
                    if claims:
                        # the synchronous pass a scoring process runs in its thread
                        worker._run_batch(claims)
                    if profile is not None:
                        profile.disable()
                    seconds += time.thread_time() - began
                    if not claims:
                        break
        finally:
            relay.close()
            store.close()
    return seconds


if __name__ == "__main__":
    main()
