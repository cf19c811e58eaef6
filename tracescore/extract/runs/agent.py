"""Agent runs: one per agent span and one per hand-written loop, built by one function from the
spans their :class:`~tracescore.extract.runs.scope.RunScope` holds.

The trajectory is the scope's model calls and tool spans in time order; nested agents become
runs of their own and join it as tool calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracescore.extract.base import timestamp
from tracescore.extract.messages import executed_call
from tracescore.extract.model import (
    AgentRun,
    Message,
    RunInput,
    SpanInfo,
    TokenUsage,
    ToolInvocation,
)
from tracescore.extract.runs.fields import (
    base_run,
    merge_tools,
    run_output,
    span_warnings,
    sum_usage,
    tool_outcomes,
    tool_result_documents,
)
from tracescore.extract.runs.scope import RunScope, of_agent
from tracescore.extract.runs.trajectory import Trajectory
from tracescore.extract.runs.tree import SpanNode
from tracescore.extract.runs.turns import (
    conversation_text,
    final_text,
    last_text,
    run_input_and_steps,
    split_turn,
    with_results_joined,
)
from tracescore.spans import Trace


def agent_run(
    trace: Trace, node: SpanNode, built: dict[str, AgentRun], handed: dict[str, int]
) -> AgentRun:
    """The agent span's run (built once: a parent agent's run builds its nested agents')."""
    found = built.get(node.span.span_id)
    return found if found is not None else scope_run(trace, of_agent(node), built, handed)


@dataclass(eq=False, slots=True)
class ScopeReading:
    """What a scope's spans say of its run, before the run is built: its nested agents' runs,
    its input, its trajectory and final answer, and whose status it takes."""

    scope: RunScope
    sub_runs: list[AgentRun]
    run_input: RunInput
    trajectory: Trajectory
    final: str
    outcome: SpanInfo

    def agent_name(self) -> str | None:
        info, steps = self.scope.facts, self.scope.steps
        return (
            info.agent_name
            or info.name
            or next((s.info.agent_name for s in steps if s.info.agent_name), None)
        )

    def model(self) -> str | None:
        info, steps = self.scope.facts, self.scope.steps
        return info.model or next((s.info.model for s in steps if s.info.model), None)

    def primary(self) -> bool:
        """A wrapper that only runs agents (openai-agents' ``Agent workflow``, a workflow of
        agents) stays in the tree, but it is not an agent of its own: scoring it would score
        its agents' work twice, and judge its "tool calls" (the agents) against the real
        tools."""
        return bool(self.scope.steps or self.scope.tools or not self.sub_runs)

    def output(self) -> list[Message]:
        """The run's single output message (:func:`run_output`)."""
        return run_output(self.scope.anchor, self.trajectory, self.final)


def read_scope(
    trace: Trace, scope: RunScope, built: dict[str, AgentRun], handed: dict[str, int]
) -> ScopeReading:
    """What the run of a scope is made of; nested agents' runs are built first (and kept in
    ``built``, by span id).

    ``handed`` gets, per agent, how many messages after the user's turn it was handed (another
    agent's handoff): its LLM runs read those as history too, not as their own steps.
    """
    sub_runs = [agent_run(trace, agent, built, handed) for agent in scope.nested]
    run_input = _run_input(scope, sub_runs, handed)
    trajectory = _trajectory(
        scope.facts, scope.steps, scope.tools, list(zip(scope.nested, sub_runs, strict=True))
    )
    final = _answer(scope, trajectory, sub_runs)
    return ScopeReading(scope, sub_runs, run_input, trajectory, final, _outcome(scope))


def scope_run(
    trace: Trace, scope: RunScope, built: dict[str, AgentRun], handed: dict[str, int]
) -> AgentRun:
    """The agent run of a scope (:func:`read_scope`), kept in ``built`` with its nested
    agents' runs."""
    anchor, info, steps = scope.anchor, scope.facts, scope.steps
    reading = read_scope(trace, scope, built, handed)
    trajectory, outcome, members = reading.trajectory, reading.outcome, scope.members
    # Every field worked out first and the run built once: a run model's attribute assignment
    # is not free, and this is the run the live pipeline scores.
    run = base_run(
        trace,
        anchor,
        "agent",
        # A loop is read by its calls' convention, whatever read the span around it.
        convention=info.convention
        if info.kind == "agent" or not steps
        else steps[0].info.convention,
        agent_name=reading.agent_name(),
        primary=reading.primary(),
        model=reading.model(),
        provider=info.provider or next((s.info.provider for s in steps if s.info.provider), None),
        start_time=timestamp(scope.start_time_ns),
        end_time=timestamp(scope.end_time_ns),
        status=outcome.status,
        error=outcome.error,
        usage=sum_usage(scope.usage_from) or info.usage or TokenUsage(),
        input=reading.run_input,
        output=reading.output(),
        context=tool_result_documents(trajectory.calls)
        + [doc for member in members for doc in member.info.documents],
        tools=merge_tools([info.tools, *(s.info.tools for s in steps)]),
        span_ids=[
            *([] if anchor in members else [anchor.span.span_id]),
            *(m.span.span_id for m in members),
            *trajectory.agent_span_ids,
        ],
        warnings=[
            *([] if anchor in members else span_warnings(anchor)),
            *(w for member in members for w in span_warnings(member)),
        ],
    )
    built[anchor.span.span_id] = run
    return run


