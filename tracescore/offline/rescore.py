"""Backfills: score stored traces again with the current scorer versions.

A score's id includes its scorer version, so scores of a new version are stored beside the old
ones (``tracescore compare`` reads both) and scoring again with the same version rewrites the
same rows. Runs that already have a current score (``ok`` or ``not_scorable``) are skipped unless
``force`` is set, so an interrupted backfill resumes where it stopped and a second one is free.
Runs go through the live worker's routing (:mod:`~tracescore.pipeline.route`), sampling and
limits; a ``--max-cost`` budget stops starting traces once what was spent, plus what the traces
in flight are expected to cost, would pass it.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tracescore.extract import extract_runs
from tracescore.extract.base import Convention
from tracescore.extract.linked import read_with_steps
from tracescore.extract.model import AgentRun
from tracescore.extract.registry import CONVENTIONS
from tracescore.offline.estimate import SAMPLE_RUNS
from tracescore.offline.sample import RunSample
from tracescore.pipeline.bindings import CompiledBinding, primary_only
from tracescore.pipeline.config import WorkersConfig
from tracescore.pipeline.sampling import is_sampled
from tracescore.pipeline.scoring import Scoring
from tracescore.store import SpanStore, connect
from tracescore.store.call_links import StoredLinks
from tracescore.store.score_reads import trace_scores
from tracescore.store.scores import (
    SamplingDecision,
    StoredScore,
    score_id,
    score_ids_of,
    upsert_decisions,
    upsert_scores,
)

_DONE = ("ok", "not_scorable")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_since(text: str, now: float | None = None) -> float:
    """Epoch seconds of ``7d`` / ``12h`` / ``30m`` / ``90s`` / ``2w`` ago, or of an ISO date."""
    match = _DURATION.match(text)
    if match:
        return (time.time() if now is None else now) - float(match[1]) * _UNITS[match[2]]
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"--since {text!r}: expected a duration (7d, 12h, 30m) or an ISO date"
        ) from None
    return moment.timestamp()


@dataclass
class Plan:
    """What a backfill would score: per binding, the runs still lacking a current score."""

    traces: list[str]
    """Traces with at least one run to score, most recently active first."""
    samples: dict[str, RunSample] = field(default_factory=dict)
    """Each binding's runs to score, counted, and a sample of them for cost estimates."""

    @property
    def runs(self) -> dict[str, int]:
        """Runs to score per binding."""
        return {name: sample.total for name, sample in self.samples.items()}


@dataclass
class Outcome:
    rows: list[StoredScore] = field(default_factory=list)
    traces_done: int = 0
    """Traces looked at (including those with nothing left to score)."""
    traces_scored: int = 0
    """Traces with at least one run scored."""
    cost_usd: float = 0.0
    stopped_by_budget: bool = False


