"""Build the scoring worker of a config and run it as a background task of the service."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import cast

from tracescore import metrics
from tracescore.background import BackgroundFactory
from tracescore.extract.declared import claim_order
from tracescore.pipeline.bindings import CompiledBinding, compile_bindings
from tracescore.pipeline.boost import store_boosts
from tracescore.pipeline.config import LearntThreshold, ScoringConfig
from tracescore.pipeline.learnt_thresholds import LearntThresholds
from tracescore.pipeline.sampling import skip_unsampled
from tracescore.pipeline.scoring import PipelineMetrics, Scoring
from tracescore.pipeline.scoring_worker import ScoringWorker
from tracescore.store import SpanStore
from tracescore.store.scores import StoredScore

log = logging.getLogger(__name__)


def build_worker(
    config: ScoringConfig,
    store: SpanStore,
    emit: Callable[[StoredScore], None] | None = None,
    metrics: PipelineMetrics = metrics,
) -> ScoringWorker:
    """A worker for ``config``'s bindings on ``store``; raises :class:`BindingError` early.

    Here the worker meets the store it shares with the service, so here the store's queue is
    told what the worker's promotion and failures need: to finish the traces no binding
    samples (:func:`~tracescore.pipeline.sampling.skip_unsampled`) and to count the traces
    parked as failed."""
    if config.judges:
        from tracescore.judge import use_verdict_store  # only with judges

        use_verdict_store(store.engine)
    bindings = compile_bindings(config.scorers, dict(config.judges), store.engine)
    configs = [binding.config for binding in bindings]
    boosts = store_boosts(configs, store.engine, config.workers.boost_refresh)
    scoring = Scoring(
        bindings,
        config.workers,
        metrics=metrics,
        emit=emit,
        boosts=boosts,
        conversation_attributes=config.conversations.id_attributes,
        conventions=claim_order(config.conventions),
    )
    store.queue.on_failed = metrics.traces_failed
    skip_unsampled(store.queue, configs, metrics, boosts)
    return ScoringWorker(store, scoring, config.assembly.lease_seconds)


async def relearn(learnt: LearntThresholds, bindings: Sequence[CompiledBinding]) -> None:
    """Label with the thresholds learnt from people's verdicts (``threshold: learn``): learnt
    now, then again every ``refresh``; scores already stored keep the label they got. A
    failed read (the database away) keeps the threshold it had until the next round."""
    learning = [b for b in bindings if isinstance(b.config.threshold, LearntThreshold)]
    pause = min(cast(LearntThreshold, b.config.threshold).refresh for b in learning)
    while True:
        for binding in learning:
            try:
                found = await asyncio.to_thread(learnt.get, binding.name)
            except Exception:
                log.warning("learning %s's pass threshold failed", binding.name, exc_info=True)
                continue
            binding.threshold = found.value
        await asyncio.sleep(pause)


def pipeline_task(
    config: ScoringConfig, store: SpanStore, metrics: PipelineMetrics = metrics
) -> BackgroundFactory:
    """The task that scores ready traces (and, with ``target: conversation`` bindings, ready
    conversations; with ``rescore_on_change``, a changed scorer's sample of past runs) and
    re-emits the scores: a background task of the service
    (``workers.processes: 0``) or the work of a scoring process."""
    emitter = None
    if config.export.otlp_endpoint:
        from tracescore.emit.otel import EvaluationEmitter

        emitter = EvaluationEmitter(config.export)
    emit = emitter.emit if emitter else None
    worker = build_worker(config, store, emit=emit, metrics=metrics)
    scoring = worker.scoring
    loops = [worker.run]
    if scoring.conversation_bindings:
        from tracescore.pipeline.conversations import ConversationScoring

        conversations = ConversationScoring(
            scoring, store, scoring.conversation_bindings, config.conversations, worker.owner
        )
        loops.append(conversations.run)
    if any(binding.config.on_feedback is not None for binding in scoring.bindings):
        from tracescore.pipeline.trigger_judging import FeedbackTriggers

        triggers = FeedbackTriggers(
            scoring, store, scoring.bindings, lease=config.workers.trigger_lease
        )
        loops.append(triggers.run)
    learnt = LearntThresholds(store.engine, config.scorers)
    if learnt.learning:
        loops.append(partial(relearn, learnt, scoring.bindings))
    if any(binding.config.rescore_on_change for binding in scoring.bindings):
        from tracescore.pipeline.rescore import rescore_tasks

        loops += [rescore.run for rescore in rescore_tasks(scoring, store, worker.owner)]

    async def run() -> None:
        try:
            await asyncio.gather(*(loop() for loop in loops))
        finally:
            if emitter is not None:
                emitter.shutdown()

    return run
