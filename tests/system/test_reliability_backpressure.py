"""Ingest faster than the server can take it: it pushes back (503 + ``Retry-After``) instead of
queueing in memory, its memory stays bounded, and it stays healthy. The minute-long version at
twice the sustainable rate is ``benchmarks/backpressure.py``."""

from __future__ import annotations

import random
from pathlib import Path

import httpx

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.overload import overload, proc_status_mb
from tests.support.server_process import start_server

TRACES_PER_REQUEST = 10
SPANS_PER_REQUEST = 4 * TRACES_PER_REQUEST
MAX_PENDING = 4
RSS_GROWTH_BOUND_MB = 150


def agent_batches(count: int) -> list[bytes]:
    """Bodies made before the run, so the load generator spends its time sending (the ids
    repeat after ``count`` requests; the store ignores spans it already holds)."""
    rng = random.Random(3)
    return [
        export_request([span for _ in range(TRACES_PER_REQUEST) for span in agent_trace(rng).spans])
        for _ in range(count)
    ]


def test_overload_is_refused_with_retry_after_and_memory_stays_bounded(tmp_path: Path) -> None:
    config = {"server": {"max_pending_requests": MAX_PENDING}, "workers": {"poll_interval": 0.05}}
    with start_server(tmp_path, config=config) as server:
        pid = server.process.pid
        baseline = proc_status_mb(pid, "VmRSS")
        bodies = agent_batches(100)
        # Four times as many back-to-back clients as the server admits at once: an overload on a
        # machine of any speed (a fixed rate stopped overloading once ingest got fast enough).
        result = overload(
            server.base_url,
            pid,
            lambda n: bodies[n % len(bodies)],
            spans_per_request=SPANS_PER_REQUEST,
            seconds=3,
            concurrency=4 * MAX_PENDING,
        )
        assert httpx.get(f"{server.base_url}/healthz", timeout=5).status_code == 200
    assert set(result.statuses) == {200, 503}, result.statuses
    assert result.retry_after == {"1": result.statuses[503]}
    assert not result.transport_errors, result.transport_errors
    assert max(result.rss_samples) < baseline + RSS_GROWTH_BOUND_MB, (
        baseline,
        max(result.rss_samples),
    )
    print(
        f"\nbackpressure: {result.statuses[200]} acknowledged, {result.statuses[503]} refused with "
        f"Retry-After; RSS {baseline:.0f} MiB before, at most {max(result.rss_samples):.0f} MiB under load"
    )
