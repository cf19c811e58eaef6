"""Agent runs: an agent span's trajectory is the LLM and tool spans beneath it, down to (not
into) nested agent spans, which become runs of their own and join it as tool calls.
"""

from __future__ import annotations

from tracescore.extract.messages import executed_call
from tracescore.extract.model import AgentRun, SpanInfo, TokenUsage, ToolInvocation
from tracescore.extract.runs.fields import (
    base_run,
    merge_tools,
    run_output,
    span_warnings,
    sum_usage,
    tool_outcome,
    tool_result_documents,
)
from tracescore.extract.runs.trajectory import Trajectory
from tracescore.extract.runs.tree import SpanNode, agent_scope, subtree, under_tool
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
    """The agent's run; nested agents' runs are built first (and kept in ``built``).

    ``handed`` gets, per agent, how many messages after the user's turn it was handed (another
    agent's handoff): its LLM runs read those as history too, not as their own steps.
    """
    if node.span.span_id in built:
        return built[node.span.span_id]
    info = node.info
    members, nested = agent_scope(node)
    steps = [m for m in members if m.kind == "llm" and not m.has_llm_below]
    tools = [m for m in members if m.kind == "tool" and not under_tool(m, node)]

    sub_runs = [agent_run(trace, agent, built, handed) for agent in nested]

    first_input = next((s.info for s in steps if s.info.input_messages), None)
    system = info.system or next((s.info.system for s in steps if s.info.system), [])
    run_input, handed_over = run_input_and_steps(
        system, first_input.input_messages if first_input else info.input_messages
    )
    if handed_over:  # what followed the user's messages when this agent started (a handoff)
        handed[node.span.span_id] = len(handed_over)
        run_input.remembered_messages = with_results_joined(
            [*run_input.remembered_messages, *handed_over]
        )
    if not steps and sub_runs and not run_input.input_messages:
        # A workflow-like agent that only delegates: its question is its first agent's.
        run_input = sub_runs[0].input.copied()
    trajectory = _agent_trajectory(info, steps, tools, list(zip(nested, sub_runs, strict=True)))
    final = (
        final_text([s.info.output_messages[-1] for s in steps if s.info.output_messages][-1:])
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
    leaves = [n for n in subtree(node) if n.kind == "llm" and not n.has_llm_below]
    # Every field worked out first and the run built once: a run model's attribute assignment
    # is not free, and this is the run the live pipeline scores.
    run = base_run(
        trace,
        node,
        "agent",
        agent_name=info.agent_name or info.name,
        # A wrapper that only runs agents (openai-agents' ``Agent workflow``, a workflow of
        # agents) stays in the tree, but it is not an agent of its own: scoring it would score
        # its agents' work twice, and judge its "tool calls" (the agents) against the real tools.
        primary=bool(steps or tools or not sub_runs),
        model=info.model or next((s.info.model for s in steps if s.info.model), None),
        provider=info.provider or next((s.info.provider for s in steps if s.info.provider), None),
        usage=sum_usage(leaves) or info.usage or TokenUsage(),
        input=run_input,
        output=run_output(node, trajectory, final),
        context=tool_result_documents(trajectory.calls)
        + [doc for member in members for doc in member.info.documents],
        tools=merge_tools([info.tools, *(s.info.tools for s in steps)]),
    )
    run.span_ids.extend(m.span.span_id for m in members)
    run.span_ids.extend(trajectory.agent_span_ids)
    for member in members:
        run.warnings.extend(span_warnings(member))
    built[node.span.span_id] = run
    return run


def _agent_trajectory(
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
            trajectory.add_result(tool_outcome(event))
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
