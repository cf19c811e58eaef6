"""Hand-written loops: model calls that no agent span claims, read as one agent run when what
each call was sent shows they are one task.

The commonest agent in production is a loop around a model client, traced by the client's
instrumentation: a model-call span per step, tool spans (when the user traced the tools)
between them, perhaps a plain span of the user's around it, and no agent span. Its calls are
one task when a later call was sent an earlier call's output as the steps of its own turn
(after the user's last message): the tool calls the earlier call made (same call id, or same
tool name where either has no id), their results, or the text it answered. A call sent them
only as history, before a newer user message, answers the next turn and starts a run of its
own; calls that share nothing stay runs of their own, as a single call does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracescore.extract.messages import message_text
from tracescore.extract.model import SpanInfo
from tracescore.extract.response_ids import previous_response_id, response_id
from tracescore.extract.runs.scope import RunScope
from tracescore.extract.runs.tree import SpanNode, outermost_llm, subtree
from tracescore.extract.runs.turns import split_turn


def find_loops(nodes: list[SpanNode]) -> list[RunScope]:
    """The trace's loops of two calls or more (``nodes`` in start-time order), each read into
    the scope of its agent run: its calls, and the tool spans that ran between them."""
    calls = [node for node in nodes if node.kind == "llm"]
    if len(calls) < 2:  # the common case (one call, or an agent's), answered cheaply
        return []
    calls = [node for node in calls if outermost_llm(node)]
    if len(calls) < 2:
        return []
    chains = [chain for chain in _chains(calls, nodes) if len(chain) > 1]
    if not chains:
        return []
    tools = _tools_of(chains, nodes)
    return [_scope(chain, tools[index], calls) for index, chain in enumerate(chains)]


@dataclass
class _Sent:
    """What the calls of each chain so far answered, by the chain's index: the evidence a later
    call of the same task carries in its turn. A later chain's entry replaces an earlier one's
    (the latest task is the one a new call continues)."""

    by_id: dict[str, int] = field(default_factory=dict)
    by_name: dict[str, int] = field(default_factory=dict)
    """Calls made without an id, by tool name."""
    by_any_name: dict[str, int] = field(default_factory=dict)
    by_text: dict[str, int] = field(default_factory=dict)
    by_response: dict[str, int] = field(default_factory=dict)
    """Responses that asked for tools, by id: a call that continues one (OpenAI Responses'
    ``previous_response_id``) need not send the steps again."""

    def add(self, node: SpanNode, chain: int) -> None:
        info = node.info
        asked = False
        for message in info.output_messages:
            if text := message_text(message):
                self.by_text[text] = chain
            for part in message.content.parts:
                if (call := part.tool_invocation) is None:
                    continue
                if call.tool_call_id:
                    self.by_id[call.tool_call_id] = chain
                elif call.tool_name:
                    self.by_name[call.tool_name] = chain
                if call.tool_name:
                    self.by_any_name[call.tool_name] = chain
                asked = True
        if asked and (response := response_id(node.span.attributes)):
            self.by_response[response] = chain

    def continued(self, node: SpanNode) -> int | None:
        """The chain whose output this call was sent as the steps of its turn, or that of the
        response asking for tools it continues; else None."""
        info = node.info
        previous = previous_response_id(node.span.attributes) if self.by_response else None
        if previous and (chain := self.by_response.get(previous)) is not None:
            return chain
        _, turn = split_turn(info.input_messages)
        for message in turn:
            if (
                message.role == "assistant"
                and (text := message_text(message))
                and (chain := self.by_text.get(text)) is not None
            ):
                return chain
            for part in message.content.parts:
                if (call := part.tool_invocation) is None:
                    continue
                if call.tool_call_id:
                    chain = self.by_id.get(call.tool_call_id, self.by_name.get(call.tool_name))
                else:
                    chain = self.by_any_name.get(call.tool_name)
                if chain is not None:
                    return chain
        return None


def _chains(calls: list[SpanNode], nodes: list[SpanNode]) -> list[list[SpanNode]]:
    """The calls grouped by task: each call joins the chain whose output it was sent. A tool
    span outside any call, agent or tool, with a call id no call's output named, stands for
    a call of the latest call before it (an instrumentation that drops a streamed reply's tool
    calls, as OpenLLMetry's LlamaIndex one does, still records the tools that ran them)."""
    chains: list[list[SpanNode]] = []
    sent = _Sent()
    last: int | None = None
    pending = iter(calls)
    call = next(pending, None)
    for node in nodes:
        if node is call:
            chain = sent.continued(call)
            if chain is None:
                chain = len(chains)
                chains.append([])
            chains[chain].append(call)
            sent.add(call, chain)
            last, call = chain, next(pending, None)
        elif last is not None and (call_id := _unnamed_call(node, sent)):
            sent.by_id[call_id] = last
    return chains


def _unnamed_call(node: SpanNode, sent: _Sent) -> str | None:
    """The call id of a tool span that no call's output named, when it ran on its own."""
    if node.kind != "tool" or node.info.tool_call is None:
        return None
    call_id = node.info.tool_call.tool_call_id
    if not call_id or call_id in sent.by_id:
        return None
    if any(a.kind in ("agent", "llm", "tool") for a in node.ancestors()):
        return None
    return call_id


def _tools_of(chains: list[list[SpanNode]], nodes: list[SpanNode]) -> list[list[SpanNode]]:
    """Per chain, the tool spans that ran its calls' tools: outermost tool spans outside any
    agent or model call, started while the loop ran; one that two loops' times cover goes to
    the loop whose calls made its call id, else to the earlier loop."""
    windows = [
        (chain[0].span.start_time_ns, max(call.span.end_time_ns for call in chain))
        for chain in chains
    ]
    made = [
        {
            part.tool_invocation.tool_call_id
            for call in chain
            for message in call.info.output_messages
            for part in message.content.parts
            if part.tool_invocation is not None and part.tool_invocation.tool_call_id
        }
        for chain in chains
    ]
    tools: list[list[SpanNode]] = [[] for _ in chains]
    for node in nodes:
        if node.kind != "tool" or any(a.kind in ("agent", "llm", "tool") for a in node.ancestors()):
            continue
        start = node.span.start_time_ns
        covering = [i for i, (low, high) in enumerate(windows) if low <= start <= high]
        if not covering:
            continue
        call_id = node.info.tool_call.tool_call_id if node.info.tool_call else ""
        owner = next((i for i in covering if call_id and call_id in made[i]), covering[0])
        tools[owner].append(node)
    return tools


def _scope(chain: list[SpanNode], tools: list[SpanNode], calls: list[SpanNode]) -> RunScope:
    """A loop's scope, anchored to the user's plain span around it when that span holds this
    loop's calls and no other, else to its first call."""
    first = chain[0]
    members = sorted(
        (node for top in (*chain, *tools) for node in (top, *subtree(top))),
        key=lambda n: n.span.start_time_ns,
    )
    around = _common_parent(chain)
    in_loop = {id(call) for call in chain}
    holds_only_loop = around is not None and not any(
        id(call) not in in_loop and around in call.ancestors() for call in calls
    )
    anchor = around if around is not None and around.kind == "other" and holds_only_loop else None
    steps = sorted(
        (
            node
            for call in chain
            for node in (call, *subtree(call))
            if node.kind == "llm" and not node.has_llm_below
        ),
        key=lambda n: n.span.start_time_ns,
    )
    if anchor is None:
        facts = SpanInfo(span_id=first.span.span_id, convention=first.info.convention)
        start, end = first.span.start_time_ns, max(c.span.end_time_ns for c in chain)
    else:
        facts = anchor.info
        start, end = anchor.span.start_time_ns, anchor.span.end_time_ns
    return RunScope(
        anchor=anchor or first,
        facts=facts,
        members=members,
        steps=steps,
        tools=tools,
        usage_from=steps,
        start_time_ns=start,
        end_time_ns=end,
    )


def _common_parent(chain: list[SpanNode]) -> SpanNode | None:
    """The lowest span above every call of the chain, or None when they share none."""
    path = list(chain[0].ancestors())
    depth = {id(node): index for index, node in enumerate(path)}
    lowest = 0
    for call in chain[1:]:
        found = next((depth[id(a)] for a in call.ancestors() if id(a) in depth), None)
        if found is None:
            return None
        lowest = max(lowest, found)
    return path[lowest] if path else None
