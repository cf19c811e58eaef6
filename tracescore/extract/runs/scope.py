"""The spans one agent run is made of: an agent span's, or a hand-written loop's.

An agent run is the same whatever marks it: the model calls (its steps) and tool spans of one
task, the first call's input as its question, each call's tool calls joined to their results,
the last call's text as the answer. An agent span says where that task starts and stops; a
loop around a model client has no agent span, and its calls are linked by what each was sent
(:mod:`.loops`). Both are read into a :class:`RunScope`, which :mod:`.agent` turns into the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracescore.extract.model import SpanInfo
from tracescore.extract.runs.tree import SpanNode, agent_scope, subtree, under_tool


@dataclass(eq=False)
class RunScope:
    """What an agent run is read from.

    ``anchor`` is the span the run is keyed to (its id, times, status and attributes);
    ``facts`` what the anchor itself says about the agent (an agent span's own system prompt,
    input, output, tools, usage), or a blank info when it says nothing of its own (a loop);
    ``steps`` the model calls in time order (innermost, when a client's call wraps another
    client's); ``tools`` the tool spans that ran the calls' tools; ``nested`` the agents it
    handed work to, which become runs of their own; ``usage_from`` the calls whose token usage
    the run sums (an agent's include its nested agents' calls: they spent it on its task).
    """

    anchor: SpanNode
    facts: SpanInfo
    members: list[SpanNode]
    steps: list[SpanNode]
    tools: list[SpanNode]
    nested: list[SpanNode] = field(default_factory=list)
    usage_from: list[SpanNode] = field(default_factory=list)
    start_time_ns: int = 0
    end_time_ns: int = 0


def of_agent(node: SpanNode) -> RunScope:
    """An agent span's scope: the spans beneath it, down to (not into) nested agent spans."""
    members, nested = agent_scope(node)
    return RunScope(
        anchor=node,
        facts=node.info,
        members=members,
        steps=[m for m in members if m.kind == "llm" and not m.has_llm_below],
        tools=[m for m in members if m.kind == "tool" and not under_tool(m, node)],
        nested=nested,
        usage_from=[n for n in subtree(node) if n.kind == "llm" and not n.has_llm_below],
        start_time_ns=node.span.start_time_ns,
        end_time_ns=node.span.end_time_ns,
    )
