"""A scoring process: its metric relay (what the service's metrics show after a replay of its
report lines is what the same calls made in the service would have shown), and what it loads."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

from prometheus_client import CollectorRegistry

from tracescore import metrics
from tracescore.pipeline.scoring_processes import MetricRelay, replay


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The pipeline's series (their ``_created`` timestamps left out)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name.startswith(_PIPELINE) and not sample.name.endswith("_created")
    }


_PIPELINE = (
    "tracescore_scores",
    "tracescore_score_value",
    "tracescore_scorer_latency",
    "tracescore_sampling",
    "tracescore_traces",
    "tracescore_judge",
)


def _calls(target: Any) -> None:
    """The calls a scoring worker makes for a small batch (labels unique to this test)."""
    for index in range(5):
        target.observe_score("relay-b", "relay-s", "ok", index / 4, 0.001 * index)
    target.observe_score("relay-b", "relay-s", "error", None, 0.5)
    target.observe_score("relay-b", "relay-s", "skipped_budget", None, 0.0)
    target.sampling_decision("relay-b", True, 3)
    target.sampling_decision("relay-b", True)
    target.sampling_decision("relay-b", False, 2)
    target.traces_done(7)
    target.trace_unread("relay-service", "no_runs")
    target.judge_call("relay-model", 10, 5, 0.25, 1.5, outcome="ok", repairs=1)


def test_relayed_calls_replay_to_the_same_metrics_as_direct_calls() -> None:
    before = _samples(metrics.REGISTRY)
    _calls(metrics)
    direct = _samples(metrics.REGISTRY)
    stream = io.StringIO()
    relay = MetricRelay(stream)
    try:
        _calls(relay)
    finally:
        relay.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1  # added up: one report for the whole batch
    report = json.loads(lines[0])
    assert len(report["metrics"]) < 10  # one entry per label set, not per call
    replay(report)
    after = _samples(metrics.REGISTRY)
    for key, value in direct.items():
        assert after[key] - value == value - before.get(key, 0.0), key


def test_a_scoring_process_loads_no_web_framework() -> None:
    """A scoring process serves no routes: FastAPI and its OpenAPI models (12 MB a process)
    stay out of it, as they stay out of the unpacker."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; import tracescore.pipeline.scoring_processes; "
            "from tracescore.pipeline.scoring_task import build_worker; "
            "import tracescore.ingest.unpack; "
            "print(sorted(m for m in ('fastapi', 'starlette') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"
