"""LLM runs: every LLM span is a run of its own, sharing what its agent's run already joined."""

from __future__ import annotations

from dataclasses import dataclass, field

from tracescore.extract.content import stopped_for_tools
from tracescore.extract.model import AgentRun, TokenUsage, ToolInvocation
from tracescore.extract.runs.fields import base_run, run_output, sum_usage, tool_result_documents
from tracescore.extract.runs.trajectory import RESOLVED, AnsweredCall, Trajectory
from tracescore.extract.runs.tree import SpanNode, outermost_llm, subtree
from tracescore.extract.runs.turns import final_text, run_input_and_steps, with_results_joined
from tracescore.spans import Trace

UNRECORDED_CALLS = (
    "the reply stopped to call tools (its finish reason) but its span records no tool call: "
    "the instrumentation left them out, so this call shows none; an agent run holds them only "
    "where another span recorded them (a tool step, a later call's input)"
)
"""A step whose calls are missing from its span (OpenLLMetry's Mistral instrumentation, its
LlamaIndex one for a streamed reply): what is missing is said on the run, not left for the
reader to guess from an empty output."""


@dataclass(eq=False)
class Known:
    """What a trace's agent runs established, for its LLM runs.

    ``handed``: per agent span, how many messages after the user's turn it was handed;
    ``failed``: failed tool spans by call id; ``agents``: the agent runs by span id, whose
    answered calls an LLM run inside the agent shares rather than joining them again (a long
    conversation would rebuild every earlier call for every call in it).
    """

    failed: dict[str, ToolInvocation]
    handed: dict[str, int] = field(default_factory=dict)
    agents: dict[str, AgentRun] = field(default_factory=dict)
    _answered: dict[str, dict[str, AnsweredCall]] = field(default_factory=dict)

    def answered(self, agent_span_id: str) -> dict[str, AnsweredCall]:
        """The agent run's answered tool calls (with their parts) by call id (built once per
        agent)."""
        found = self._answered.get(agent_span_id)
        if found is None:
            run = self.agents.get(agent_span_id)
            found = {
                call.tool_call_id: (call, part)
                for message in (run.output if run is not None else [])
                for part in message.content.parts
                if (call := part.tool_invocation) is not None
                and call.tool_call_id
                and call.state in RESOLVED
            }
            self._answered[agent_span_id] = found
        return found


def failed_calls(nodes: list[SpanNode]) -> dict[str, ToolInvocation]:
    """Tool spans that failed, by call id. The message an LLM is sent back may not say so
    (LangChain's flattened tool message drops ``status: error``): the tool span does."""
    return {
        call.tool_call_id: call
        for node in nodes
        if node.kind == "tool" and node.info.tool_call is not None
        for call in (node.info.tool_call, *node.info.more_tool_calls)
        if call.tool_call_id and call.state == "output-error"
    }


def llm_run(trace: Trace, node: SpanNode, known: Known, *, in_loop: bool = False) -> AgentRun:
    """The call's run; primary when it stands for the agent (no agent span, LLM span or
    hand-written loop (``in_loop``) holds it)."""
    run = base_run(trace, node, "llm")
    info = node.info
    run.primary = not in_loop and outermost_llm(node)
    run.input, earlier_steps = run_input_and_steps(info.system, info.input_messages)
    current = [*run.input.input_messages, *earlier_steps]  # the whole turn it was sent
    agent = next((a for a in node.ancestors() if a.kind == "agent"), None)
    before = known.handed.get(agent.span.span_id, 0) if agent is not None else 0
    answered = known.answered(agent.span.span_id) if agent is not None else None
    if before:  # steps of the agent that handed over: history here too
        run.input.remembered_messages = with_results_joined(
            [*run.input.remembered_messages, *earlier_steps[:before]]
        )
        earlier_steps = earlier_steps[before:]
    trajectory = Trajectory()
    # The turn so far, then this call: a raw client's last call then reads like the agent run
    # it stands for (question in, tool steps with their results and the answer out).
    for message in earlier_steps:
        if message.role == "assistant":
            trajectory.add_parts(message.content.parts, answered)
        else:
            trajectory.resolve_from_messages([message])
    failed = known.failed
    for call in trajectory.calls:
        failure = failed.get(call.tool_call_id) if call.state == "result" else None
        if failure is not None:
            call.state, call.is_error, call.error_text = "output-error", True, failure.error_text
    for message in info.output_messages:
        trajectory.add_parts(message.content.parts)
    run.output = run_output(node, trajectory, final_text(info.output_messages))
    if not run.output and info.input_messages and stopped_for_tools(node.span.attributes):
        run.warnings.append(UNRECORDED_CALLS)
    run.tools = list(info.tools)
    results = [
        part.tool_invocation
        for message in current
        for part in message.content.parts
        if part.tool_invocation is not None
        and part.tool_invocation.state in RESOLVED
        and part.tool_invocation.tool_call_id not in failed  # a failure is no grounding
    ]
    run.context = tool_result_documents(results) + list(info.documents)
    leaves = [n for n in subtree(node) if n.kind == "llm" and not n.has_llm_below]
    run.usage = info.usage or sum_usage(leaves) or TokenUsage()
    return run
