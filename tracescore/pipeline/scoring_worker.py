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

Scoring itself (routing runs to bindings, the scorers, limits and judge metrics, publishing the
rows) is :class:`~tracescore.pipeline.scoring.Scoring`'s, shared with conversations, feedback
triggers and the offline commands; the worker keeps what is a batch's: claims and leases, the
load and extraction, and the transaction storing it. The rows written are built in
:mod:`~tracescore.pipeline.score_rows`, and what a batch carries per trace is
:mod:`~tracescore.pipeline.batches`. The queue's hooks (promotion finishing unsampled traces,
failed traces counted) are set where the worker meets its store
(:func:`~tracescore.pipeline.scoring_task.build_worker`), not here: the store is shared.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from tracescore.backoff import Backoff
from tracescore.extract import extract_runs
from tracescore.extract.linked import CallLinks, read_linked
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import READ_ELSEWHERE, TraceReading, read_sources
from tracescore.owners import owner_id
from tracescore.pipeline.batches import BatchPass, ClaimedTrace, source_tallies, trace_turn
from tracescore.pipeline.renewal import free_ended_claims, renewing
from tracescore.pipeline.sampling import sampled_at, unit_hash
from tracescore.pipeline.score_rows import unstorable_score
from tracescore.pipeline.scoring import Scoring
from tracescore.spans import Trace
from tracescore.store import SpanStore
from tracescore.store.call_links import StoredLinks
from tracescore.store.conversations import record_turns
from tracescore.store.outage import database_unavailable
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


class ScoringWorker:
    """One instance's scoring loop over the shared store."""

    def __init__(
        self,
        store: SpanStore,
        scoring: Scoring,
        lease_seconds: float,
        owner: str | None = None,
    ) -> None:
        self.store = store
        self.scoring = scoring
        """How runs are routed and scored, and the scores published."""
        self.metrics = scoring.metrics
        self.config = scoring.config
        self.lease_seconds = lease_seconds
        self.owner = owner or owner_id()
        self._database = Backoff("scoring worker: the database")
        self._load_every_trace = bool(scoring.conversation_bindings)
        """With a binding scoring whole conversations every trace is loaded, since its turn
        must be recorded whether or not a run binding samples it."""
        self._told: set[tuple[str, str]] = set()
        """Sources already logged as giving nothing to score (once each per process)."""
        self._links = CallLinks(stored=StoredLinks.of(store))
        """Model calls linked across traces: one request traced twice, a loop traced call by
        call (:mod:`tracescore.extract.linked`); bounded, and backed by the store's links."""

    async def run(self) -> None:
        """Claim and score batches until cancelled; errors are logged, never raised.

        On PostgreSQL two batches may be in their synchronous pass at once (:data:`_LANES`):
        while one waits on the database (a claim, a load, a commit: round trips and WAL
        flushes), the other extracts and scores. Traces waiting for an asynchronous scorer run as tasks
        of their own, up to ``claim_batch`` of them, while batches go on being claimed, so one
        slow trace (a judge taking seconds) never holds back the traces behind it.
        """
        await asyncio.to_thread(self.scoring.warm_up)
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
        self.scoring.router.boosts.refresh()
        return self.store.queue.claim(self.owner, self.config.claim_batch, self.lease_seconds)

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
        rates = self.scoring.router.ceilings()
        for claim in claims:
            position = unit_hash(claim.trace_id)
            verdicts = [sampled_at(position, rate) for rate in rates]
            if any(verdicts) or self._load_every_trace:
                sampling[claim.trace_id] = verdicts
            else:
                batch.unsampled.append(claim)
        if first_time := sum(not claim.scored_before for claim in batch.unsampled):
            batch.tallies = {binding.name: first_time for binding in self.scoring.bindings}
        counts = {claim.trace_id: claim.span_count for claim in claims}
        loaded = (
            self.store.load_traces(list(sampling), settle=False, span_counts=counts)
            if sampling
            else {}
        )
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
                self.scoring.router.route(trace.runs, trace, now, spans=found, verdicts=sampled)
                trace.reading = (
                    read_sources(found, trace.runs, self.scoring.conventions, links.twins)
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
                only_primary=self.scoring.only_primary,
                conversation_attributes=self.scoring.conversation_attributes,
                conventions=self.scoring.conventions,
            )
        except Exception as exc:  # noqa: BLE001 - one trace's bug must not sink the batch
            errors[trace.trace_id] = f"{type(exc).__name__}: {exc}"
            return []

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
        turns = [trace.turn for trace in traces if trace.turn is not None]
        try:
            decisions = prepare_decisions(dialect, [d for trace in traces for d in trace.decisions])
            scores = prepare_scores(self.store.engine, [r for trace in traces for r in trace.rows])
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
            self._count_replaced("scores", scores.replaced)
            self._count_replaced("conversation_turns", replaced)
            self._count_replaced("sources", sources_replaced)
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
            replaced = record_turns(connection, turns)
            dropped = self.store.queue.complete(unsampled, conn=connection)
            sources_replaced = add_source_tallies(connection, sources)
        self._count_dropped(dropped, len(unsampled))
        self._count_replaced("conversation_turns", replaced)
        self._count_replaced("sources", sources_replaced)
        for trace in traces:
            self._write(trace.rows, trace.decisions)
            self._count_dropped(self.store.queue.complete([trace.claim]), 1)

    async def _finish(self, trace: ClaimedTrace) -> list[StoredScore]:
        """Score a trace's asynchronous pairs, then store all its rows and complete it."""
        claim = trace.claim
        try:
            trace.rows += await self._renewing(
                [claim], self.scoring.score_later(trace.later, trace.rows)
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
            for binding in self.scoring.bindings:
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
            self.scoring.publish(trace.rows)
        for (name, sampled), count in decided.items():
            self.metrics.sampling_decision(name, sampled, count)

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
                    self._count_replaced("scores", upsert_scores(connection, [row]))
            except Exception as exc:
                if database_unavailable(exc):
                    raise
                rows[index] = unstorable_score(row, exc)
                with self.store.write_transaction() as connection:
                    self._count_replaced("scores", upsert_scores(connection, [rows[index]]))

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

    def _count_replaced(self, where: str, replaced: int) -> None:
        """Count the text values the database could not take as they were (a NUL, a lone
        surrogate: :mod:`tracescore.store.text`), by where they were stored."""
        if replaced:
            self.metrics.text_values_replaced(where, replaced)


_SOURCES_TOLD = 1_000
"""Sources a scoring process logs as giving nothing (their names come from the spans: a client
sending ever new ones must not grow the set, or the log, without bound; the sources view still
lists them all)."""
