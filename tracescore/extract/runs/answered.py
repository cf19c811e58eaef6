"""A trace's primary runs as a reader of what each was asked and answered needs them: the runs
of ``build_runs(trace, only_primary=True)``, each with its input, output, status, agent, model
and start, and nothing else.

An insights pass reads that of every failed run it groups (20,000 of them at most), and the
rest of a run (usage summed over its steps, tool results as context, tool definitions, span
ids, warnings, attributes, conversation id) was a third of rebuilding it, its Mastra-shaped
dicts (:class:`~tracescore.scorers.scorer_run.ScorerRun`) and their reading as much again
(issue 48). An agent run is read from its scope by the same functions as the whole run
(:func:`~tracescore.extract.runs.agent.read_scope`); a nested agent, already built whole for
the agent that called it, and a raw client's call (an LLM run) are taken from their whole run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tracescore.extract.base import Convention, timestamp
from tracescore.extract.model import AgentRun, Message, RunInput, SpanStatus
from tracescore.extract.registry import CONVENTIONS
from tracescore.extract.runs.agent import ScopeReading, read_scope
from tracescore.extract.runs.llm import Known, failed_calls, llm_run
from tracescore.extract.runs.loops import find_loops
from tracescore.extract.runs.scope import of_agent
from tracescore.extract.runs.tree import outermost_llm, span_tree
from tracescore.spans import Trace

FAILED_WITHOUT_ERROR = "the run ended in error"
"""The error of a run that ended in error without saying why."""


@dataclass(eq=False, slots=True)
class AnsweredRun:
    """What a primary run was asked and answered, and by whom: the fields of its
    :class:`~tracescore.extract.model.AgentRun` of the same names, the same values."""

    span_id: str
    agent_name: str | None
    model: str | None
    start_time: datetime | None
    status: SpanStatus
    error: str | None
    input: RunInput
    output: list[Message]

    @classmethod
    def of(cls, run: AgentRun) -> AnsweredRun:
        return cls(
            span_id=run.span_id,
            agent_name=run.agent_name,
            model=run.model,
            start_time=run.start_time,
            status=run.status,
            error=run.error,
            input=run.input,
            output=run.output,
        )

    @classmethod
    def read(cls, reading: ScopeReading) -> AnsweredRun:
        """The agent run of a scope, as :func:`~tracescore.extract.runs.agent.scope_run`
        builds it."""
        scope = reading.scope
        return cls(
            span_id=scope.anchor.span.span_id,
            agent_name=reading.agent_name(),
            model=reading.model(),
            start_time=timestamp(scope.start_time_ns),
            status=reading.outcome.status,
            error=reading.outcome.error,
            input=reading.run_input,
            output=reading.output(),
        )

    def answer(self) -> str:
        """The last assistant message's text, as Mastra's ``getAssistantMessageFromRunOutput``
        reads it from the dumped message: its ``content``, else its last text part."""
        for message in reversed(self.output):
            if message.role == "assistant":
                content = message.content
                texts = [p.text for p in content.parts if p.type == "text" and p.text is not None]
                if text := content.content or (texts[-1] if texts else ""):
                    return text
        return ""

    def failure(self) -> str | None:
        """Why the run failed, when it ended in error (what scorers are told)."""
        return failure(self.status, self.error)


def failure(status: SpanStatus, error: str | None) -> str | None:
    """Why a run with this status and error failed (its error, or that it ended in error),
    None when it did not end in error."""
    return (error or FAILED_WITHOUT_ERROR) if status == "error" else None


def answered_runs(trace: Trace, conventions: list[Convention] = CONVENTIONS) -> list[AnsweredRun]:
    """The trace's primary runs, in the order ``build_runs(trace, only_primary=True)`` gives
    them: agent runs, then hand-written loops, then raw clients' calls."""
    with span_tree(trace, conventions) as nodes:
        known = Known(failed=failed_calls(nodes))
        found: list[AnsweredRun] = []
        for node in nodes:
            if node.kind != "agent":
                continue
            whole = known.agents.get(node.span.span_id)
            if whole is not None:  # a nested agent, built whole for the agent that called it
                if whole.primary:
                    found.append(AnsweredRun.of(whole))
                continue
            reading = read_scope(trace, of_agent(node), known.agents, known.handed)
            if reading.primary():
                found.append(AnsweredRun.read(reading))
        loops = find_loops(nodes)
        for loop in loops:
            reading = read_scope(trace, loop, known.agents, known.handed)
            if reading.primary():
                found.append(AnsweredRun.read(reading))
        in_loop = {id(step) for loop in loops for step in loop.members if step.kind == "llm"}
        found.extend(
            AnsweredRun.of(llm_run(trace, node, known))
            for node in nodes
            if node.kind == "llm" and outermost_llm(node) and id(node) not in in_loop
        )
    return found
