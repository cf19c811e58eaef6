"""The monitoring background task of a service: queue gauges and, as leader, alert rules.

Queue gauges are sampled from the database rather than counted in process, so every instance
exports the same backlog whichever instance promoted or claimed the traces.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tracescore import metrics
from tracescore.background import BackgroundFactory
from tracescore.backoff import Backoff, repeat
from tracescore.monitor.config import AlertsConfig, MonitorConfig
from tracescore.store import Database
from tracescore.store.trace_queue import count_in_states

if TYPE_CHECKING:
    from tracescore.monitor.alerts import AlertEvaluator

UNSCORED_STATES = ("pending", "ready", "claimed")


def sample_trace_states(engine: Database) -> None:
    """Set the backlog gauges from the traces not yet scored."""
    counts = count_in_states(engine, UNSCORED_STATES)
    for state in UNSCORED_STATES:
        metrics.traces_in_state.labels(state).set(counts.get(state, 0))
    metrics.queue_depth.set(counts.get("ready", 0))


def monitoring_task(
    engine: Database, alerts: AlertsConfig, monitor: MonitorConfig
) -> BackgroundFactory:
    """A :meth:`Service.add_background` factory: sample the backlog gauges every
    ``monitor.gauge_interval`` and run an alert round every ``monitor.evaluation_interval``
    (a round does nothing unless this instance holds the evaluator lease). While the database
    is down each backs off and logs when that starts and ends (:func:`~tracescore.backoff.repeat`)."""

    async def run() -> None:
        steps = [
            repeat(
                lambda: sample_trace_states(engine),
                monitor.gauge_interval,
                Backoff("queue gauges: the database"),
            )
        ]
        evaluator: AlertEvaluator | None = None
        if alerts.rules:
            # Imported only for rules: the evaluator's module brings httpx (and with it click,
            # rich and pygments, ~0.1 s of CPU) into every service start otherwise.
            from tracescore.monitor.alerts import AlertEvaluator

            evaluator = AlertEvaluator(engine, alerts, monitor)
        if evaluator is not None:
            steps.append(
                repeat(
                    evaluator.run_once,
                    monitor.evaluation_interval,
                    Backoff("alert rounds: the database"),
                )
            )
        try:
            await asyncio.gather(*steps)
        finally:
            if evaluator is not None:
                try:
                    evaluator.release()  # hand the lease over now rather than when it expires
                finally:
                    evaluator.close()

    return run
