"""Judging feedback triggers: a loop of every scoring process beside its worker takes due
triggers (:mod:`tracescore.pipeline.feedback_triggers`) and judges their runs with the worker's
own :meth:`~tracescore.pipeline.scoring.Scoring.score`, so the binding's ``limits``
apply as to any run (one beyond them is stored ``skipped_budget`` or ``skipped_rate``, and the
trigger says so) and its spend counts against them.

A trigger waits (up to ``on_feedback.wait``) while its trace has not arrived or is still going
through the pipeline: judging a trace still being assembled would judge half a run, and a
sampled run is then scored by the pipeline first, which the trigger finds and does not repeat.
A run already scored ``ok`` by the binding's scorer version is not judged again. Every ending
is recorded with its reason, shown on the review page beside the person's verdict.

A score a trigger made carries ``steps.trigger`` (the verdict's id), and coverage leaves such
scores out of its sampled figures (:func:`~tracescore.store.score_aggregates.coverage`): the
run was judged because someone complained, which says nothing of the sample.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tracescore.backoff import Backoff
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.pipeline.bindings import CompiledBinding
from tracescore.pipeline.renewal import renewing
from tracescore.pipeline.scoring import Scoring
from tracescore.store import SpanStore, TraceState, connect
from tracescore.store.feedback_triggers import (
    Outcome,
    Trigger,
    TriggerState,
    claim_triggers,
    finish_trigger,
    postpone_trigger,
    renew_triggers,
)
from tracescore.store.score_reads import trace_scores
from tracescore.store.scores import StoredScore, upsert_scores

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""Seconds between looks for due triggers when none was found."""
CLAIM_BATCH = 16
_UNFINISHED = (TraceState.PENDING, TraceState.READY, TraceState.CLAIMED)


@dataclass
class _Look:
    """What a trigger's trace allows now: wait (``wait`` says why), give up, finish without a
    judge, or judge ``runs``."""

    wait: str | None = None
    give_up: str | None = None
    done: tuple[Outcome, str] | None = None
    runs: list[AgentRun] = field(default_factory=list)


