"""Insights pass on planted failure modes: time, peak memory and adjusted Rand index.

Three planted modes (a tool timing out for one city, answers in the wrong language, refusals)
among noise (tests/support/failure_modes.py), written to a real SQLite database as traces and
failing scores; then the real pass (read the failed scores, rebuild the runs from their spans,
group, name, store) is timed, its peak Python memory taken with tracemalloc, and its groups
compared with the planted labels (noise counts as one label: runs in no group). Two times:
the first pass, which rebuilds every run from its spans, and the next one over the same window,
which reads the runs' texts the first stored (the service's passes every ``insights.interval``
over a sliding window rebuild only the runs that failed since the pass before).

    python benchmarks/insights.py                # 20,000 failed runs: 5,000 per mode, 5,000 noise
    python benchmarks/insights.py --per-mode 500 --noise 500
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn.metrics import adjusted_rand_score

from tests.support.failure_modes import planted_stream, store_runs
from tracescore.extract.registry import CONVENTIONS
from tracescore.insights.config import InsightsConfig
from tracescore.insights.passes import run_pass
from tracescore.store import open_store

START = 1_800_000_000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-mode", type=int, default=5000)
    parser.add_argument("--noise", type=int, default=5000)
    args = parser.parse_args()
    runs = planted_stream(args.per_mode, args.noise, start=START)
    with tempfile.TemporaryDirectory() as workdir:
        store = open_store(f"sqlite:///{Path(workdir) / 'insights.db'}")
        store_runs(store, runs)
        now = datetime.fromtimestamp(START + 7200, UTC)
        config = InsightsConfig(max_runs=max(20_000, len(runs)))
        started = time.perf_counter()
        run_pass(store, config, CONVENTIONS, now=now)
        first = time.perf_counter() - started
        started = time.perf_counter()
        result = run_pass(store, config, CONVENTIONS, now=now)
        seconds = time.perf_counter() - started
        tracemalloc.start()
        run_pass(store, config, CONVENTIONS, now=now, save=False)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        store.close()
    group_of = {(m["trace_id"], m["span_id"]): m["group_id"] for m in result.memberships}
    found = [group_of.get((run.trace_id, run.span_id), "none") for run in runs]
    ari = adjusted_rand_score([run.mode for run in runs], found)
    print(f"failed runs: {result.failed}, groups: {len(result.groups)}")
    for group in result.groups[:5]:
        print(f"  {group['size']:>6}  {group['name']}")
    print(
        f"first pass (runs rebuilt from spans): {first:.1f} s; next pass (stored texts): "
        f"{seconds:.1f} s; peak Python memory {peak / 1e6:.0f} MB; adjusted Rand index {ari:.3f}"
    )


if __name__ == "__main__":
    main()
