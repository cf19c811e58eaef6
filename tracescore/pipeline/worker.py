"""The scoring worker: claim ready traces, extract runs, apply bindings, score, store, emit.

Exactly-once comes from the store, not from this loop: a trace is claimed with a lease, its
scores are upserted under deterministic ids, and only then is the claim completed. A worker
that dies mid-trace leaves a lease that expires; whoever claims the trace next writes the same
score ids again, so a run is never stored twice. Nothing here may stop the loop: a trace that
cannot be read or scored is given back with the reason and retried after its lease.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from tracescore.backoff import Backoff
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.monitor import metrics
from tracescore.pipeline.bindings import CompiledBinding
from tracescore.pipeline.config import WorkersConfig
from tracescore.pipeline.sampling import is_sampled
from tracescore.scorers.base import ScoreResult
from tracescore.store.outage import database_unavailable
from tracescore.store.scores import score_id, upsert_decisions, upsert_scores

log = logging.getLogger(__name__)

_MAX_PROMPT_CHARS = 20_000


def worker_owner_id() -> str:
    """A claim owner name that is unique per process and readable in the database."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def _steps_json(result: ScoreResult) -> dict[str, Any]:
    """Step results and judge calls as stored (prompts capped: they repeat the whole run)."""
    dumped = result.model_dump(
        mode="json",
        include={"preprocess_step_result", "analyze_step_result", "generate_score_step_result",
                 "failed_step", "steps"},
    )
    for step in dumped.get("steps") or []:
        if step.get("prompt") and len(step["prompt"]) > _MAX_PROMPT_CHARS:
            step["prompt"] = step["prompt"][:_MAX_PROMPT_CHARS] + "…[truncated]"
        for call in step.get("judge_calls") or []:
            call.pop("prompt", None)
    return dumped


def score_row(
    binding: CompiledBinding, run: AgentRun, *, status: str, result: ScoreResult | None = None,
    error: str | None = None, now: datetime | None = None,
) -> dict[str, Any]:
    """The ``scores`` row of one binding on one run."""
    now = now or datetime.now(timezone.utc)
    row: dict[str, Any] = {
        "id": score_id(run.trace_id, run.span_id, binding.name, binding.scorer.version),
        "trace_id": run.trace_id,
        "span_id": run.span_id,
        "binding": binding.name,
        "scorer_id": binding.scorer.id,
        "scorer_version": binding.scorer.version,
        "status": status,
        "score": None,
        "label": None,
        "reason": None,
        "error": error,
        "steps": None,
        "judge_model": None,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "latency_ms": 0.0,
        "run_kind": run.kind,
        "service": run.service_name,
        "agent": run.agent_name,
        "model": run.model,
        "created_at": now,
        "updated_at": now,
    }
    if result is not None:
        row.update(
            status=result.status,
            score=result.score,
            label=binding.label(result.score),
            reason=result.reason,
            error=result.error,
            steps=_steps_json(result),
            judge_model=result.judge_calls[0].model if result.judge_calls else None,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            cost_usd=result.cost_usd,
            latency_ms=result.duration_ms,
        )
        if result.status == "error" and run.warnings:
            row["error"] = f"{result.error} (extraction warnings: {'; '.join(run.warnings[:5])})"
    return row


def unstorable_score(row: dict[str, Any], error: BaseException) -> dict[str, Any]:
    """The ``error`` row that stands for a score row the database refused."""
    return {
        **row, "status": "error", "score": None, "label": None, "reason": None, "steps": None,
        "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0,
        "error": f"the score could not be stored: {type(error).__name__}: {error}"[:2000],
    }  # fmt: skip