class Backfill:
    def __init__(
        self,
        store: SpanStore,
        bindings: Sequence[CompiledBinding],
        *,
        force: bool = False,
        concurrency: int = 8,
        conventions: Sequence[Convention] = CONVENTIONS,
    ) -> None:
        self.store = store
        # Traces' runs only: a conversation is scored whole, by the service, when it is idle.
        self.bindings = [binding for binding in bindings if binding.config.target != "conversation"]
        self.force = force
        self.only_primary = primary_only(self.bindings)
        self.concurrency = concurrency
        self._links = StoredLinks.of(store)
        self.scoring = Scoring(
            self.bindings,
            WorkersConfig(concurrency=concurrency),
            timed=False,
            conventions=conventions,
        )

    def trace_ids(self, since: float) -> list[str]:
        summaries = self.store.list_traces(limit=2**62, since=since)
        return [summary.trace_id for summary in summaries]

    def _stored(self, trace_ids: Collection[str]) -> list[StoredScore]:
        """The score rows stored for ``trace_ids``: a cascade after a run skipped here (its
        upstream's score current) decides on its upstream's stored row."""
        with connect(self.store.engine) as connection:
            return [row for trace_id in trace_ids for row in trace_scores(connection, trace_id)]

    def _done(self, trace_id: str) -> set[str]:
        if self.force:
            return set()
        return score_ids_of(self.store.engine, trace_id, _DONE)

    def _todo(
        self, trace_id: str
    ) -> tuple[
        list[AgentRun],
        Callable[[CompiledBinding, AgentRun], bool],
        list[tuple[CompiledBinding, AgentRun]],
    ]:
        """The trace's runs, the selection for ``score_runs`` and the (binding, run) pairs it admits."""
        trace = self.store.load_trace(trace_id)
        read = functools.partial(
            # only the runs a binding can score, as the live worker builds them: all of a
            # 20,000-span trace's were 220 MB of objects, for default bindings that score one
            extract_runs,
            conventions=self.scoring.conventions,
            only_primary=self.only_primary,
        )
        # with the traces its loop was joined from, as the worker read it
        runs = list(read_with_steps(trace, self._links, read)) if trace is not None else []
        done = self._done(trace_id)

        def wanted(binding: CompiledBinding, run: AgentRun) -> bool:
            key = score_id(run.trace_id, run.span_id, binding.name, binding.scorer.version)
            return key not in done

        pairs = [
            (binding, run)
            for binding in self.bindings
            for run in binding.eligible(runs, trace)
            if is_sampled(run.trace_id, binding.sampling_rate) and wanted(binding, run)
        ]
        return runs, wanted, pairs

    def plan(self, since: float, sample_size: int = SAMPLE_RUNS) -> Plan:
        """The traces with runs to score, and per binding how many runs and a uniform sample of
        their distinct contents (:class:`~tracescore.offline.sample.RunSample`). The first runs
        would not do: traces come grouped by time, service and agent, so they priced one part of
        the traffic for all of it."""
        plan = Plan(traces=[])
        for binding in self.bindings:
            plan.samples[binding.name] = RunSample(sample_size)
        for trace_id in self.trace_ids(since):
            _runs, _wanted, pairs = self._todo(trace_id)
            if pairs:
                plan.traces.append(trace_id)
            for binding, run in pairs:
                plan.samples[binding.name].add(run)
        return plan

    async def run(
        self,
        trace_ids: Sequence[str],
        *,
        max_cost: float | None = None,
        on_trace: Callable[[list[StoredScore]], None] | None = None,
        batch: int = 64,
    ) -> Outcome:
        """Score the traces' runs lacking current scores and store the rows.

        Traces with nothing left to score cost one look each (no need to :meth:`plan` first).

        Rows are written once per ``batch`` traces, in one transaction: a commit per trace would
        spend most of a backfill waiting on the disk.
        """
        outcome = Outcome()
        slots = asyncio.Semaphore(self.concurrency)
        in_flight = 0

        def affordable() -> bool:
            if max_cost is None:
                return True
            mean = outcome.cost_usd / outcome.traces_scored if outcome.traces_scored else 0.0
            return outcome.cost_usd + (in_flight + 1) * mean < max_cost

        async def one(trace_id: str) -> tuple[list[StoredScore], list[SamplingDecision]]:
            nonlocal in_flight
            try:
                runs, wanted, _pairs = await asyncio.to_thread(self._todo, trace_id)
                rows, decisions = await self.scoring.score_runs(runs, wanted, self._stored)
            finally:
                in_flight -= 1
                slots.release()
            outcome.traces_done += 1
            outcome.traces_scored += bool(rows)
            outcome.cost_usd += sum(row["cost_usd"] for row in rows)
            if on_trace is not None:
                on_trace(rows)
            return rows, decisions

        for start in range(0, len(trace_ids), batch):
            tasks = []
            for trace_id in trace_ids[start : start + batch]:
                await slots.acquire()
                if not affordable():
                    slots.release()
                    outcome.stopped_by_budget = True
                    break
                in_flight += 1
                tasks.append(asyncio.create_task(one(trace_id)))
            scored = await asyncio.gather(*tasks)
            rows = [row for trace_rows, _ in scored for row in trace_rows]
            await asyncio.to_thread(self._write, rows, [d for _, found in scored for d in found])
            outcome.rows.extend(rows)
            if outcome.stopped_by_budget:
                break
        return outcome

    def _write(self, rows: list[StoredScore], decisions: list[SamplingDecision]) -> None:
        with self.store.write_transaction() as connection:
            upsert_decisions(connection, decisions)
            upsert_scores(connection, rows)