def _run_input(scope: RunScope, sub_runs: list[AgentRun], handed: dict[str, int]) -> RunInput:
    """The system prompt and the user's turn (history apart) the run was given.

    The calls record what the model was really sent: the agent span's own system prompt and
    input count where they have none, or first when the span says so (``own_facts_first``).
    """
    info, steps = scope.facts, scope.steps
    first_input = next((s.info for s in steps if s.info.input_messages), None)
    system = info.system or next((s.info.system for s in steps if s.info.system), [])
    run_input, handed_over = run_input_and_steps(
        system,
        first_input.input_messages
        if first_input and not (info.own_facts_first and info.input_messages)
        else info.input_messages,
    )
    if handed_over:  # what followed the user's messages when this agent started (a handoff)
        handed[scope.anchor.span.span_id] = len(handed_over)
        run_input.remembered_messages = with_results_joined(
            [*run_input.remembered_messages, *handed_over]
        )
    if not steps and sub_runs and not run_input.input_messages:
        # A workflow-like agent that only delegates: its question is its first agent's.
        return sub_runs[0].input.copied()
    return run_input


def _answer(scope: RunScope, trajectory: Trajectory, sub_runs: list[AgentRun]) -> str:
    """The final answer: the last call's text (the agent span's own first when it says so),
    else the span's, else the trajectory's last text, else (a workflow of agents) its last
    agent's."""
    info, steps = scope.facts, scope.steps
    return (
        (final_text(info.output_messages) if info.own_facts_first else "")
        or final_text([s.info.output_messages[-1] for s in steps if s.info.output_messages][-1:])
        or final_text(info.output_messages)
        or last_text(trajectory.parts)
        or next(
            (
                r.output[0].content.content
                for r in reversed(sub_runs)
                if not steps and r.output and r.output[0].content.content
            ),
            "",
        )
    )


def _outcome(scope: RunScope) -> SpanInfo:
    """Whose status the run takes: the anchor's, unless the anchor is a loop's first call
    (then the loop's last call says how it ended)."""
    anchor = scope.anchor.info
    if anchor.kind == "llm" and scope.steps:
        return scope.steps[-1].info
    return anchor


def _trajectory(
    info: SpanInfo,
    steps: list[SpanNode],
    tools: list[SpanNode],
    nested: list[tuple[SpanNode, AgentRun]],
) -> Trajectory:
    """The agent's steps in time order, with every tool call joined to its outcome.

    A nested agent joins the trajectory as the answer to the call its parent's LLM made; a
    parent with no LLM steps of its own (a workflow of agents) shows each agent as a call.
    """
    trajectory = Trajectory()
    sub_runs = {id(agent): sub_run for agent, sub_run in nested}
    events = steps + tools + [agent for agent, _ in nested]
    for event in sorted(events, key=lambda n: n.span.start_time_ns):
        if event.kind == "llm":
            for message in event.info.output_messages:
                trajectory.add_parts(message.content.parts)
        elif event.kind == "tool":
            for outcome in tool_outcomes(event):
                trajectory.add_result(outcome)
        else:
            outcome = _agent_outcome(sub_runs[id(event)])
            if not steps or trajectory.answers_pending_call(outcome):
                trajectory.add_result(outcome)
                trajectory.agent_span_ids.append(event.span.span_id)
    if not any(s.info.output_messages for s in steps):
        # No step recorded its output (or there are no LLM spans): the agent span's own output
        # is the trajectory (ai@7 puts every step's parts there).
        for message in info.output_messages:
            trajectory.add_parts(message.content.parts)
    for step in steps:
        _, current = split_turn(step.info.input_messages)
        trajectory.resolve_from_messages(current)
    return trajectory


def _agent_outcome(run: AgentRun) -> ToolInvocation:
    """A nested agent's run seen as the tool call that invoked it: its question and answer."""
    answer = run.output[0].content.content if run.output else None
    return executed_call(
        "",
        run.agent_name or "",
        conversation_text(run.input.input_messages),
        answer,
        failed=run.status == "error",
        error=run.error,
    )
