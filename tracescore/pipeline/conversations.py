"""Score ready conversations with the ``target: conversation`` bindings.

Exactly-once as for traces: a conversation is claimed under a lease, rebuilt from its stored
turns (the most recent ``conversations.max_turns`` from their traces, the earlier ones summed up
in one line), scored, and its score rows (keyed by conversation, binding and the number of turns
covered, so a conversation scored again after it went on keeps its earlier scores, each labelled
with its turns) are stored in the transaction that completes the claim. A worker
that dies leaves a lease that expires; a conversation that cannot be scored is given back with
the reason and retried after a delay, parked as ``failed`` after too many attempts.

Sampling is by conversation id, so a conversation is scored whole or not at all; filters are
matched against the last turn's run (the agent and service answering the conversation now).
Scoring itself goes through :meth:`~tracescore.pipeline.scoring.Scoring.score`, the trace
worker's, so judges, rate and budget limits and the judge metrics are the ones run scores use.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from tracescore.assemble.promoter import promote_interval
from tracescore.backoff import Backoff
from tracescore.conversations.config import ConversationsConfig
from tracescore.conversations.turns import earlier_summary, turn_of
from tracescore.extract import extract_runs
from tracescore.extract.conversation import Conversation, Turn
from tracescore.extract.model import AgentRun
from tracescore.extract.runs import primary_runs
from tracescore.pipeline.bindings import CompiledBinding, select_target
from tracescore.pipeline.renewal import free_ended_claims, renewing
from tracescore.pipeline.sampling import is_sampled
from tracescore.pipeline.scoring import Scoring
from tracescore.store import SpanStore
from tracescore.store.conversations import (
    ConversationClaim,
    ConversationQueue,
    ConversationReadiness,
    turns_of,
)
from tracescore.store.outage import database_unavailable
from tracescore.store.scores import (
    SamplingDecision,
    StoredScore,
    prepare_decisions,
    prepare_scores,
    score_id,
)

log = logging.getLogger(__name__)

CONVERSATION_SPAN = "conversation"
"""What stands for the span in a conversation score's and decision's key (see
:func:`conversation_score_id`)."""


def conversation_score_id(conversation_id: str, binding: str, version: str, turns: int) -> str:
    """The id of a conversation's score (or, with version ``sampling``, decision) for a
    binding when it had ``turns`` turns: the same for a retried scoring of those turns, a new
    one once the conversation went on."""
    return score_id(
        f"conversation:{conversation_id}", CONVERSATION_SPAN, binding, f"{version}\x1f{turns}"
    )


def label_conversation_score(
    row: StoredScore, conversation: Conversation, binding: CompiledBinding
) -> None:
    """Make ``row`` the conversation's score for ``binding`` at its current turn count."""
    row["id"] = conversation_score_id(
        conversation.id, binding.name, binding.scorer.version, conversation.turn_count
    )
    row["conversation_id"] = conversation.id
    row["conversation_turns"] = conversation.turn_count


def _timestamp(time_ns: int) -> datetime:
    return datetime.fromtimestamp(time_ns / 1e9, UTC)


