"""Scoring worker processes: the pipeline on its own cores, beside the service's ingest.

Scoring is CPU-bound Python (extraction and the code scorers). In a thread of the service it
shares one GIL with ingest's acknowledgements and the API, so the service scores on one core
and acknowledgements wait behind batches. ``workers.processes`` (default: one per core, at most
4) runs the worker in that many child processes instead (each a
:class:`~tracescore.helper_processes.Child`: started with the service, replaced when it dies, stopped
with it within ``server.shutdown_timeout``). They share the work through the trace queue's
leases, as several services do. With 0 the worker runs in the service process, as a
background task.

A child's metrics reach the service's ``/metrics`` as report lines: :class:`MetricRelay` stands
in for :mod:`tracescore.metrics` in the child, adds the calls up and sends what they came to,
which the service replays on its own metrics (:func:`replay`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from typing import Any, TextIO

from tracescore import helper_processes, metrics
from tracescore.background import BackgroundFactory
from tracescore.batch_gc import tune_for_scoring
from tracescore.helper_processes import Child
from tracescore.pipeline.boost import store_boosts
from tracescore.pipeline.config import ScoringConfig
from tracescore.pipeline.sampling import skip_unsampled
from tracescore.store import SpanStore, open_store

log = logging.getLogger(__name__)

_COUNTED = frozenset(
    (
        "traces_done",
        "sampling_decision",
        "trace_unread",
        "trace_read_elsewhere",
        "traces_failed",
        "stale_completions",
        "text_values_replaced",
    )
)
"""The counting calls a scoring process relays: each takes its labels, then ``count``."""
_RELAYED = _COUNTED | {"observe_scores", "judge_call"}
"""What a report line may call on the service's metrics (:func:`replay`)."""
_FLUSH_SECONDS = 0.25
_REVIVE_SECONDS = 1.0


