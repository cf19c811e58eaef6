"""Insights pass on failure streams: adjusted Rand index per mode, time and memory.

Two streams, written to a real SQLite database as traces and failing score rows, then
grouped by the real pass (read the failed scores, rebuild the runs from their spans, group,
name, store):

- ``support`` (the default): realistic support traffic (tests/support/support_traffic.py):
  five modes (refunds wrongly refused, invented order numbers, tool timeouts surfaced as
  apologies, answers in the wrong language, system-prompt leaks), each paraphrased with varied
  entities, agents and languages, and 12 % of the failed runs in no mode. ``--part tuning`` is
  what the defaults were chosen on; ``--part heldout`` has wordings, entities, languages and
  agents the tuning never saw. ``--no-consistency`` leaves out the ``consistency`` scorer's
  rows (judges' verdicts only).
- ``planted``: the older stream (tests/support/failure_modes.py): three modes among made-up
  words, 5,000 runs each plus 5,000 noise by default (20,000 failed runs: the time and
  memory figures of docs/benchmarks.md).

Printed: the groups and their names; the adjusted Rand index, homogeneity and completeness
over all runs (runs in no group, noise included, count as one label "none"); per mode, its
main group (where most of its runs went), the share of the mode in it (completeness), the
share of the group from the mode (homogeneity) and the ARI of "in the mode" against "in its
main group"; then each pass's CPU and wall seconds, the process's resident set before it, at
its peak and after it (garbage collected), and a pass's peak Python memory (tracemalloc).
Default settings throughout: a pass reads at most ``max_runs`` (20,000) of the failed runs.

    python benchmarks/insights.py --failed 1000 --part tuning
    python benchmarks/insights.py --failed 5000 --part heldout
    python benchmarks/insights.py --stream planted            # 20,000 failed runs
    python benchmarks/insights.py --stream planted --per-mode 7500 --noise 7500 --process
    python benchmarks/insights.py --stream planted --per-mode 12500 --noise 12500 --pg

``--pg`` writes the stream to a scratch PostgreSQL database (created on the server of
``TRACESCORE_TEST_PG_URL``, dropped after) instead of a SQLite file.

``--process`` runs one pass as the service does, in its helper process
(``tracescore.insights.pass_process``: cyclic collector off, default settings), and prints that
process's peak resident set: what a pass adds to the service's memory.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn.metrics import adjusted_rand_score, completeness_score, homogeneity_score

from tests.support.databases import fresh_pg_database
from tests.support.failure_modes import planted_stream, store_runs
from tests.support.overload import proc_status_mb
from tests.support.support_traffic import store_support_runs, support_stream
from tracescore.extract.registry import CONVENTIONS
from tracescore.helper_processes import OneShot
from tracescore.insights.config import InsightsConfig
from tracescore.insights.passes import PassResult, run_pass
from tracescore.insights.task import PASS_PROCESS
from tracescore.store import SpanStore, open_store

START = 1_800_000_000.0
NONE = "none"


def per_mode(truth: Sequence[str], found: Sequence[str]) -> None:
    """Each mode's main group, completeness, homogeneity and one-against-rest ARI."""
    for mode in sorted(set(truth)):
        inside = [group for t, group in zip(truth, found, strict=True) if t == mode]
        main, count = Counter(inside).most_common(1)[0]
        group_size = sum(group == main for group in found)
        completeness = count / len(inside)
        homogeneity = count / group_size
        ari = adjusted_rand_score(
            [t == mode for t in truth], [g == main and main != NONE for g in found]
        )
        print(
            f"  {mode:<16} runs {len(inside):>5}  main group {main[:8]:<8}  completeness "
            f"{completeness:.3f}  homogeneity {homogeneity:.3f}  ARI {ari:.3f}"
        )


