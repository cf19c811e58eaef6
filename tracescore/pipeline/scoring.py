"""Scoring runs through bindings: what the live worker, conversations, feedback triggers,
``rescore_on_change`` and the offline commands share.

:meth:`Scoring.score` scores one binding on one run (or a conversation) within the binding's
limits and the instance's concurrency, counting its judge calls; :meth:`Scoring.score_now` scores
a synchronous binding in the calling thread within the scorer's time budget;
:meth:`Scoring.score_runs` routes a set of runs (:mod:`~tracescore.pipeline.route`, as the live
worker routes a batch's traces) and scores them, the offline commands' path; and
:meth:`Scoring.publish` counts stored rows in the metrics and re-emits them, whichever loop
stored them. Storing is each caller's: every one stores its rows in a transaction with its own
bookkeeping (a claim's completion, a trigger's outcome, a backfill's batch).

Nothing here holds a store or claims anything: offline scoring needs no database, and the
worker (:mod:`~tracescore.pipeline.scoring_worker`) keeps the claims, batches and writes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import UTC, datetime
from typing import Protocol

from tracescore import metrics
from tracescore.extract.base import Convention
from tracescore.extract.conversation import Conversation
from tracescore.extract.conversation_id import DEFAULT_ID_ATTRIBUTES
from tracescore.extract.model import AgentRun
from tracescore.extract.registry import CONVENTIONS
from tracescore.pipeline.bindings import CompiledBinding, primary_only
from tracescore.pipeline.boost import Boosts
from tracescore.pipeline.budget import InputCut, ScorerTimeout, Watchdog, within_input_budget
from tracescore.pipeline.cascade import ordered
from tracescore.pipeline.config import WorkersConfig
from tracescore.pipeline.route import Inputs, Routed, Router, Select
from tracescore.pipeline.score_rows import score_row
from tracescore.scorers.results import ScoreResult
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.store.scores import SamplingDecision, StoredScore

log = logging.getLogger(__name__)

StoredRows = Callable[[Collection[str]], list[StoredScore]]
"""Reads the score rows stored for the given trace ids (a backfill's cascades decide on them)."""


class PipelineMetrics(Protocol):
    """The metrics scoring and the worker record (:mod:`tracescore.metrics` has them all)."""

    def traces_done(self, count: int) -> None: ...

    def sampling_decision(self, binding: str, sampled: bool, count: int = 1) -> None: ...

    def observe_score(
        self, binding: str, scorer: str, status: str, score: float | None, latency_seconds: float
    ) -> None: ...

    def judge_call(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float,
        latency_seconds: float,
        *,
        outcome: str = "ok",
        repairs: int = 0,
    ) -> None: ...

    def text_values_replaced(self, where: str, count: int) -> None: ...

    def trace_unread(self, service: str, reason: str, count: int = 1) -> None: ...

    def trace_read_elsewhere(self, service: str, count: int = 1) -> None: ...

    def traces_failed(self, reason: str, count: int) -> None: ...

    def stale_completions(self, count: int) -> None: ...


class Scoring:
    """Scoring with a set of bindings (see the module).

    ``boosts``: the bindings' ``sampling.boost`` alert states (none watched without).
    ``timed``: synchronous scorers run within ``config.budget.scorer_seconds`` (live);
    offline a scorer takes the time it takes.
    """

    def __init__(
        self,
        bindings: Sequence[CompiledBinding],
        config: WorkersConfig,
        *,
        metrics: PipelineMetrics = metrics,
        emit: Callable[[StoredScore], None] | None = None,
        boosts: Boosts | None = None,
        timed: bool = True,
        conversation_attributes: Sequence[str] = DEFAULT_ID_ATTRIBUTES,
        conventions: Sequence[Convention] = CONVENTIONS,
    ) -> None:
        self.config = config
        self.metrics = metrics
        """Where counts go: the process's metrics, or a scoring process's relay."""
        self.bindings = ordered([b for b in bindings if b.config.target != "conversation"])
        """The bindings scoring runs of a trace, every cascade's upstream before it."""
        self.conversation_bindings = [b for b in bindings if b.config.target == "conversation"]
        """The bindings scoring whole conversations (:mod:`tracescore.pipeline.conversations`)."""
        self.router = Router(
            self.bindings,
            boosts or Boosts([binding.config for binding in bindings], None, config.boost_refresh),
            self.score_now,
        )
        """Routes runs to the bindings, live and offline alike."""
        self.conversation_attributes = list(conversation_attributes)
        self.conventions = list(conventions)
        """The claim order runs are extracted with (the declared conventions first)."""
        self.only_primary = primary_only(self.bindings)
        """No binding scores LLM or tool runs: extraction builds the primary runs only."""
        self.timed = timed
        self._emit = emit
        self._slots = asyncio.Semaphore(config.concurrency)
        self._watchdog = Watchdog()

    def warm_up(self) -> None:
        """Run each code scorer once on a tiny run, so lazily loaded models and lexicons (the
        completeness NLP model takes ~1 s) load before the first trace, not during it."""
        for binding in self.bindings:
            if not binding.scorer.uses_judge:
                binding.scorer.run_sync({"input": "warm up", "output": "warm up"})

    async def score_later(
        self, pairs: Sequence[tuple[CompiledBinding, AgentRun]], rows: Sequence[StoredScore]
    ) -> list[StoredScore]:
        """The rows of the pairs routing left for the asynchronous path, each cascade's once
        its upstream's row is among ``rows`` or scored here."""
        return await self.router.cascades.score_later(pairs, rows, self.score)

    async def score_runs(
        self,
        runs: Sequence[AgentRun],
        select: Select | None = None,
        stored: StoredRows | None = None,
    ) -> tuple[list[StoredScore], list[SamplingDecision]]:
        """Route runs to bindings, count the sampling decisions and score the sampled runs
        (the offline commands' path, one run set at a time); returns the score rows, in the
        bindings' order, and the decisions on the runs left unsampled (a sampled run's score
        row records its decision).

        ``select`` narrows which sampled runs are scored (a backfill skips runs it already has
        current scores for); ``stored`` then reads the rows already stored, which a cascade
        after a run left out decides on.
        """
        known: list[StoredScore] = []
        if select is not None and stored is not None and self.router.cascades.active:
            known = await asyncio.to_thread(self._current, stored, {r.trace_id for r in runs})
        routed = Routed()
        self.router.boosts.refresh()  # the live worker's claims refresh them; here, each call
        self.router.route(runs, routed, datetime.now(UTC), known=known, select=select)
        rows = routed.rows + await self.score_later(routed.later, [*routed.rows, *known])
        order = {binding.name: index for index, binding in enumerate(self.bindings)}
        rows.sort(key=lambda row: order[row["binding"]])
        decided = Counter([(d["binding"], False) for d in routed.decisions])
        decided.update((name, True) for name in routed.sampled)
        for (name, sampled), count in decided.items():
            self.metrics.sampling_decision(name, sampled, count)
        return rows, routed.decisions

    def _current(self, stored: StoredRows, trace_ids: Collection[str]) -> list[StoredScore]:
        """The rows ``stored`` holds for ``trace_ids`` under the bindings' current versions."""
        versions = {binding.name: binding.scorer.version for binding in self.bindings}
        return [
            row
            for row in stored(trace_ids)
            if versions.get(row["binding"]) == row["scorer_version"]
        ]

    async def score(
        self, binding: CompiledBinding, run: AgentRun, *, subject: Conversation | None = None
    ) -> StoredScore:
        """The score row of one binding on one run, within the binding's limits and the
        instance's concurrency; with ``subject``, the binding scores that conversation instead,
        and the row hangs on ``run`` (its last turn's)."""
        admission = await binding.limiter.admit() if binding.limiter else None
        if admission is not None and admission.status != "ok":
            return score_row(binding, run, status=admission.status, error=admission.reason)
        scorer_input, cut = (
            self.scorer_input(run) if subject is None else (ScorerRun.of(subject), None)
        )
        cost: float | None = None  # unknown, should the run raise or be cancelled
        try:
            async with self._slots:
                result = await binding.scorer.run(scorer_input)
            cost = result.cost_usd
        finally:
            if binding.limiter is not None and admission is not None:
                await asyncio.to_thread(binding.limiter.settle, admission, cost)
        self._count_judge_calls(binding, result)
        return score_row(binding, run, status=result.status, result=result, cut=cut)

    def _count_judge_calls(self, binding: CompiledBinding, result: ScoreResult) -> None:
        for call in result.judge_calls:
            outcome = "error" if call.error is not None else "cached" if call.cached else "ok"
            self.metrics.judge_call(
                call.model,
                call.input_tokens,
                call.output_tokens,
                call.cost_usd,
                call.duration_ms / 1000,
                outcome=outcome,
                repairs=call.repairs,
            )
        if (
            result.status == "error"
            and binding.scorer.uses_judge
            and not any(call.error is not None for call in result.judge_calls)
        ):
            # The failure left no call behind (a custom judge's exception, a step's own error):
            # count it against the scorer's judge all the same.
            judge = binding.scorer.judge
            model = str(getattr(judge, "model", judge) or "unknown")
            self.metrics.judge_call(model, 0, 0, 0.0, result.duration_ms / 1000, outcome="error")

    def score_now(
        self, binding: CompiledBinding, run: AgentRun, inputs: Inputs, now: datetime
    ) -> StoredScore:
        """The score row of a synchronous binding on ``run``, scored in this thread; what
        scorers read of a run is built once for every binding (``inputs``, by run)."""
        if (budgeted := inputs.get(id(run))) is None:
            budgeted = inputs[id(run)] = self.scorer_input(run)
        scorer_input, cut = budgeted
        result = (
            self._score_in_time(binding, scorer_input)
            if self.timed
            else binding.scorer.run_sync(scorer_input)
        )
        return score_row(binding, run, status=result.status, result=result, now=now, cut=cut)

    def scorer_input(self, run: AgentRun) -> tuple[ScorerRun, InputCut | None]:
        """What scorers read of ``run``, within the input budget, and what that cut."""
        return within_input_budget(ScorerRun.of(run), self.config.budget.max_chars)

    def _score_in_time(self, binding: CompiledBinding, scorer_input: ScorerRun) -> ScoreResult:
        """A synchronous scorer's result, or an ``error`` result when it ran past its time
        budget and was interrupted (:class:`~tracescore.pipeline.budget.Watchdog`)."""
        seconds = self.config.budget.scorer_seconds
        started = time.perf_counter()
        try:
            with self._watchdog.limit(seconds):
                return binding.scorer.run_sync(scorer_input)
        except ScorerTimeout:
            elapsed = time.perf_counter() - started
            log.warning(
                "scorer %s on trace %s stopped after %.1f s (workers.budget.scorer_seconds: %g)",
                binding.name,
                scorer_input.trace_id,
                elapsed,
                seconds,
            )
            return ScoreResult(
                scorer_id=binding.scorer.id,
                scorer_version=binding.scorer.version,
                status="error",
                error=f"stopped after {elapsed:.1f} s: the scorer's time budget is {seconds:g} s "
                "(workers.budget.scorer_seconds)",
                duration_ms=elapsed * 1000,
            )

    def publish(self, rows: Iterable[StoredScore]) -> None:
        """Count stored ``rows`` in the metrics and re-emit them: every loop of a scoring
        process (traces, conversations, feedback triggers) reports its rows alike."""
        for row in rows:
            self.metrics.observe_score(
                row["binding"],
                row["scorer_id"],
                row["status"],
                row["score"],
                row["latency_ms"] / 1000,
            )
            if self._emit is not None:
                self._emit(row)
