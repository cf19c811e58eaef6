"""The scoring worker: claim ready traces, extract runs, apply bindings, score, store, emit.

Exactly-once comes from the store, not from this loop: a trace is claimed with a lease, its
scores are upserted under deterministic ids, and only then is the claim completed. A worker
that dies mid-trace leaves a lease that expires; whoever claims the trace next writes the same
score ids again, so a run is never stored twice. Nothing here may stop the loop: a trace that
cannot be read or scored is given back with the reason and retried after its lease.

Traces go through in batches (``workers.claim_batch``), because per-trace overhead, not the
scorers, was nine tenths of the cost (a claim, a load, a write and a completion transaction per
trace, and a thread hop per step): one claim statement leases the batch; sampling is decided
from each trace id before anything is loaded, and a trace no binding samples is completed
unread (most never get here: promotion finishes them, :func:`~tracescore.pipeline.sampling.skip_unsampled`);
one query loads the others; their runs are extracted and scored by the synchronous
scorers (code scorers) in one thread hop; and one transaction stores every score, sampling
decision and completion of the batch. A trace that also needs an asynchronous scorer (an LLM
judge, a rate or budget limit) goes on from there on its own, so that a slow judge holds back
no other trace.

Every trace loaded is also counted per source (:mod:`tracescore.extract.sources`: spans, runs,
runs with content, why nothing was read), in the same transaction as its scores. A trace no
binding samples is not: counting it would mean loading and extracting it, the very cost that
sampling saves, so the sources view describes the sampled traces (their reasons all the same).

The rows written are built in :mod:`~tracescore.pipeline.score_rows`, and what a batch carries
per trace is :mod:`~tracescore.pipeline.batches`. Over 400 lines and kept whole: what is left
is one batch's life (claim, synchronous pass, storing, the asynchronous remainder, metrics),
whose steps share the worker's leases, slots and backoff.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from tracescore import metrics
from tracescore.backoff import Backoff
from tracescore.extract import extract_runs
from tracescore.extract.base import Convention
from tracescore.extract.conversation import Conversation
from tracescore.extract.conversation_id import DEFAULT_ID_ATTRIBUTES
from tracescore.extract.linked import CallLinks, read_linked
from tracescore.extract.model import AgentRun
from tracescore.extract.registry import CONVENTIONS
from tracescore.extract.sources import READ_ELSEWHERE, TraceReading, read_sources
from tracescore.owners import owner_id
from tracescore.pipeline.batches import BatchPass, ClaimedTrace, source_tallies, trace_turn
from tracescore.pipeline.bindings import CompiledBinding, primary_only
from tracescore.pipeline.boost import store_boosts
from tracescore.pipeline.budget import InputCut, ScorerTimeout, Watchdog, within_input_budget
from tracescore.pipeline.cascade import Cascades, marked, not_triggered, ordered
from tracescore.pipeline.cascade_gate import Gate
from tracescore.pipeline.config import WorkersConfig
from tracescore.pipeline.renewal import free_ended_claims, renewing
from tracescore.pipeline.sampling import is_sampled, sampled_at, skip_unsampled, unit_hash
from tracescore.pipeline.score_rows import decision_row, score_row, unstorable_score
from tracescore.scorers.results import ScoreResult
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.spans import Trace
from tracescore.store.call_links import StoredLinks
from tracescore.store.conversations import record_turns
from tracescore.store.outage import database_unavailable
from tracescore.store.score_reads import trace_scores
from tracescore.store.scores import (
    SamplingDecision,
    StoredScore,
    add_tallies,
    prepare_decisions,
    prepare_scores,
    upsert_decisions,
    upsert_scores,
)
from tracescore.store.sources import add_source_tallies
from tracescore.store.trace_queue import TraceClaim

log = logging.getLogger(__name__)
_T = TypeVar("_T")

_LANES = {"postgresql": 2}
"""Batches in their synchronous pass at once, by database (see :meth:`ScoringWorker.run`): on
PostgreSQL two, so that one's round trips and WAL flushes overlap the other's scoring (232 ->
301 traces/s, measured); on SQLite, in-process and with one writer, a second batch only
contends for the GIL (1,002 traces/s with one, 928 with two, two scoring processes)."""


class PipelineMetrics(Protocol):
    """The metrics the worker records (:mod:`tracescore.metrics` has them all)."""

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


class ScoringWorker:
    """One instance's scoring loop over the shared store."""

    def __init__(
        self,
        store: Any,
        bindings: Sequence[CompiledBinding],
        config: WorkersConfig,
        lease_seconds: float,
        emit: Callable[[StoredScore], None] | None = None,
        owner: str | None = None,
        metrics: PipelineMetrics = metrics,
        conversation_attributes: Sequence[str] = DEFAULT_ID_ATTRIBUTES,
        conventions: Sequence[Convention] = CONVENTIONS,
    ) -> None:
        self.store = store
        self.metrics = metrics
        """Where the worker's counts go: the process's metrics, or a scoring process's relay."""
        self.bindings = ordered([b for b in bindings if b.config.target != "conversation"])
        """The bindings scoring runs of a trace, every cascade's upstream before it."""
        self.conversation_bindings = [b for b in bindings if b.config.target == "conversation"]
        """The bindings scoring whole conversations (:mod:`tracescore.pipeline.conversations`):
        with any, every trace is loaded, since its turn must be recorded whether or not a run
        binding samples it."""
        self.conversation_attributes = list(conversation_attributes)
        self.conventions = list(conventions)
        """The claim order runs are extracted with (the declared conventions first)."""
        self.config = config
        self.lease_seconds = lease_seconds
        self.owner = owner or owner_id()
        self._emit = emit
        self._slots = asyncio.Semaphore(config.concurrency)
        self._database = Backoff("scoring worker: the database")
        self._synchronous = {
            binding.name: binding.scorer.is_synchronous and binding.limiter is None
            for binding in self.bindings
        }
        """Bindings scored in the batch's thread; the others take the asynchronous path."""
        self._cascades = Cascades(self.bindings, self._synchronous)
        """Which ``after:`` bindings wait for their upstream (:mod:`~tracescore.pipeline.cascade`)."""
        self._only_primary = primary_only(self.bindings)
        """No binding scores LLM or tool runs: extraction builds the primary runs only."""
        self._load_every_trace = bool(self.conversation_bindings)
        self._told: set[tuple[str, str]] = set()
        """Sources already logged as giving nothing to score (once each per process)."""
        self._watchdog = Watchdog()
        self._links = CallLinks(stored=StoredLinks.of(store) if store is not None else None)
        """Model calls linked across traces: one request traced twice, a loop traced call by
        call (:mod:`tracescore.extract.linked`); bounded, and backed by the store's links."""
        if store is not None:
            store.queue.on_failed = self.metrics.traces_failed
        configs = [binding.config for binding in bindings]
        self._boosts = store_boosts(configs, store.engine if store is not None else None)
        """The bindings' ``sampling.boost`` alert states, refreshed before claims."""
        if store is not None:
            skip_unsampled(store.queue, configs, self.metrics, self._boosts)

    def warm_up(self) -> None:
        """Run each code scorer once on a tiny run, so lazily loaded models and lexicons (the
        completeness NLP model takes ~1 s) load before the first trace, not during it."""
        for binding in self.bindings:
            if not binding.scorer.uses_judge:
                binding.scorer.run_sync({"input": "warm up", "output": "warm up"})

    async def run(self) -> None:
        """Claim and score batches until cancelled; errors are logged, never raised.

        On PostgreSQL two batches may be in their synchronous pass at once (:data:`_LANES`):
        while one waits on the database (a claim, a load, a commit: round trips and WAL
        flushes), the other extracts and scores. Traces waiting for an asynchronous scorer run as tasks
        of their own, up to ``claim_batch`` of them, while batches go on being claimed, so one
        slow trace (a judge taking seconds) never holds back the traces behind it.
        """
        await asyncio.to_thread(self.warm_up)
        await free_ended_claims(self.store.queue.expire_ended_claims, "traces")
        lanes = _LANES.get(self.store.dialect, 1)
        batches: set[
            asyncio.Task[tuple[list[StoredScore], list[asyncio.Task[list[StoredScore]]]]]
        ] = set()
        in_flight: set[asyncio.Task[list[StoredScore]]] = set()
        try:
            while True:
                room = len(batches) < lanes and len(in_flight) < self.config.claim_batch
                claims = await self._claim() if room else []
                if claims:
                    batches.add(asyncio.create_task(self._start_batch(claims)))
                    if len(claims) == self.config.claim_batch and len(batches) < lanes:
                        continue  # more may be waiting: claim again at once
                if batches or in_flight:
                    done, _ = await asyncio.wait(
                        batches | in_flight,
                        timeout=self.config.poll_interval,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    for started in batches & done:
                        batches.discard(started)
                        in_flight.update(started.result()[1])
                    in_flight -= done
                else:
                    await asyncio.sleep(self._database.remaining() or self.config.poll_interval)
        finally:
            for task in in_flight:
                task.cancel()
            await asyncio.gather(*batches, *in_flight, return_exceptions=True)

    async def _claim(self) -> list[TraceClaim]:
        """Claim a batch of ready traces; while claiming fails (the database is down), wait out
        a growing delay (1 s doubling to 30 s) and log when that starts and ends, rather than a
        traceback every poll."""
        if self._database.waiting():
            return []
        try:
            claims: list[TraceClaim] = await asyncio.to_thread(self._claim_now)
        except Exception as exc:  # noqa: BLE001 - the database may be restarting; try again
            self._database.failed(exc)
            return []
        self._database.succeeded()
        return claims

    def _claim_now(self) -> list[TraceClaim]:
        """Claim, with the boosts' alert states fresh enough for the promotion it runs."""
        self._boosts.refresh()
        claims: list[TraceClaim] = self.store.queue.claim(
            self.owner, self.config.claim_batch, self.lease_seconds
        )
        return claims

    async def process(self, claim: TraceClaim) -> list[StoredScore]:
        """Score one claimed trace; returns the stored score rows."""
        return await self.process_batch([claim])

    async def process_batch(self, claims: Sequence[TraceClaim]) -> list[StoredScore]:
        """Score claimed traces to the end; returns the stored score rows."""
        stored, later = await self._start_batch(claims)
        return stored + [row for rows in await asyncio.gather(*later) for row in rows]

    async def _start_batch(
        self, claims: Sequence[TraceClaim]
    ) -> tuple[list[StoredScore], list[asyncio.Task[list[StoredScore]]]]:
        """Run the batch's synchronous pass in one thread hop; returns the rows it stored and
        the tasks of its traces that go on asynchronously."""
        try:
            batch = await self._renewing(claims, asyncio.to_thread(self._run_batch, claims))
        except Exception as exc:
            self._database.failed(exc)
            if not database_unavailable(exc):
                log.exception("scoring a batch of %d traces failed", len(claims))
            return [], []
        stored = [row for trace in batch.done for row in trace.rows]
        return stored, [asyncio.create_task(self._finish(trace)) for trace in batch.later]

    def _run_batch(self, claims: Sequence[TraceClaim]) -> BatchPass:
        """Sample, load, extract, score synchronously, then store what is finished, all in the
        calling thread."""
        batch = self._prepare(claims)
        self._store(batch.done, batch.unsampled, batch.tallies)
        for claim, error in batch.failed:
            log.error("scoring trace %s failed: %s", claim.trace_id, error)
            self.store.queue.release(claim, error)
        self._observe(batch.done, len(batch.unsampled))
        return batch

    def _prepare(self, claims: Sequence[TraceClaim]) -> BatchPass:
        batch = BatchPass()
        sampling: dict[str, list[bool]] = {}
        self._boosts.refresh()
        rates = [self._boosts.ceiling(binding.config) for binding in self.bindings]
        for claim in claims:
            position = unit_hash(claim.trace_id)
            verdicts = [sampled_at(position, rate) for rate in rates]
            if any(verdicts) or self._load_every_trace:
                sampling[claim.trace_id] = verdicts
            else:
                batch.unsampled.append(claim)
        if first_time := sum(not claim.scored_before for claim in batch.unsampled):
            batch.tallies = {binding.name: first_time for binding in self.bindings}
        loaded = self.store.load_traces(list(sampling), settle=False) if sampling else {}
        errors: dict[str, str] = {}
        linked = read_linked(
            loaded,
            self._links,
            functools.partial(self._extract, errors=errors),
            functools.partial(self.store.load_traces, settle=False),
        )
        now = datetime.now(UTC)
        for claim in claims:
            sampled = sampling.get(claim.trace_id)
            if sampled is None:
                continue
            trace = ClaimedTrace(claim)
            try:
                if (error := errors.get(claim.trace_id)) is not None:
                    raise RuntimeError(error)
                found = loaded.get(claim.trace_id)
                links = linked.get(claim.trace_id)
                if links is not None and links.error is not None:
                    raise RuntimeError(links.error)
                trace.runs = links.runs if links is not None else []
                trace.turn = trace_turn(trace.runs, now, self.store.rules.max_clock_skew)
                self._route(trace, sampled, now, found)
                trace.reading = (
                    read_sources(found, trace.runs, self.conventions, links.twins)
                    if found is not None and links is not None
                    else None
                )
            except Exception as exc:  # noqa: BLE001 - one trace's bug must not sink the batch
                batch.failed.append((claim, f"{type(exc).__name__}: {exc}"))
                continue
            (batch.later if trace.later else batch.done).append(trace)
        return batch

    def _extract(self, trace: Trace, errors: dict[str, str]) -> list[AgentRun]:
        """The trace's runs; a trace whose extraction fails has none, and its error in
        ``errors`` (it fails alone, not its batch)."""
        try:
            return extract_runs(
                trace,
                only_primary=self._only_primary,
                conversation_attributes=self.conversation_attributes,
                conventions=self.conventions,
            )
        except Exception as exc:  # noqa: BLE001 - one trace's bug must not sink the batch
            errors[trace.trace_id] = f"{type(exc).__name__}: {exc}"
            return []

    def _route(
        self, trace: ClaimedTrace, verdicts: list[bool], now: datetime, spans: Trace | None
    ) -> None:
        """Record each binding's sampling decisions on the trace's runs, and score the sampled
        ones with the synchronous scorers (the rest wait in ``trace.later``). Only a run left
        unsampled gets a ``sampling_decisions`` row: a sampled one's score row says as much
        (coverage counts both, :func:`~tracescore.store.score_aggregates.coverage`), and a
        decision row beside each score row was a fifth of the batch's insert."""
        inputs: dict[
            int, tuple[ScorerRun, InputCut | None]
        ] = {}  # each run's, built once for all bindings
        position = unit_hash(trace.claim.trace_id) if self._boosts.active else 0.0
        for binding, at_ceiling in zip(self.bindings, verdicts, strict=True):
            synchronous = self._synchronous[binding.name]
            for run in binding.eligible(trace.runs, spans):
                sampled = at_ceiling and (
                    binding.config.sampling.boost is None
                    or sampled_at(position, self._boosts.rate(binding.config, run.agent_name))
                )
                if not sampled:
                    trace.decisions.append(decision_row(binding, run, sampled, now))
                    continue
                trace.sampled.append(binding.name)  # its score row records the decision
                if (gate := binding.gate) is not None and not self._cascades.waits(binding):
                    trace.rows.append(
                        self._cascade_now(gate, binding, run, inputs, now, trace.rows)
                    )
                elif synchronous and binding.gate is None:
                    trace.rows.append(self._score_now(binding, run, inputs, now))
                else:
                    trace.later.append((binding, run))

    def _cascade_now(
        self,
        gate: Gate,
        binding: CompiledBinding,
        run: AgentRun,
        inputs: dict[int, tuple[ScorerRun, InputCut | None]],
        now: datetime,
        rows: Sequence[StoredScore],
    ) -> StoredScore:
        """A synchronous cascade binding's row on ``run``, its upstream's already in ``rows``:
        scored when the upstream flagged the run (or it is explored), else ``skipped_cascade``."""
        trigger = gate.decide(rows, run)
        if trigger.kind is None:
            return not_triggered(binding, run, trigger, now)
        return marked(self._score_now(binding, run, inputs, now), trigger)

    def _score_now(
        self,
        binding: CompiledBinding,
        run: AgentRun,
        inputs: dict[int, tuple[ScorerRun, InputCut | None]],
        now: datetime,
        *,
        timed: bool = True,
    ) -> StoredScore:
        """The score row of a synchronous binding on ``run``, scored in this thread; what
        scorers read of a run is built once for every binding (``inputs``, by run). ``timed``:
        within the scorer's time budget (live); offline a scorer takes the time it takes."""
        if (budgeted := inputs.get(id(run))) is None:
            budgeted = inputs[id(run)] = self._scorer_input(run)
        scorer_input, cut = budgeted
        result = (
            self._score_in_time(binding, scorer_input)
            if timed
            else binding.scorer.run_sync(scorer_input)
        )
        return score_row(binding, run, status=result.status, result=result, now=now, cut=cut)

    def _store(
        self,
        traces: Sequence[ClaimedTrace],
        unsampled: Sequence[TraceClaim] = (),
        tallies: dict[str, int] | None = None,
    ) -> None:
        """Store the traces' scores and sampling decisions and the tallies, and complete the
        traces and the unsampled ones, in one transaction. If the database refuses that
        (rather than being unavailable), each trace is stored on its own, a refused row as an
        ``error`` row (:meth:`_write`)."""
        claims = [trace.claim for trace in traces] + list(unsampled)
        if not claims:
            return
        now = datetime.now(UTC)
        dialect = self.store.engine.dialect
        sources = source_tallies(traces)
        try:
            decisions = prepare_decisions(dialect, [d for trace in traces for d in trace.decisions])
            scores = prepare_scores(dialect, [r for trace in traces for r in trace.rows])
            turns = [trace.turn for trace in traces if trace.turn is not None]
            with self.store.write_transaction() as connection:
                decisions.write(connection)
                add_tallies(connection, tallies or {}, now)
                scores.write(connection)
                replaced = record_turns(connection, turns)
                dropped = self.store.queue.complete(claims, conn=connection)
                # Last: every batch adds to the same few source rows, whose locks (PostgreSQL)
                # are then held only while the transaction commits.
                sources_replaced = add_source_tallies(connection, sources)
            self._count_dropped(dropped, len(claims))
            self._count_replaced(scores.replaced)
            if replaced:
                self.metrics.text_values_replaced("conversation_turns", replaced)
            if sources_replaced:
                self.metrics.text_values_replaced("sources", sources_replaced)
            return
        except Exception as exc:
            if database_unavailable(exc):
                raise
            log.warning(
                "storing the scores of %d traces failed (%s); storing them one by one",
                len(claims),
                exc,
            )
        with self.store.write_transaction() as connection:
            add_tallies(connection, tallies or {}, now)
            record_turns(connection, [trace.turn for trace in traces if trace.turn is not None])
            self.store.queue.complete(unsampled, conn=connection)
            add_source_tallies(connection, sources)
        for trace in traces:
            self._write(trace.rows, trace.decisions)
            self._count_dropped(self.store.queue.complete([trace.claim]), 1)

    async def _finish(self, trace: ClaimedTrace) -> list[StoredScore]:
        """Score a trace's asynchronous pairs, then store all its rows and complete it."""
        claim = trace.claim
        try:
            trace.rows += await self._renewing(
                [claim], self._cascades.score_later(trace.later, trace.rows, self.score)
            )
            await asyncio.to_thread(self._store, [trace])
        except asyncio.CancelledError:
            # Shutting down: hand the trace back at once rather than leave it to its lease.
            self.store.queue.release(claim, None)
            raise
        except Exception as exc:
            log.exception("scoring trace %s failed", claim.trace_id)
            try:
                await asyncio.to_thread(
                    self.store.queue.release, claim, f"{type(exc).__name__}: {exc}"
                )
            except Exception:
                log.exception("releasing trace %s failed; its lease will expire", claim.trace_id)
            return []
        self._observe([trace], 0)
        return trace.rows

    def _observe(self, traces: Sequence[ClaimedTrace], unsampled: int) -> None:
        """Metrics and re-emission of stored traces."""
        self.metrics.traces_done(len(traces) + unsampled)
        if unsampled:
            for binding in self.bindings:
                self.metrics.sampling_decision(binding.name, False, unsampled)
        decided: dict[tuple[str, bool], int] = {}
        for trace in traces:
            if trace.reading is not None and trace.reading.unread:
                self._tell_unread(trace.reading)
            elif trace.reading is not None and trace.reading.reason == READ_ELSEWHERE:
                self.metrics.trace_read_elsewhere(trace.reading.service or "unknown_service")
            for decision in trace.decisions:
                key = (decision["binding"], decision["sampled"])
                decided[key] = decided.get(key, 0) + 1
            for name in trace.sampled:
                decided[name, True] = decided.get((name, True), 0) + 1
            self.publish(trace.rows)
        for (name, sampled), count in decided.items():
            self.metrics.sampling_decision(name, sampled, count)

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

    async def score_runs(
        self,
        runs: Sequence[AgentRun],
        select: Callable[[CompiledBinding, AgentRun], bool] | None = None,
    ) -> tuple[list[StoredScore], list[SamplingDecision]]:
        """Route runs to bindings, record sampling decisions and score the sampled runs (the
        offline commands' path, one run set at a time); returns the score rows and the
        decisions on the runs left unsampled (a sampled run's score row records its decision).

        ``select`` narrows which sampled runs are scored (a backfill skips runs it already has
        current scores for).
        """
        decisions: list[SamplingDecision] = []
        rows: list[StoredScore | None] = []
        later: list[tuple[int, Awaitable[StoredScore]]] = []
        inputs: dict[int, tuple[ScorerRun, InputCut | None]] = {}
        decided: dict[tuple[str, bool], int] = {}
        gated: list[tuple[CompiledBinding, AgentRun]] = []
        now = datetime.now(UTC)
        for binding in self.bindings:
            synchronous = self._synchronous[binding.name]
            for run in binding.eligible(runs):
                sampled = is_sampled(run.trace_id, binding.sampling_rate)
                decided[binding.name, sampled] = decided.get((binding.name, sampled), 0) + 1
                if not sampled:
                    decisions.append(decision_row(binding, run, sampled, now))
                elif select is not None and not select(binding, run):
                    continue
                elif binding.gate is not None:  # decided once its upstream's rows are in
                    gated.append((binding, run))
                elif synchronous:  # scored here, as a batch's synchronous pass scores it
                    rows.append(self._score_now(binding, run, inputs, now, timed=False))
                else:
                    later.append((len(rows), self.score(binding, run)))
                    rows.append(None)
        for (index, _), row in zip(
            later, await asyncio.gather(*(job for _, job in later)), strict=True
        ):
            rows[index] = row
        scored = [row for row in rows if row is not None]
        if gated:
            stored = await asyncio.to_thread(self._stored_rows, gated) if select else []
            scored += await self._cascades.score_later(gated, scored + stored, self.score)
        for (name, sampled), count in decided.items():
            self.metrics.sampling_decision(name, sampled, count)
        return scored, decisions

    def _stored_rows(self, pairs: Sequence[tuple[CompiledBinding, AgentRun]]) -> list[StoredScore]:
        """The current-version rows already stored for the traces of ``pairs``: a backfill
        (``select``) skips the upstream runs it has scores for, and a cascade after them
        still reads those."""
        if self.store is None:
            return []
        versions = {binding.name: binding.scorer.version for binding in self.bindings}
        with self.store.engine.connect() as connection:
            return [
                row
                for trace_id in {run.trace_id for _, run in pairs}
                for row in trace_scores(connection, trace_id)
                if versions.get(row["binding"]) == row["scorer_version"]
            ]

    async def score(
        self, binding: CompiledBinding, run: AgentRun, *, subject: Conversation | None = None
    ) -> StoredScore:
        """The score row of one binding on one run, within the binding's limits and the
        worker's concurrency; with ``subject``, the binding scores that conversation instead,
        and the row hangs on ``run`` (its last turn's)."""
        admission = await binding.limiter.admit() if binding.limiter else None
        if admission is not None and admission.status != "ok":
            return score_row(binding, run, status=admission.status, error=admission.reason)
        scorer_input, cut = (
            self._scorer_input(run) if subject is None else (ScorerRun.of(subject), None)
        )
        cost: float | None = None  # unknown, should the run raise or be cancelled
        try:
            async with self._slots:
                result = await binding.scorer.run(scorer_input)
            cost = result.cost_usd
        finally:
            if binding.limiter is not None and admission is not None:
                await asyncio.to_thread(binding.limiter.settle, admission, cost)
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
        return score_row(binding, run, status=result.status, result=result, cut=cut)

    def _scorer_input(self, run: AgentRun) -> tuple[ScorerRun, InputCut | None]:
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

    async def _renewing(self, claims: Sequence[TraceClaim], work: Awaitable[_T]) -> _T:
        """Await ``work`` on ``claims`` while renewing their lease (:mod:`~tracescore.pipeline.renewal`)."""
        renew = functools.partial(self.store.queue.renew, claims, self.lease_seconds)
        return await renewing(work, renew, self.lease_seconds, f"{len(claims)} traces")

    def _count_dropped(self, dropped: int, of: int) -> None:
        """Log and count completions the queue dropped: their lease had passed to another
        worker, which scores those traces again."""
        if dropped:
            log.warning(
                "%d of %d scored traces were not completed: their lease expired and another worker took them",
                dropped,
                of,
            )
            self.metrics.stale_completions(dropped)

    def _write(self, rows: list[StoredScore], decisions: list[SamplingDecision]) -> None:
        """Store one trace's decisions, then its score rows one by one, a row the database
        refuses (rather than being unavailable) as an ``error`` row that says why, so the trace
        is still scored and the failure shows."""
        with self.store.write_transaction() as connection:
            upsert_decisions(connection, decisions)
        for index, row in enumerate(rows):
            try:
                with self.store.write_transaction() as connection:
                    self._count_replaced(upsert_scores(connection, [row]))
            except Exception as exc:
                if database_unavailable(exc):
                    raise
                rows[index] = unstorable_score(row, exc)
                with self.store.write_transaction() as connection:
                    upsert_scores(connection, [rows[index]])

    def _tell_unread(self, reading: TraceReading) -> None:
        """Count an unread trace, and log each of its sources the first time this process sees
        it give nothing (the sources view keeps the counts; the log is for whoever watches)."""
        self.metrics.trace_unread(reading.service or "unknown_service", reading.reason or "")
        for source in reading.sources:
            if (key := (source.service, source.scope)) not in self._told and len(
                self._told
            ) < _SOURCES_TOLD:
                self._told.add(key)
                log.warning(
                    "source service=%r scope=%r gives nothing to score (%s): %r; see GET /api/sources",
                    source.service,
                    source.scope,
                    source.reason,
                    source.detail,
                )

    def _count_replaced(self, replaced: int) -> None:
        if replaced:
            self.metrics.text_values_replaced("scores", replaced)


_SOURCES_TOLD = 1_000
"""Sources a scoring process logs as giving nothing (their names come from the spans: a client
sending ever new ones must not grow the set, or the log, without bound; the sources view still
lists them all)."""
