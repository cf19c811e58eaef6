"""A changed scorer re-scores by itself (``scorers[].rescore_on_change``, issue 37).

When a scorer changes (its version, the prompts it renders, its judge model), new traffic takes
weeks to tell whether the new one agrees with the old. So at start each binding with
``rescore_on_change`` compares its *fingerprint* (:func:`fingerprint`) with the one recorded in
``rescore_jobs`` (:mod:`tracescore.store.rescores`); when they differ it re-scores a
deterministic sample of the runs the old version scored ``ok`` within ``since``, their spans
read back from the span store, and stores the new scores beside the old ones under a version
of their own: the new scorer version, or, when only the prompts or the judge changed, the
version with the fingerprint's first characters (``3+1a2b3c4d``), since a score's id includes
its version and the same version would overwrite the old scores.

Once per change, durably, by one process: the sample and the progress are in the job's row,
advanced in the transaction that stores each run's score, so a restart resumes after the
last run stored (and asks the judge again, served from its verdict cache, only for the run it
was on); a start that finds its fingerprint's job done does nothing. Among scoring processes
and instances sharing the database, the holder of the binding's lease
(:mod:`tracescore.store.leases`) does the work; the others wait for it to end or lapse.

It runs beside the live loop in a scoring process (or the service, with ``workers.processes:
0``), a run at a time, its reads and writes in threads, and the judge calls share the
worker's concurrency, so live traces keep being claimed meanwhile. Every run goes through the
binding's ``limits`` as a live one does: a run beyond them is stored as ``skipped_budget`` or
``skipped_rate`` and counted in the job, never dropped. Before the first run, the cost estimate
is logged: the sample's runs times the tokens the old version's judge calls on them used,
priced for the current judge model (:mod:`tracescore.judge.prices`); 0 for a code scorer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from tracescore.backoff import Backoff
from tracescore.extract import iter_runs
from tracescore.extract.linked import read_with_steps
from tracescore.extract.model import AgentRun
from tracescore.judge.client import litellm
from tracescore.judge.prices import token_prices
from tracescore.judge.protocol import JudgeRequest, JudgeResponse
from tracescore.pipeline.bindings import CompiledBinding
from tracescore.pipeline.renewal import renewing
from tracescore.pipeline.rescore_config import RescoreOnChange
from tracescore.pipeline.scoring import Scoring
from tracescore.scorers.base import Scorer
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.store import SpanStore, connect
from tracescore.store.call_links import StoredLinks
from tracescore.store.leases import acquire_lease, release_lease
from tracescore.store.rescores import RescoreJob, advance_job, rescore_job, save_job
from tracescore.store.score_reads import ScoredRun, scored_runs, scorer_versions
from tracescore.store.scores import StoredScore, score_id, upsert_scores

log = logging.getLogger(__name__)

PROBE = {
    "input": "What is the weather in Paris today, and should I take an umbrella?",
    "output": "It is sunny in Paris today, 21 °C, with no rain expected: no umbrella needed.",
    "context": ["Paris forecast: sunny, 21 °C, 0 % chance of rain."],
    "groundTruth": "Sunny and 21 °C in Paris; no umbrella needed.",
}
"""The run a scorer renders its prompts on for its fingerprint: fixed, so that only a change
of the scorer changes what it renders."""


class TakenOver(Exception):
    """This process's lease lapsed and another process moved the job on."""


@dataclass(frozen=True)
class Fingerprint:
    """What identifies a binding's scorer for ``rescore_on_change``."""

    digest: str
    """SHA-256 of the scorer's id and version, its judge models and rendered prompts."""
    version: str
    """The scorer version live scores carry."""
    judge_models: tuple[str, ...]


def judge_model(spec: Any) -> str | None:
    """The model name of a judge spec (a model string, a ``JudgeConfig``, a judge), if any."""
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, dict):
        return str(spec.get("model"))
    model = getattr(spec, "model", None)
    if isinstance(model, str):
        return model
    return getattr(getattr(spec, "config", None), "model", None)


@dataclass
class _PromptRecorder:
    """A judge that sends nothing: it keeps each request it is given and answers with the
    step's sketch (a plausible answer every prebuilt LLM scorer has), so later steps render
    too. A step without a sketch gets no answer, and the steps after it are not rendered."""

    model: str = "fingerprint"
    requests: list[str] = field(default_factory=list)
    context: StepContext | None = None
    step: PromptStep | None = None

    async def complete(self, request: JudgeRequest) -> JudgeResponse:
        schema = request.schema.model_json_schema() if request.schema is not None else None
        self.requests.append(
            json.dumps([request.step, request.instructions, request.prompt, schema], sort_keys=True)
        )
        sketch = self.step.sketch if self.step is not None else None
        if sketch is None or self.context is None:
            return JudgeResponse(output=None, text="", model=self.model)
        answer = sketch(self.context)
        text = (
            answer.model_dump_json(by_alias=True) if isinstance(answer, BaseModel) else str(answer)
        )
        return JudgeResponse(output=answer, text=text, model=self.model)


