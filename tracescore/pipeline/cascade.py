"""Cascades in the scoring worker: the cheap binding scored first, the one ``after`` it only on
the runs that flagged (:mod:`tracescore.pipeline.cascade_gate`).

The worker scores bindings in the order :func:`ordered` gives (every upstream before the
bindings after it), so in a batch's synchronous pass a code scorer's row is there when the
binding after it is decided. A cascade binding *waits* when its upstream is not scored in that
pass (a judge, a limited binding, or one that itself waits): its runs go to the trace's
asynchronous remainder, which :meth:`Cascades.score_later` scores in rounds, each binding's
pair once its upstream's on the same run is done.

Every run a cascade binding sampled ends with a row: its score (its ``steps.cascade`` saying
whether it was flagged or explored, and by what), or a ``skipped_cascade`` row whose reason
says why it was not triggered (the upstream scored it high, errored, or never scored it).
Coverage counts those as filtered by the cascade, not as lost
(:func:`tracescore.store.score_aggregates.coverage`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime

from tracescore.extract.model import AgentRun
from tracescore.pipeline.bindings import BindingError, CompiledBinding
from tracescore.pipeline.cascade_config import cascade_problems
from tracescore.pipeline.cascade_gate import NOT_TRIGGERED, Trigger
from tracescore.pipeline.score_rows import score_row
from tracescore.store.scores import StoredScore

Score = Callable[[CompiledBinding, AgentRun], Awaitable[StoredScore]]
"""How the worker scores one binding on one run on the asynchronous path."""


def ordered(bindings: Sequence[CompiledBinding]) -> list[CompiledBinding]:
    """``bindings`` with every cascade's upstream before it, otherwise in their given order.

    Refuses (naming the binding) an ``after`` that names no binding here, other runs, or a
    loop: the config file's check reports these at start, this is for bindings built without
    one."""
    problems = cascade_problems([binding.config for binding in bindings])
    if problems:
        (_, index, *key), message = problems[0]
        name = bindings[int(index)].name
        raise BindingError(f"scorer binding {name!r}: {'.'.join(key)}: {message}")
    by_name = {binding.name: binding for binding in bindings}
    placed: dict[str, CompiledBinding] = {}

    def place(binding: CompiledBinding) -> None:
        if binding.name in placed:
            return
        if binding.gate is not None:
            place(by_name[binding.gate.upstream])
        placed[binding.name] = binding

    for binding in bindings:
        place(binding)
    return list(placed.values())


class Cascades:
    """Which of a worker's bindings wait for an upstream scored later, and the rounds of a
    trace's asynchronous remainder."""

    def __init__(
        self, bindings: Sequence[CompiledBinding], synchronous: Mapping[str, bool]
    ) -> None:
        deferred: set[str] = set()
        for binding in bindings:  # in :func:`ordered` order: upstreams first
            gate = binding.gate
            if not synchronous[binding.name] or (gate is not None and gate.upstream in deferred):
                deferred.add(binding.name)
        self._waiting = {
            binding.name
            for binding in bindings
            if binding.gate is not None and binding.name in deferred
        }
        self.active = any(binding.gate is not None for binding in bindings)
        """Some binding is a cascade."""

    def waits(self, binding: CompiledBinding) -> bool:
        """The cascade binding cannot be decided in the synchronous pass: its upstream's row
        comes later (or it is not synchronous itself)."""
        return binding.name in self._waiting

    async def score_later(
        self,
        pairs: Sequence[tuple[CompiledBinding, AgentRun]],
        rows: Sequence[StoredScore],
        score: Score,
    ) -> list[StoredScore]:
        """The rows of ``pairs``, scored with ``score`` in rounds: a cascade binding's pair is
        decided in the first round after its upstream's pair on the run is done (its row then
        among ``rows``, the trace's rows so far, or an earlier round's), so it waits for a judge
        still pending and for nothing else."""
        if not self.active:
            return list(await asyncio.gather(*(score(binding, run) for binding, run in pairs)))
        found: list[StoredScore] = []
        remaining = list(pairs)
        while remaining:
            pending = {(b.name, r.trace_id, r.span_id) for b, r in remaining}
            free = [
                binding.gate is None
                or (binding.gate.upstream, run.trace_id, run.span_id) not in pending
                for binding, run in remaining
            ]
            # Some pair is free: cascades do not loop (:func:`ordered` refused any that does).
            ready = [pair for pair, now in zip(remaining, free, strict=True) if now]
            remaining = [pair for pair, now in zip(remaining, free, strict=True) if not now]
            known = [*rows, *found]
            jobs: list[Awaitable[StoredScore]] = []
            triggers: list[Trigger | None] = []
            for binding, run in ready:
                trigger = binding.gate.decide(known, run) if binding.gate is not None else None
                if trigger is not None and trigger.kind is None:
                    found.append(not_triggered(binding, run, trigger))
                    continue
                jobs.append(score(binding, run))
                triggers.append(trigger)
            for trigger, row in zip(triggers, await asyncio.gather(*jobs), strict=True):
                found.append(marked(row, trigger))
        return found


def marked(row: StoredScore, trigger: Trigger | None) -> StoredScore:
    """``row`` with what triggered it in its ``steps.cascade`` (unchanged for no cascade)."""
    if trigger is not None:
        row["steps"] = {**(row["steps"] or {}), "cascade": trigger.to_json()}
    return row


def not_triggered(
    binding: CompiledBinding, run: AgentRun, trigger: Trigger, now: datetime | None = None
) -> StoredScore:
    """The ``skipped_cascade`` row of a run the cascade did not score, saying why."""
    row = score_row(binding, run, status=NOT_TRIGGERED, now=now)
    row["reason"] = f"not triggered: {trigger.reason}"
    return marked(row, trigger)
