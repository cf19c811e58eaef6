"""What a batch of claimed traces carries through the scoring worker's synchronous pass, and
what each trace adds to the transaction that stores its scores: its turn of a conversation and
its counts per source."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tracescore.conversations.turns import answer_text, user_text
from tracescore.extract.content import awaits_tool_results
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import TraceReading
from tracescore.pipeline.bindings import select_target
from tracescore.pipeline.route import Routed
from tracescore.store.conversations import TurnRecord
from tracescore.store.sources import SourceTally
from tracescore.store.trace_queue import TraceClaim


@dataclass(slots=True)
class ClaimedTrace(Routed):
    """One claimed trace on its way through a batch: what routing its runs gave
    (:class:`~tracescore.pipeline.route.Routed`), and what is stored beside its scores."""

    claim: TraceClaim
    runs: list[AgentRun] = field(default_factory=list)
    turn: TurnRecord | None = None
    """The trace's turn, when it names a conversation: recorded with its scores."""
    reading: TraceReading | None = None
    """What each of its sources gave (:mod:`tracescore.extract.sources`): counted with its scores."""


@dataclass(slots=True)
class BatchPass:
    """What one batch's synchronous pass found, for :meth:`~tracescore.pipeline.scoring_worker.ScoringWorker.process_batch`."""

    done: list[ClaimedTrace] = field(default_factory=list)
    unsampled: list[TraceClaim] = field(default_factory=list)
    tallies: dict[str, int] = field(default_factory=dict)
    later: list[ClaimedTrace] = field(default_factory=list)
    failed: list[tuple[TraceClaim, str]] = field(default_factory=list)


def source_tallies(traces: Sequence[ClaimedTrace]) -> list[SourceTally]:
    """The batch's counts per source: each trace's readings added up, the reason of the
    batch's last trace that gave the source one kept."""
    tallies: dict[tuple[str, str], SourceTally] = {}
    for trace in traces:
        if trace.reading is None:
            continue
        unread = trace.reading.unread
        for source in trace.reading.sources:
            key = (source.service, source.scope)
            if (tally := tallies.get(key)) is None:
                tally = tallies[key] = SourceTally(source.service, source.scope)
            tally.spans += source.spans
            tally.traces += 1
            tally.runs += source.runs
            tally.runs_with_content += source.runs_with_content
            tally.convention = source.convention or tally.convention
            tally.unread_traces += unread
            if source.reason is not None:
                tally.reason, tally.detail = source.reason, source.detail
    return list(tallies.values())


def trace_turn(runs: Sequence[AgentRun], now: datetime, max_skew: float) -> TurnRecord | None:
    """The trace's turn: its outermost primary run, when that names a conversation and is no
    hand-written loop's step that arrived as a trace of its own
    (:func:`~tracescore.extract.content.awaits_tool_results`). A start
    more than ``max_skew`` seconds after ``now`` (shortly after the trace arrived) is taken as
    ``now``, so that a wrong clock cannot keep the conversation first in every listing; the
    run's spans keep their own times."""
    outermost = select_target(runs, "trace")
    if not outermost or (conversation := outermost[0].conversation_id) is None:
        return None
    if awaits_tool_results(outermost[0]):  # a loop's step: the turn is the trace that answers
        return None
    run = outermost[0]
    started = run.start_time.timestamp() if run.start_time else 0.0
    if started > now.timestamp() + max_skew:
        started = now.timestamp()
    return TurnRecord(
        conversation_id=conversation,
        trace_id=run.trace_id,
        span_id=run.span_id,
        start_time_ns=int(started * 1e9),
        user_text=user_text(run),
        answer_text=answer_text(run),
        agent_name=run.agent_name,
        service_name=run.service_name,
    )