def _recording(scorer: Scorer, recorder: _PromptRecorder) -> Scorer:
    """``scorer`` asking ``recorder``, which learns each step's context as its prompt renders."""

    def recorded(step: PromptStep) -> PromptStep:
        def create_prompt(ctx: StepContext) -> str | list[str]:
            recorder.context, recorder.step = ctx, step
            return step.create_prompt(ctx)

        return dataclasses.replace(step, judge=recorder, create_prompt=create_prompt)

    steps = tuple(
        (name, recorded(step) if isinstance(step, PromptStep) else step)
        for name, step in scorer.steps
    )
    return dataclasses.replace(scorer, judge=recorder, _steps=steps)


def fingerprint(scorer: Scorer) -> Fingerprint:
    """The scorer's fingerprint: its id and version, the models of its judges and, for an
    LLM scorer, the requests (instructions, prompt, answer schema) it renders on :data:`PROBE`."""
    prompt_steps = [step for _, step in scorer.steps if isinstance(step, PromptStep)]
    models = tuple(
        sorted(
            {
                str(judge_model(step.judge if step.judge is not None else scorer.judge))
                for step in prompt_steps
            }
        )
    )
    recorder = _PromptRecorder()
    if prompt_steps:
        _recording(scorer, recorder).run_sync(PROBE)
    material = json.dumps([scorer.id, scorer.version, models, recorder.requests])
    return Fingerprint(hashlib.sha256(material.encode()).hexdigest(), scorer.version, models)


def new_version(old_version: str, now: Fingerprint) -> str:
    """The version re-scored rows are stored under: the scorer's own when it changed, else
    (same version, other prompts or judge) the version marked with the fingerprint."""
    return now.version if now.version != old_version else f"{now.version}+{now.digest[:8]}"


def sample_runs(runs: Sequence[ScoredRun], size: int) -> list[ScoredRun]:
    """Up to ``size`` of ``runs``, chosen by a hash of each run: the same runs for the same
    stored scores whichever process or restart chooses, and spread over the window's traffic
    rather than its latest minutes."""

    def rank(run: ScoredRun) -> str:
        return hashlib.sha256(f"{run['trace_id']}\x1f{run['span_id']}".encode()).hexdigest()

    unique = {(run["trace_id"], run["span_id"]): run for run in runs}
    return sorted(unique.values(), key=rank)[:size]


def estimate_usd(runs: Sequence[ScoredRun], models: Sequence[str], uses_judge: bool) -> float:
    """What re-scoring ``runs`` should cost: the tokens the old version's judge calls used on
    each, priced for the (first) current judge model; 0 for a code scorer or an unpriced
    model."""
    if not uses_judge or not models:
        return 0.0
    price_in, price_out = token_prices(models[0]) or (0.0, 0.0)
    return sum(run["input_tokens"] * price_in + run["output_tokens"] * price_out for run in runs)


def _lease_name(binding: str) -> str:
    """The binding's lease (lease names hold 50 characters, binding names 100)."""
    return f"rescore {hashlib.sha256(binding.encode()).hexdigest()[:24]}"