def _pass(store: SpanStore, config: InsightsConfig, now: datetime) -> tuple[PassResult, str]:
    """One pass and what it took: CPU and wall seconds, the process's peak resident set during
    it (its high-water mark reset first) and what stays resident after it, garbage collected."""
    gc.collect()
    before = proc_status_mb(os.getpid(), "VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident set
    cpu, wall = time.process_time(), time.perf_counter()
    result = run_pass(store, config, CONVENTIONS, now=now)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = proc_status_mb(os.getpid(), "VmHWM")
    gc.collect()
    after = proc_status_mb(os.getpid(), "VmRSS")
    return result, (
        f"CPU {cpu:.2f} s (wall {wall:.1f} s), resident set {before:.0f} MB before, peak "
        f"{peak:.0f} MB (+{peak - before:.0f}), {after:.0f} MB after (+{after - before:.0f})"
    )


def measure(store: SpanStore, keys: Sequence[tuple[str, str]], truth: Sequence[str]) -> None:
    now = datetime.fromtimestamp(START + 7200, UTC)
    config = InsightsConfig()  # default settings: at most max_runs (20,000) runs read
    _, first = _pass(store, config, now)
    result, following = _pass(store, config, now)
    tracemalloc.start()
    run_pass(store, config, CONVENTIONS, now=now, save=False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    group_of = {(m["trace_id"], m["span_id"]): m["group_id"] for m in result.memberships}
    found = [group_of.get(key, NONE) for key in keys]
    print(f"failed runs: {result.failed}, read: {result.read}, groups: {len(result.groups)}")
    for group in result.groups[:12]:
        print(f"  {group['size']:>6}  {group['id'][:8]}  {group['name']}")
    print(
        f"adjusted Rand index {adjusted_rand_score(truth, found):.3f}, homogeneity "
        f"{homogeneity_score(truth, found):.3f}, completeness {completeness_score(truth, found):.3f}"
        + (" (runs not read count as none)" if result.read < len(keys) else "")
    )
    per_mode(truth, found)
    print(f"first pass (runs rebuilt from spans): {first}")
    print(f"next pass (stored texts): {following}")
    print(f"peak Python memory of a pass (tracemalloc): {peak / 1e6:.0f} MB")


def in_service_process(store_url: str) -> None:
    """A pass as the service runs it: in its helper process (``tracescore.insights.pass_process``,
    gc off, default settings), whose peak resident set is what the service's group grows by."""
    started = time.perf_counter()
    report = OneShot(
        PASS_PROCESS,
        {
            "store_url": store_url,
            "config": InsightsConfig().model_dump(mode="json"),
            "conventions": [],
            "judge": None,
            "started": START + 7200,
        },
    ).run()
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"pass in the service's helper process: {report['read']} runs read of "
        f"{report['failed']} failed, {report['groups']} groups, "
        f"{time.perf_counter() - started:.1f} s, peak resident set {peak:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", choices=("support", "planted"), default="support")
    parser.add_argument("--failed", type=int, default=1000, help="support: failed runs")
    parser.add_argument("--part", choices=("tuning", "heldout"), default="tuning")
    parser.add_argument("--no-consistency", action="store_true", help="judges' rows only")
    parser.add_argument(
        "--process", action="store_true", help="only a pass in the service's helper process"
    )
    parser.add_argument("--per-mode", type=int, default=5000, help="planted: runs per mode")
    parser.add_argument("--noise", type=int, default=5000, help="planted: noise runs")
    parser.add_argument(
        "--pg", action="store_true", help="a scratch PostgreSQL database (TRACESCORE_TEST_PG_URL)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, ExitStack() as stack:
        url = (
            stack.enter_context(fresh_pg_database())
            if args.pg
            else f"sqlite:///{Path(workdir) / 'insights.db'}"
        )
        store = open_store(url)
        if args.stream == "support":
            support = support_stream(args.failed, args.part, start=START)
            store_support_runs(store, support, consistency=not args.no_consistency)
            keys = [(run.trace_id, run.span_id) for run in support]
            truth = [run.mode for run in support]
        else:
            planted = planted_stream(args.per_mode, args.noise, start=START)
            store_runs(store, planted)
            keys = [(run.trace_id, run.span_id) for run in planted]
            truth = [run.mode for run in planted]
        if args.process:
            store.close()
            in_service_process(url)
            return
        measure(store, keys, truth)
        store.close()


if __name__ == "__main__":
    main()
