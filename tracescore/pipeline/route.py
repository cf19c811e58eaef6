"""Routing runs to bindings: which (binding, run) pairs are sampled, and the path each sampled
pair takes. The live worker's batches and the offline commands both route through
:meth:`Router.route`, so they sample alike (boosts included) and decide cascades alike.

A pair is sampled at the binding's rate for the run's agent (raised by a firing
``sampling.boost``, :mod:`~tracescore.pipeline.boost`), by its trace's position
(:mod:`~tracescore.pipeline.sampling`). The live worker first decides each trace at every
binding's *ceiling* (:meth:`Router.ceilings`), before it loads the trace, and passes those
verdicts in: a pair is then sampled when its ceiling verdict was, and, for a boosted binding,
its own agent's rate samples it too.

A sampled pair is scored at once when its scorer is synchronous and unlimited, a cascade
binding decided at once when its upstream's row is already there; every other pair (a judge,
a limited binding, a cascade waiting for one) is left for the asynchronous path
(:meth:`~tracescore.pipeline.cascade.Cascades.score_later`). Only a pair left unsampled gets a
``sampling_decisions`` row: a sampled one's score row says as much (coverage counts both,
:func:`~tracescore.store.score_aggregates.coverage`), and a decision row beside each score row
was a fifth of a batch's insert.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tracescore.extract.model import AgentRun
from tracescore.pipeline.bindings import CompiledBinding
from tracescore.pipeline.boost import Boosts
from tracescore.pipeline.budget import InputCut
from tracescore.pipeline.cascade import Cascades, marked, not_triggered
from tracescore.pipeline.sampling import sampled_at, unit_hash
from tracescore.pipeline.score_rows import decision_row
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.spans import Trace
from tracescore.store.scores import SamplingDecision, StoredScore

Inputs = dict[int, tuple[ScorerRun, InputCut | None]]
"""What scorers read of each run (by ``id(run)``), built once for all its bindings."""
ScoreNow = Callable[[CompiledBinding, AgentRun, Inputs, datetime], StoredScore]
"""Scores a synchronous binding on a run in the calling thread."""
Select = Callable[[CompiledBinding, AgentRun], bool]
"""Which sampled pairs are scored (a backfill skips the runs it has current scores for)."""


@dataclass(slots=True, kw_only=True)
class Routed:
    """What routing a set of runs gave."""

    decisions: list[SamplingDecision] = field(default_factory=list)
    """The sampling decisions on the runs some binding left unsampled."""
    sampled: list[str] = field(default_factory=list)
    """The binding of each (binding, run) pair sampled: counted, their rows say the rest."""
    rows: list[StoredScore] = field(default_factory=list)
    """The rows of the pairs scored at once."""
    later: list[tuple[CompiledBinding, AgentRun]] = field(default_factory=list)
    """Sampled (binding, run) pairs for the asynchronous path (judges, limits)."""


class Router:
    """Routes runs to ``bindings`` (every cascade's upstream before it, see
    :func:`~tracescore.pipeline.cascade.ordered`) at the rates ``boosts`` give, scoring the
    synchronous pairs with ``score_now``."""

    def __init__(
        self, bindings: Sequence[CompiledBinding], boosts: Boosts, score_now: ScoreNow
    ) -> None:
        self.bindings = list(bindings)
        self.boosts = boosts
        self._score_now = score_now
        self.synchronous = {
            binding.name: binding.scorer.is_synchronous and binding.limiter is None
            for binding in self.bindings
        }
        """Bindings scored at once; the others take the asynchronous path."""
        self.cascades = Cascades(self.bindings, self.synchronous)
        """Which ``after:`` bindings wait for their upstream (:mod:`~tracescore.pipeline.cascade`)."""

    def ceilings(self) -> list[float]:
        """Each binding's highest rate now (its boost's alert state refreshed if stale): what
        a trace is decided at before it is loaded and its runs' agents are known."""
        self.boosts.refresh()
        return [self.boosts.ceiling(binding.config) for binding in self.bindings]

    def route(
        self,
        runs: Sequence[AgentRun],
        into: Routed,
        now: datetime,
        *,
        spans: Trace | None = None,
        verdicts: Sequence[bool] | None = None,
        known: Sequence[StoredScore] = (),
        select: Select | None = None,
    ) -> None:
        """Route ``runs`` (one trace's, or several traces' offline) into ``into``: decisions,
        rows scored at once and the pairs left for later.

        ``spans``: the trace ``when:`` span conditions read (without it, each run's own).
        ``verdicts``: each binding's decision on the trace at its ceiling, when made before
        (the live worker's). ``known``: rows already stored that a cascade decides on (a
        backfill's). ``select``: which sampled pairs to score."""
        inputs: Inputs = {}
        score_now = self._score_now
        positions: dict[str, float] = {}
        for index, binding in enumerate(self.bindings):
            verdict = verdicts[index] if verdicts is not None else None
            synchronous = self.synchronous[binding.name]
            for run in binding.eligible(runs, spans):
                if not self._sampled(binding, run, verdict, positions):
                    into.decisions.append(decision_row(binding, run, False, now))
                    continue
                into.sampled.append(binding.name)  # its score row records the decision
                if select is not None and not select(binding, run):
                    continue
                gate = binding.gate
                if gate is not None and not self.cascades.waits(binding):
                    trigger = gate.decide([*into.rows, *known] if known else into.rows, run)
                    into.rows.append(
                        not_triggered(binding, run, trigger, now)
                        if trigger.kind is None
                        else marked(score_now(binding, run, inputs, now), trigger)
                    )
                elif synchronous and gate is None:
                    into.rows.append(score_now(binding, run, inputs, now))
                else:
                    into.later.append((binding, run))

    def _sampled(
        self,
        binding: CompiledBinding,
        run: AgentRun,
        verdict: bool | None,
        positions: dict[str, float],
    ) -> bool:
        """Whether ``binding`` samples ``run``: its ceiling ``verdict`` when that settles it
        (unsampled at the ceiling, or no boost to lower the rate for the run's agent), else
        the run's position against the rate for its agent."""
        if verdict is not None and (not verdict or binding.config.sampling.boost is None):
            return verdict
        if (position := positions.get(run.trace_id)) is None:
            position = positions[run.trace_id] = unit_hash(run.trace_id)
        return sampled_at(position, self.boosts.rate(binding.config, run.agent_name))