class ConversationScoring:
    """One instance's conversation scoring loop, beside the trace worker whose ``scoring`` it
    scores through; ``owner`` holds its claims' leases (the worker's)."""

    def __init__(
        self,
        scoring: Scoring,
        store: SpanStore,
        bindings: Sequence[CompiledBinding],
        config: ConversationsConfig,
        owner: str,
    ) -> None:
        self.scoring = scoring
        self.store = store
        self.bindings = list(bindings)
        self.config = config
        self.owner = owner
        self.queue = ConversationQueue(
            store.write_transaction,
            ConversationReadiness(config.idle_timeout, config.max_wait),
        )
        self._database = Backoff("conversation scoring: the database")

    async def run(self) -> None:
        """Claim and score conversations until cancelled; errors are logged, never raised.

        Up to ``workers.claim_batch`` conversations are in flight at once, each a task of its
        own, and more are claimed as soon as one finishes: a conversation waiting on a slow
        judge holds back no other. Ready conversations are looked for as often as readiness
        needs (every half idle timeout, at most every second): each look is a write
        transaction, and conversations wait minutes, not the trace worker's fraction of a second."""
        poll = promote_interval(self.config.idle_timeout)
        await free_ended_claims(self.queue.expire_ended_claims, "conversations")
        in_flight: set[asyncio.Task[list[StoredScore]]] = set()
        try:
            while True:
                room = self.scoring.config.claim_batch - len(in_flight)
                claims = await self._claim(room) if room > 0 else []
                in_flight.update(asyncio.create_task(self.process(claim)) for claim in claims)
                if in_flight:
                    _done, in_flight = await asyncio.wait(
                        in_flight, timeout=poll, return_when=asyncio.FIRST_COMPLETED
                    )
                else:
                    await asyncio.sleep(self._database.remaining() or poll)
        finally:
            for task in in_flight:
                task.cancel()
            await asyncio.gather(*in_flight, return_exceptions=True)

    async def _claim(self, limit: int) -> list[ConversationClaim]:
        if self._database.waiting():
            return []
        try:
            claims = await asyncio.to_thread(
                self.queue.claim, self.owner, limit, self.config.lease_seconds
            )
        except Exception as exc:
            self._database.failed(exc)
            if not database_unavailable(exc):
                log.exception("claiming conversations failed")
            return []
        self._database.succeeded()
        return claims

    async def process(self, claim: ConversationClaim) -> list[StoredScore]:
        """Rebuild, score and store one claimed conversation; returns its stored score rows."""
        try:
            rows, decisions = await renewing(
                self._assemble_and_score(claim),
                functools.partial(self.queue.renew, [claim], self.config.lease_seconds),
                self.config.lease_seconds,
                f"conversation {claim.conversation_id}",
            )
            await asyncio.to_thread(self._store, claim, rows, decisions)
        except asyncio.CancelledError:
            await asyncio.to_thread(self.queue.release, claim, None)  # shutting down: hand it back
            raise
        except Exception as exc:
            log.exception("scoring conversation %s failed", claim.conversation_id)
            try:
                await asyncio.to_thread(self.queue.release, claim, f"{type(exc).__name__}: {exc}")
            except Exception:
                log.exception(
                    "releasing conversation %s failed; its lease will expire", claim.conversation_id
                )
            return []
        self._observe(rows, decisions)
        return rows

    async def _assemble_and_score(
        self, claim: ConversationClaim
    ) -> tuple[list[StoredScore], list[SamplingDecision]]:
        conversation = await asyncio.to_thread(self.assemble, claim.conversation_id)
        return await self._score(conversation) if conversation is not None else ([], [])

    def assemble(self, conversation_id: str) -> Conversation | None:
        """The conversation as scorers see it: its most recent ``max_turns`` turns rebuilt from
        their traces, in order, and a summary line of the earlier ones; None if it has no turn."""
        with self.store.engine.connect() as conn:
            rows = turns_of(conn, conversation_id)
        if not rows:
            return None
        shown, earlier = rows[-self.config.max_turns :], rows[: -self.config.max_turns]
        traces = self.store.load_traces([row.trace_id for row in shown], settle=False)
        turns = []
        for row in shown:
            trace = traces.get(row.trace_id)
            runs = (
                extract_runs(
                    trace,
                    self.scoring.conventions,
                    only_primary=True,
                    conversation_attributes=self.config.id_attributes,
                )
                if trace is not None
                else []
            )
            run = next((r for r in primary_runs(runs) if r.span_id == row.span_id), None)
            if run is None and (outermost := select_target(runs, "trace")):
                run = outermost[0]
            turns.append(turn_of(run) if run is not None else _stored_turn(row))
        last = shown[-1]
        return Conversation(
            id=conversation_id,
            agent_name=last.agent_name,
            service_name=last.service_name,
            turns=turns,
            earlier_summary=earlier_summary([_stored_turn(row) for row in earlier]),
            earlier_turns=len(earlier),
        )

    async def _score(
        self, conversation: Conversation
    ) -> tuple[list[StoredScore], list[SamplingDecision]]:
        """Each binding's sampling decision on the conversation and, if sampled, its score: a
        decision per scoring (per turn count), as there is a score per scoring."""
        anchor = _anchor(conversation)
        now = datetime.now(UTC)
        turns = conversation.turn_count
        decisions: list[SamplingDecision] = []
        jobs = []
        for binding in self.bindings:
            if not binding.matches(anchor):
                continue
            sampled = is_sampled(conversation.id, binding.sampling_rate)
            decisions.append(
                {
                    "id": conversation_score_id(conversation.id, binding.name, "sampling", turns),
                    "trace_id": anchor.trace_id,
                    "span_id": anchor.span_id,
                    "binding": binding.name,
                    "sampled": sampled,
                    "created_at": now,
                }
            )
            if sampled:
                jobs.append(self._score_one(binding, anchor, conversation))
        return list(await asyncio.gather(*jobs)), decisions

    async def _score_one(
        self, binding: CompiledBinding, anchor: AgentRun, conversation: Conversation
    ) -> StoredScore:
        row = await self.scoring.score(binding, anchor, subject=conversation)
        label_conversation_score(row, conversation, binding)
        return row

    def _store(
        self, claim: ConversationClaim, rows: list[StoredScore], decisions: list[SamplingDecision]
    ) -> None:
        dialect = self.store.engine.dialect
        prepared_decisions = prepare_decisions(dialect, decisions)
        prepared_scores = prepare_scores(self.store.engine, rows)
        with self.store.write_transaction() as conn:
            prepared_decisions.write(conn)
            prepared_scores.write(conn)
            self.queue.complete(conn, [claim])

    def _observe(self, rows: Sequence[StoredScore], decisions: Sequence[SamplingDecision]) -> None:
        metrics = self.scoring.metrics
        for decision in decisions:
            metrics.sampling_decision(decision["binding"], decision["sampled"])
        self.scoring.publish(rows)


def _stored_turn(row: Any) -> Turn:
    """A turn from what its row kept, for an earlier turn or one whose trace is gone."""
    return Turn(
        trace_id=row.trace_id,
        span_id=row.span_id,
        start_time=_timestamp(row.start_time_ns),
        user=row.user_text,
        answer=row.answer_text,
    )


def _anchor(conversation: Conversation) -> AgentRun:
    """The run a conversation's score hangs on: the last turn's (its trace and span, agent,
    service and model), or one standing for it when that turn's trace is gone."""
    last = conversation.turns[-1]
    if last.run is not None:
        return last.run
    return AgentRun(
        trace_id=last.trace_id,
        span_id=last.span_id,
        agent_name=conversation.agent_name,
        service_name=conversation.service_name,
        conversation_id=conversation.id,
        primary=True,
    )
