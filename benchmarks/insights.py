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
    python benchmarks/insights.py --compare --per-mode 700 --noise 700

``--compare`` prints instead the ARI of the clusterings the default was chosen among, on the
same vectors (the runs' TF-IDF, request weighed down), over every run at once (no sample):
agglomerative with single, complete and average linkage at the default cut, DBSCAN at several
radii and HDBSCAN; groups smaller than ``min_group_size`` count as no group, as in a pass.
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

import numpy as np
from sklearn.cluster import DBSCAN, HDBSCAN, AgglomerativeClustering
from sklearn.metrics import adjusted_rand_score

from tests.support.failure_modes import PlantedRun, as_failed_run, planted_stream, store_runs
from tracescore.extract.registry import CONVENTIONS
from tracescore.insights.config import InsightsConfig
from tracescore.insights.grouping import _tfidf, _weighted
from tracescore.insights.passes import run_pass
from tracescore.store import open_store

START = 1_800_000_000.0


def compare(runs: list[PlantedRun]) -> None:
    """The ARI of each candidate clustering on the pass's own vectors."""
    config = InsightsConfig()
    failed = [as_failed_run(run) for run in runs]
    vectors = _weighted(
        _tfidf([run.request for run in failed])[0],
        _tfidf([run.failure() for run in failed])[0],
        config.request_weight,
    )
    distances = np.clip(1.0 - (vectors @ vectors.T).toarray(), 0.0, 2.0)
    truth = [run.mode for run in runs]

    def ari(labels: np.ndarray) -> float:
        labels = labels.copy()
        for label in set(labels.tolist()) - {-1}:
            if (labels == label).sum() < config.min_group_size:
                labels[labels == label] = -1
        return float(adjusted_rand_score(truth, labels))

    cut = config.distance_threshold
    for linkage in ("single", "complete", "average"):
        found = AgglomerativeClustering(
            n_clusters=None, metric="precomputed", linkage=linkage, distance_threshold=cut
        ).fit(distances)
        print(f"agglomerative, {linkage} linkage, cut {cut}: ARI {ari(found.labels_):.3f}")
    for eps in (0.3, 0.5, 0.7, 0.8):
        found = DBSCAN(eps=eps, min_samples=config.min_group_size, metric="precomputed")
        print(f"DBSCAN eps {eps}: ARI {ari(found.fit(distances).labels_):.3f}")
    hdbscan = HDBSCAN(min_cluster_size=config.min_group_size, metric="precomputed", copy=True)
    print(f"HDBSCAN: ARI {ari(hdbscan.fit(distances).labels_):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-mode", type=int, default=5000)
    parser.add_argument("--noise", type=int, default=5000)
    parser.add_argument("--compare", action="store_true", help="compare clusterings by ARI")
    args = parser.parse_args()
    runs = planted_stream(args.per_mode, args.noise, start=START)
    if args.compare:
        compare(runs)
        return
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