class MetricRelay:
    """:class:`~tracescore.pipeline.scoring.PipelineMetrics` for a child: calls are
    added up in the process (counts by their labels, score observations by binding, scorer and
    status) and, every quarter second, what they came to goes to the service in one report
    line. Relaying each call (about eleven a trace) cost the child a lock, a closure and a
    list entry per call, and the service a replay of each; now a batch's calls cost a dict
    update each here and one replay per label set there."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._counts: dict[tuple[str, tuple[Any, ...]], int] = {}
        self._scores: dict[tuple[str, str, str], tuple[list[float | None], list[float]]] = {}
        self._judge_calls: list[tuple[list[Any], dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._flush_periodically, name="metric relay", daemon=True
        )
        self._thread.start()

    def _count(self, name: str, labels: tuple[Any, ...], count: int) -> None:
        key = (name, labels)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + count

    def traces_done(self, count: int) -> None:
        self._count("traces_done", (), count)

    def sampling_decision(self, binding: str, sampled: bool, count: int = 1) -> None:
        self._count("sampling_decision", (binding, sampled), count)

    def trace_unread(self, service: str, reason: str, count: int = 1) -> None:
        self._count("trace_unread", (service, reason), count)

    def trace_read_elsewhere(self, service: str, count: int = 1) -> None:
        self._count("trace_read_elsewhere", (service,), count)

    def traces_failed(self, reason: str, count: int) -> None:
        self._count("traces_failed", (reason,), count)

    def stale_completions(self, count: int) -> None:
        self._count("stale_completions", (), count)

    def text_values_replaced(self, where: str, count: int) -> None:
        self._count("text_values_replaced", (where,), count)

    def observe_score(
        self, binding: str, scorer: str, status: str, score: float | None, latency_seconds: float
    ) -> None:
        with self._lock:
            if (observed := self._scores.get((binding, scorer, status))) is None:
                observed = self._scores[(binding, scorer, status)] = ([], [])
            observed[0].append(score)
            observed[1].append(latency_seconds)

    def judge_call(self, *args: Any, **kwargs: Any) -> None:
        """Relayed call by call: judge calls are few, and each has its own outcome."""
        with self._lock:
            self._judge_calls.append((list(args), kwargs))

    def flush(self) -> None:
        with self._lock:
            counts, self._counts = self._counts, {}
            scores, self._scores = self._scores, {}
            judged, self._judge_calls = self._judge_calls, []
        calls: list[tuple[str, list[Any], dict[str, Any]]] = [
            (name, [*labels, count], {}) for (name, labels), count in counts.items()
        ]
        calls += [
            ("observe_scores", [*key, values, latencies], {})
            for key, (values, latencies) in scores.items()
        ]
        calls += [("judge_call", args, kwargs) for args, kwargs in judged]
        if calls:
            helper_processes.report(self._stream, {"metrics": calls})

    def close(self) -> None:
        self._stopped.set()
        self._thread.join()
        self.flush()

    def _flush_periodically(self) -> None:
        while not self._stopped.wait(_FLUSH_SECONDS):
            self.flush()


def replay(report: dict[str, Any]) -> None:
    """Apply a child's relayed metric calls to this process's metrics."""
    for name, args, kwargs in report.get("metrics", ()):
        if name in _RELAYED:
            getattr(metrics, name)(*args, **kwargs)


def scoring_processes_task(config: ScoringConfig, store: SpanStore) -> BackgroundFactory:
    """The service's background task that runs ``workers.processes`` scoring processes: starts
    them, replaces any that dies, and stops them when cancelled (the service stopping)."""
    # The service's own promotion finishes unsampled traces too, as the processes' does.
    # Its boosts are refreshed by the loop below, the processes' by their workers' claims.
    boosts = store_boosts(config.scorers, store.engine, config.workers.boost_refresh)
    skip_unsampled(store.queue, config.scorers, metrics, boosts)
    url = store.engine.url.render_as_string(hide_password=False)
    count = config.workers.process_count
    workers = [
        Child(
            f"scoring worker {index + 1} of {count}",
            __name__,
            {
                "store_url": url,
                "shutdown_timeout": config.shutdown_timeout,
                "config": config.model_dump(mode="json"),
            },
            on_report=replay,
            quits_while_starting=True,
        )
        for index in range(count)
    ]

    async def run() -> None:
        for worker in workers:
            worker.start()
        try:
            while True:
                await asyncio.sleep(_REVIVE_SECONDS)
                if boosts.active:
                    await asyncio.to_thread(boosts.refresh)
                for worker in workers:
                    try:
                        worker.revive()
                    except Exception:
                        log.exception(
                            "could not start a new %s; trying again in a second", worker.name
                        )
        finally:
            await asyncio.gather(*(asyncio.to_thread(worker.stop) for worker in workers))

    return run


def main() -> None:
    """A scoring process: the service's config from the environment; it ends when the service
    closes its standard input, finishing or handing back what it holds."""
    from tracescore.pipeline.scoring_task import pipeline_task  # the scorers

    helper_processes.log_to_stderr(logging.WARNING)
    found = helper_processes.settings()
    helper_processes.exit_after_service(
        sys.stdin.fileno(), found["shutdown_timeout"], "scoring worker"
    )
    config = ScoringConfig.model_validate(found["config"])
    store = open_store(
        config.store,
        config.assembly.readiness(),
        create=False,
        read_limit=config.assembly.read_limit(),
    )
    relay = MetricRelay(sys.stdout)
    tune_for_scoring()
    try:
        asyncio.run(_work(pipeline_task(config, store, metrics=relay)))
    finally:
        relay.close()
        store.close()


async def _work(pipeline: BackgroundFactory) -> None:
    """Run the pipeline until standard input ends (the service stopped or died)."""
    helper_processes.started()  # a stop now cancels the pipeline, which hands its claims back
    loop = asyncio.get_running_loop()
    ended = asyncio.Event()

    def read() -> None:
        try:
            data = os.read(
                sys.stdin.fileno(), 65536
            )  # unbuffered: what is there, or b"" at the end
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(sys.stdin.fileno())
            ended.set()

    loop.add_reader(sys.stdin.fileno(), read)
    task = asyncio.create_task(pipeline())
    await ended.wait()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