class ScoringWorker:
    """One instance's scoring loop over the shared store."""

    def __init__(
        self,
        store: Any,
        bindings: Sequence[CompiledBinding],
        config: WorkersConfig,
        lease_seconds: float,
        emit: Callable[[dict[str, Any]], None] | None = None,
        owner: str | None = None,
    ) -> None:
        self.store = store
        self.bindings = list(bindings)
        self.config = config
        self.lease_seconds = lease_seconds
        self.owner = owner or worker_owner_id()
        self._emit = emit
        self._slots = asyncio.Semaphore(config.concurrency)
        self._claims = Backoff("scoring worker: the database")

    def warm_up(self) -> None:
        """Run each code scorer once on a tiny run, so lazily loaded models and lexicons (the
        completeness NLP model takes ~1 s) load before the first trace, not during it."""
        for binding in self.bindings:
            if not binding.scorer.uses_judge:
                binding.scorer.run_sync({"input": "warm up", "output": "warm up"})

    async def run(self) -> None:
        """Claim and score until cancelled; errors are logged, never raised.

        Traces are claimed whenever fewer than ``claim_batch`` are in flight, so one slow trace
        (a judge taking seconds) never holds back the traces behind it.
        """
        await asyncio.to_thread(self.warm_up)
        in_flight: set[asyncio.Task[list[dict[str, Any]]]] = set()
        try:
            while True:
                room = self.config.claim_batch - len(in_flight)
                claims = await self._claim(room) if room > 0 else []
                in_flight.update(asyncio.create_task(self.process(claim)) for claim in claims)
                if not in_flight:
                    await asyncio.sleep(self.config.poll_interval)
                    continue
                # Wake on the first finished trace, or after the poll interval to claim more.
                timeout = None if room <= len(claims) else self.config.poll_interval
                _, in_flight = await asyncio.wait(
                    in_flight, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
        finally:
            for task in in_flight:
                task.cancel()
            await asyncio.gather(*in_flight, return_exceptions=True)

    async def _claim(self, limit: int) -> list[Any]:
        """Claim up to ``limit`` ready traces; while claiming fails (the database is down),
        wait out a growing delay (1 s doubling to 30 s) and log when that starts and ends,
        rather than a traceback every poll."""
        try:
            claims = await asyncio.to_thread(
                self.store.claim_ready, self.owner, limit, self.lease_seconds
            )
        except Exception as exc:  # noqa: BLE001 - the database may be restarting; try again
            await asyncio.sleep(self._claims.failed(exc))
            return []
        self._claims.succeeded()
        return claims

    async def process(self, claim: Any) -> list[dict[str, Any]]:
        """Score one claimed trace; returns the stored score rows."""
        try:
            trace = await asyncio.to_thread(self.store.load_trace, claim.trace_id, settle=False)
            runs = await asyncio.to_thread(extract_runs, trace) if trace is not None else []
            rows, decisions = await self.score_runs(runs)
            await asyncio.to_thread(self._write, rows, decisions)
            await asyncio.to_thread(self.store.complete, claim)
        except asyncio.CancelledError:
            # Shutting down: hand the trace back at once rather than leave it to its lease.
            self.store.release(claim, None)
            raise
        except Exception as exc:  # noqa: BLE001 - give the trace back, keep the loop alive
            log.exception("scoring trace %s failed", claim.trace_id)
            try:
                await asyncio.to_thread(self.store.release, claim, f"{type(exc).__name__}: {exc}")
            except Exception:  # noqa: BLE001
                log.exception("releasing trace %s failed; its lease will expire", claim.trace_id)
            return []
        metrics.traces_scored.inc()
        for row in rows:
            metrics.observe_score(
                row["binding"], row["scorer_id"], row["status"], row["score"],
                row["latency_ms"] / 1000,
            )
            if self._emit is not None:
                self._emit(row)
        return rows

    async def score_runs(
        self,
        runs: Sequence[AgentRun],
        select: Callable[[CompiledBinding, AgentRun], bool] | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Route runs to bindings, record sampling decisions and score the sampled runs.

        ``select`` narrows which sampled runs are scored (a backfill skips runs it already has
        current scores for); decisions are recorded either way.
        """
        decisions: list[dict[str, Any]] = []
        jobs = []
        now = datetime.now(timezone.utc)
        for binding in self.bindings:
            for run in binding.eligible(runs):
                sampled = is_sampled(run.trace_id, binding.sampling_rate)
                metrics.sampling_decision(binding.name, sampled)
                decisions.append(
                    {
                        "id": score_id(run.trace_id, run.span_id, binding.name, "sampling"),
                        "trace_id": run.trace_id,
                        "span_id": run.span_id,
                        "binding": binding.name,
                        "sampled": sampled,
                        "created_at": now,
                    }
                )
                if sampled and (select is None or select(binding, run)):
                    jobs.append(self._score(binding, run))
        rows = list(await asyncio.gather(*jobs))
        return rows, decisions

    async def _score(self, binding: CompiledBinding, run: AgentRun) -> dict[str, Any]:
        verdict = await asyncio.to_thread(binding.limiter.admit) if binding.limiter else "ok"
        if verdict != "ok":
            reason = (
                f"daily budget of ${binding.config.limits.usd_per_day} spent"
                if verdict == "skipped_budget"
                else f"rate limit of {binding.config.limits.per_minute}/min reached"
            )
            return score_row(binding, run, status=verdict, error=reason)
        async with self._slots:
            result = await binding.scorer.run(run)
        if binding.limiter is not None:
            binding.limiter.spent(result.cost_usd)
        for call in result.judge_calls:
            metrics.judge_call(
                call.model, call.input_tokens, call.output_tokens, call.cost_usd,
                call.duration_ms / 1000, outcome="cached" if call.cached else "ok",
            )
        if result.status == "error" and binding.scorer.uses_judge:
            # The failed call left no JudgeCall behind; count it against the scorer's judge.
            judge = binding.scorer.judge
            model = str(getattr(judge, "model", judge) or "unknown")
            metrics.judge_call(model, 0, 0, 0.0, result.duration_ms / 1000, outcome="error")
        return score_row(binding, run, status=result.status, result=result)

    def _write(self, rows: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> None:
        """Store the trace's decisions and scores in one transaction; if the database refuses
        them (rather than being unavailable), store them one by one, a refused score row as an
        ``error`` row that says why, so the trace is still scored and the failure shows."""
        try:
            with self.store.write_transaction() as connection:
                upsert_decisions(connection, decisions)
                self._count_replaced(upsert_scores(connection, rows))
            return
        except Exception as exc:
            if database_unavailable(exc):
                raise
            log.warning("storing %d score rows failed (%s); storing them one by one", len(rows), exc)
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

    @staticmethod
    def _count_replaced(replaced: int) -> None:
        if replaced:
            metrics.text_replaced.labels("scores").inc(replaced)