class FeedbackTriggers:
    """A scoring process's loop over due feedback triggers (see the module)."""

    def __init__(
        self,
        scoring: Scoring,
        store: SpanStore,
        bindings: Sequence[CompiledBinding],
        *,
        lease: float,
        poll: float = POLL_SECONDS,
    ) -> None:
        self.scoring = scoring
        self.store = store
        self.bindings = {b.name: b for b in bindings if b.config.on_feedback is not None}
        self.poll = poll
        self.lease = lease
        self._database = Backoff("feedback triggers: the database")

    async def run(self) -> None:
        """Take and judge due triggers until cancelled; errors are logged, never raised."""
        while True:
            try:
                taken = await asyncio.to_thread(self._claim)
            except Exception as exc:  # noqa: BLE001 - the database may be restarting
                await asyncio.sleep(self._database.failed(exc))
                continue
            self._database.succeeded()
            if not taken:
                await asyncio.sleep(self.poll)
                continue
            await asyncio.gather(*(self.handle(trigger) for trigger in taken))

    def _claim(self) -> list[Trigger]:
        with self.store.write_transaction() as connection:
            return claim_triggers(connection, time.time(), self.lease, CLAIM_BATCH)

    async def handle(self, trigger: Trigger) -> None:
        """Judge, wait or give up on one taken trigger; a failure puts it off with the reason
        (it is retried while within its binding's wait, then given up)."""
        binding = self.bindings.get(trigger.binding)
        try:
            if binding is None:
                await asyncio.to_thread(
                    self._finish, trigger, "gave_up", None, "the binding no longer has on_feedback"
                )
                return
            look = await asyncio.to_thread(self._look, trigger, binding)
            if look.wait is not None:
                await asyncio.to_thread(self._postpone, trigger, look.wait)
            elif look.give_up is not None:
                await asyncio.to_thread(self._finish, trigger, "gave_up", None, look.give_up)
            elif look.done is not None:
                await asyncio.to_thread(self._finish, trigger, "done", *look.done)
            else:
                await self._judge(trigger, binding, look.runs)
        except Exception as exc:
            log.exception("feedback trigger %s on trace %s failed", trigger.id, trigger.trace_id)
            reason = f"failed: {type(exc).__name__}: {exc}"[:2000]
            try:
                await asyncio.to_thread(self._postpone, trigger, reason, failed=True)
            except Exception:  # noqa: BLE001 - its lease runs out and it is taken again
                log.warning("putting off feedback trigger %s failed", trigger.id)

    def _age(self, trigger: Trigger) -> float:
        return (datetime.now(UTC) - trigger.created_at).total_seconds()

    def _look(self, trigger: Trigger, binding: CompiledBinding) -> _Look:
        """Where the trigger's trace is, and which of its runs the binding should judge."""
        rule = binding.config.on_feedback
        assert rule is not None  # only such bindings are kept
        late = self._age(trigger) >= rule.wait
        summary = self.store.trace_summary(trigger.trace_id)
        if summary is None:
            if late:
                return _Look(
                    give_up=f"no span of the trace arrived within {rule.wait:g} s of the "
                    "verdict (or retention deleted them)"
                )
            return _Look(wait="waiting for the trace's spans to arrive")
        if summary.state == TraceState.PRUNED:
            return _Look(give_up="retention deleted the trace's spans before it was judged")
        if summary.state in _UNFINISHED:
            if late:
                return _Look(
                    give_up=f"the trace was still being assembled or scored {rule.wait:g} s "
                    "after the verdict"
                )
            return _Look(wait="waiting for the trace to be complete and through the pipeline")
        trace = self.store.load_trace(trigger.trace_id)
        if trace is None:
            return _Look(give_up="retention deleted the trace's spans before it was judged")
        runs = binding.eligible(
            extract_runs(
                trace,
                self.scoring.conventions,
                only_primary=binding.config.target in ("agent", "trace"),
                conversation_attributes=self.scoring.conversation_attributes,
            ),
            trace,
        )
        if trigger.span_id is not None:
            runs = [run for run in runs if run.span_id == trigger.span_id]
        if not runs:
            return _Look(
                done=(
                    "not_eligible",
                    "the run is not one this binding scores (target, filter or when:)",
                )
            )
        with connect(self.store.engine) as connection:
            scored = {
                row["span_id"]: row
                for row in trace_scores(connection, trigger.trace_id)
                if row["binding"] == binding.name
                and row["status"] == "ok"
                and row["scorer_version"] == binding.scorer.version
            }
        todo = [run for run in runs if run.span_id not in scored]
        if not todo:
            scores = ", ".join(
                f"{row['score']:g}" for row in scored.values() if row["score"] is not None
            )
            return _Look(done=("already_scored", f"already scored {scores}".strip()))
        return _Look(runs=todo)

    async def _judge(
        self, trigger: Trigger, binding: CompiledBinding, runs: Sequence[AgentRun]
    ) -> None:
        """Judge ``runs`` (renewing the trigger's lease meanwhile), then store their scores and
        the trigger's outcome in one transaction."""

        def renew() -> None:
            with self.store.write_transaction() as connection:
                renew_triggers(connection, [trigger.id], time.time() + self.lease)

        rows = await renewing(
            asyncio.gather(*(self.scoring.score(binding, run) for run in runs)),
            renew,
            self.lease,
            f"feedback trigger {trigger.id}",
        )
        for row in rows:
            row["steps"] = {**(row["steps"] or {}), "trigger": {"feedback": trigger.feedback_id}}
        outcome, reason = _outcome(rows)

        def store() -> None:
            with self.store.write_transaction() as connection:
                upsert_scores(connection, rows)
                finish_trigger(connection, trigger.id, "done", outcome, reason)

        await asyncio.to_thread(store)
        self.scoring.publish(rows)

    def _postpone(self, trigger: Trigger, reason: str, *, failed: bool = False) -> None:
        """Look again later: soon at first, then less often (1 s to 30 s); a trigger failing
        past its binding's wait is given up with the failure as its reason."""
        age = self._age(trigger)
        binding = self.bindings.get(trigger.binding)
        rule = binding.config.on_feedback if binding is not None else None
        if failed and rule is not None and age >= rule.wait:
            self._finish(trigger, "gave_up", None, reason)
            return
        delay = min(30.0, max(1.0, age / 4))
        with self.store.write_transaction() as connection:
            postpone_trigger(connection, trigger.id, time.time() + delay, reason)

    def _finish(
        self, trigger: Trigger, state: TriggerState, outcome: Outcome | None, reason: str
    ) -> None:
        with self.store.write_transaction() as connection:
            finish_trigger(connection, trigger.id, state, outcome, reason)


def _outcome(rows: Sequence[StoredScore]) -> tuple[Outcome, str]:
    """The trigger's outcome from its scores: skipped by a cap if any was, else judged."""
    skips: tuple[Outcome, ...] = ("skipped_budget", "skipped_rate")
    for status in skips:
        skipped = [row for row in rows if row["status"] == status]
        if skipped:
            return status, str(skipped[0]["error"] or status)
    said = "; ".join(
        f"{row['status']} {row['score']:g}"
        if row["score"] is not None
        else f"{row['status']}: {row['error'] or ''}"
        for row in rows
    )
    return "judged", said