class BindingRescore:
    """One binding's ``rescore_on_change``: decide at start, then work through the job."""

    def __init__(
        self,
        scoring: Scoring,
        store: SpanStore,
        binding: CompiledBinding,
        settings: RescoreOnChange,
        owner: str,
        clock: Any = time.time,
    ) -> None:
        self.scoring = scoring
        self.store = store
        self.owner = owner
        """Who holds the binding's lease (the worker's owner)."""
        self.binding = binding
        self.settings = settings
        self.clock = clock
        self.lease = _lease_name(binding.name)

    async def run(self) -> None:
        """Work until the binding's job for this fingerprint is done (by this process or
        another); a failure (the database unavailable) is retried with backoff, from the
        job's stored position."""
        try:
            now = await asyncio.to_thread(fingerprint, self.binding.scorer)
            if self.binding.scorer.uses_judge:
                # Before the lease: the first judge call's import of litellm takes seconds of
                # CPU, which on a loaded machine outlasted the lease's renewals.
                await asyncio.to_thread(litellm)
        except Exception:  # a custom scorer's step may raise anything: live scoring goes on
            log.exception("rescore_on_change of %s: no fingerprint, no re-score", self.binding.name)
            return
        backoff = Backoff(f"rescore_on_change of {self.binding.name}: the database")
        while True:
            try:
                if await self._attempt(now):
                    return
                backoff.succeeded()
            except TakenOver as exc:
                log.warning("rescore_on_change: %s; it goes on there", exc)
            except Exception as exc:  # noqa: BLE001 - an outage, or the lease lost: resume
                backoff.failed(exc)
            await asyncio.sleep(max(backoff.remaining(), self.settings.poll))

    def _take(self) -> bool:
        with self.store.write_transaction() as connection:
            return acquire_lease(
                connection, self.owner, self.clock(), self.settings.lease, self.lease
            )

    def _job(self) -> RescoreJob | None:
        with connect(self.store.engine) as connection:
            return rescore_job(connection, self.binding.name)

    async def _attempt(self, now: Fingerprint) -> bool:
        """True once nothing is left to do for ``now``; False while another process holds the
        binding's lease."""
        job = await asyncio.to_thread(self._job)
        if job is not None and job.fingerprint == now.digest and job.state != "running":
            log.info(
                "rescore_on_change of %s: nothing to re-score (the job of this scorer is %s)",
                self.binding.name,
                job.state,
            )
            return True
        if not await asyncio.to_thread(self._take):
            return False
        try:
            job = await asyncio.to_thread(self._start, now)  # read again under the lease
            if job.state == "running":
                await self._work(job)
        finally:
            with self.store.write_transaction() as connection:
                release_lease(connection, self.owner, self.lease)
        return True

    def _start(self, now: Fingerprint) -> RescoreJob:
        """The job for ``now``: the one recorded (to resume), a new one when the fingerprint
        changed (or, at the first start, when the latest scores are of another version), or
        the first record of it."""
        name = self.binding.name
        stamp = self.clock()
        with connect(self.store.engine) as connection:
            job = rescore_job(connection, name)
        if job is not None and job.fingerprint == now.digest:
            if job.state == "running":
                log.warning(
                    "rescore_on_change of %s: resuming at run %d of %d",
                    name,
                    job.position + 1,
                    len(job.runs),
                )
            return job
        if job is None and (latest := self._latest_version()) not in (None, now.version):
            # Nothing recorded yet, but the scores say the version changed: re-score them.
            job = RescoreJob(name, "", latest, "recorded")
        if job is None:
            job = RescoreJob(name, now.digest, now.version, "recorded", started_at=stamp)
            log.info("rescore_on_change of %s: scorer fingerprint recorded", name)
        else:
            job = self._plan(job, now, stamp)
        job.updated_at = stamp
        with self.store.write_transaction() as connection:
            save_job(connection, job)
        return job

    def _latest_version(self) -> str | None:
        """The version of the binding's latest ``ok`` score within ``since``, if any: on the
        first start with ``rescore_on_change`` no fingerprint is recorded, but a version change
        shows in the scores."""
        since = datetime.fromtimestamp(self.clock(), UTC) - timedelta(seconds=self.settings.since)
        with connect(self.store.engine) as connection:
            found = [
                v for v in scorer_versions(connection, since) if v["binding"] == self.binding.name
            ]
        return max(found, key=lambda v: v["newest"])["version"] if found else None

    def _plan(self, previous: RescoreJob, now: Fingerprint, stamp: float) -> RescoreJob:
        """A new job for a changed fingerprint: its sample of the old version's runs and its
        cost estimate, logged before any run is scored."""
        old = previous.scorer_version
        since = datetime.fromtimestamp(stamp, UTC) - timedelta(seconds=self.settings.since)
        with connect(self.store.engine) as connection:
            candidates = scored_runs(connection, self.binding.name, old, since)
        chosen = sample_runs(candidates, self.settings.sample)
        uses_judge = self.binding.scorer.uses_judge
        cost = estimate_usd(chosen, now.judge_models, uses_judge)
        tokens = sum(run["input_tokens"] + run["output_tokens"] for run in chosen)
        if uses_judge and chosen and not tokens:
            log.warning(
                "rescore_on_change of %s: version %s recorded no judge tokens (a code scorer "
                "before?): the estimate below cannot price the new judge's calls",
                self.binding.name,
                old,
            )
        log.warning(
            "rescore_on_change of %s: the scorer changed (version %s -> %s, judge %s); "
            "re-scoring %d of the %d runs version %s scored since %s: estimated cost $%.4f "
            "(%d runs x %.0f tokens each, priced for %s)",
            self.binding.name,
            old,
            new_version(old, now),
            ", ".join(now.judge_models) or "none",
            len(chosen),
            len(candidates),
            old,
            since.isoformat(timespec="seconds"),
            cost,
            len(chosen),
            tokens / len(chosen) if chosen and uses_judge else 0,
            now.judge_models[0] if now.judge_models and uses_judge else "no judge",
        )
        return RescoreJob(
            self.binding.name,
            now.digest,
            now.version,
            "running" if chosen else "done",
            old_version=old,
            new_version=new_version(old, now),
            runs=[(run["trace_id"], run["span_id"]) for run in chosen],
            estimate_usd=cost,
            started_at=stamp,
        )

    async def _work(self, job: RescoreJob) -> None:
        """Score the job's runs from its position, each stored with the job's progress (while
        the lease is renewed). One at a time: the binding's limiter then reads every earlier
        re-score's spend and rate from the database, and a judge call dominates a run's time."""
        while job.position < len(job.runs):
            trace_id, span_id = job.runs[job.position]
            row = await renewing(
                self._score(job, trace_id, span_id),
                self._take,
                self.settings.lease,
                f"re-score of {job.binding}",
            )
            job.position += 1
            job.updated_at = self.clock()
            if job.position >= len(job.runs):
                job.state = "done"
            await asyncio.to_thread(self._store, job, row, job.position - 1)
        log.warning(
            "rescore_on_change of %s done: %d re-scored as version %s, %d errored, %d skipped "
            "for budget, %d for rate, %d runs gone from the span store",
            job.binding,
            job.rescored,
            job.new_version,
            job.errored,
            job.skipped_budget,
            job.skipped_rate,
            job.missing,
        )

    def _store(self, job: RescoreJob, row: StoredScore | None, done_before: int) -> None:
        """The run's score and the job's progress, in one transaction, if the job is still
        where this process left it and the lease is still ours. A process whose lease lapsed
        (a stall longer than ``settings.lease``) while another took the job over stops
        here: its stale progress never overwrites the other's."""
        with self.store.write_transaction() as connection:
            if not (
                acquire_lease(connection, self.owner, self.clock(), self.settings.lease, self.lease)
                and advance_job(connection, job, done_before)
            ):
                raise TakenOver(f"the re-score of {job.binding} passed to another process")
            if row is not None:
                upsert_scores(connection, [row])

    async def _score(self, job: RescoreJob, trace_id: str, span_id: str) -> StoredScore | None:
        """The run's score row under the job's new version, counted by its status; None (and
        counted as missing) when its spans are gone."""
        run = await asyncio.to_thread(self._run, trace_id, span_id)
        if run is None:
            job.missing += 1
            return None
        row = await self.scoring.score(self.binding, run)
        version = job.new_version or self.binding.scorer.version
        row["scorer_version"] = version
        row["id"] = score_id(trace_id, span_id, self.binding.name, version)
        status = row["status"]
        if status in ("skipped_budget", "skipped_rate"):
            setattr(job, status, getattr(job, status) + 1)
        elif status == "error":
            job.errored += 1
        else:
            job.rescored += 1
        return row

    def _run(self, trace_id: str, span_id: str) -> AgentRun | None:
        """The trace's run of span ``span_id`` (the last built, as runs keyed by span id kept
        it), if its spans are still stored, read with the traces its loop was joined from as
        scoring read it. Its runs are built one at a time and only the one sought is kept: all of a 20,000-span trace's were 220 MB of objects at once."""
        trace = self.store.load_trace(trace_id, settle=False)
        if trace is None:
            return None
        found = None
        read = functools.partial(
            iter_runs,
            conversation_attributes=self.scoring.conversation_attributes,
            conventions=self.scoring.conventions,
        )
        for run in read_with_steps(trace, StoredLinks.of(self.store), read):
            if run.span_id == span_id:
                found = run
        return found


def rescore_tasks(scoring: Scoring, store: SpanStore, owner: str) -> list[BindingRescore]:
    """The re-scores of ``scoring``'s run bindings with ``rescore_on_change`` (a conversation
    binding is scored whole when its conversation goes idle, and is not re-scored), their
    leases held by ``owner``."""
    return [
        BindingRescore(scoring, store, binding, binding.config.rescore_on_change, owner)
        for binding in scoring.bindings
        if binding.config.rescore_on_change is not None
    ]
