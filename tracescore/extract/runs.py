"""Turn a trace into scorable runs, knowing nothing of any span convention.

Convention modules read each span into a :class:`SpanInfo` (kind ``agent``, ``llm``, ``tool``,
``retrieval`` or ``other``, plus neutral messages and facts). This module only walks the tree of
those infos:

* every agent span becomes an agent run whose trajectory is the LLM and tool spans beneath it,
  down to (not into) nested agent spans, which become runs of their own;
* every LLM span and every tool span also becomes a run, so configs can score those levels;
* tool calls the LLMs made are joined with the tool spans that ran them (by id, or by name and
  order when the convention records no id), or else with the tool results the next LLM call
  was sent.

Extraction never raises: a span that cannot be read leaves a warning on its run instead.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracescore.extract.base import (
    Convention,
    json_text,
    new_info,
    safe_read,
    safe_refine,
    timestamp,
)
from tracescore.extract.conversation_id import DEFAULT_ID_ATTRIBUTES, conversation_id
from tracescore.extract.genai_messages import (
    build_message,
    executed_call,
    message_text,
    text_part,
)
from tracescore.extract.model import (
    AgentRun,
    ContextDocument,
    Message,
    MessagePart,
    RunInput,
    SpanInfo,
    SystemMessage,
    TokenUsage,
    ToolDefinition,
    ToolInvocation,
)
from tracescore.extract.registry import CONVENTIONS, convention_for
from tracescore.spans import Span, Trace

_RESOLVED = frozenset({"result", "output-error", "output-denied"})
AnsweredCall = tuple[ToolInvocation, MessagePart]
"""A tool call an agent run already joined to its outcome, and the message part holding it."""


@dataclass(eq=False)
class _Node:
    span: Span
    info: SpanInfo
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)
    has_llm_below: bool = False

    @property
    def kind(self) -> str:
        return self.info.kind

    def ancestors(self) -> Iterator[_Node]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


def read_spans(trace: Trace, conventions: list[Convention] = CONVENTIONS) -> list[SpanInfo]:
    """One ``SpanInfo`` per span of the trace, each read by the convention that claims it."""
    return [node.info for node in _build_tree(trace, conventions)]


def build_runs(
    trace: Trace, conventions: list[Convention] = CONVENTIONS, *, only_primary: bool = False,
    conversation_attributes: Sequence[str] = DEFAULT_ID_ATTRIBUTES,
) -> list[AgentRun]:
    """All runs of a trace: agent runs first, then LLM runs, then tool runs (each by start time).

    With ``only_primary``, just the runs that stand for the trace's agent, exactly
    ``primary_runs(build_runs(trace))``, without building the others: the LLM runs inside an
    agent and every tool run (the live pipeline's default bindings score only these, and the
    rest was about a third of extraction's time). Every run carries the trace's conversation
    id, found by ``conversation_attributes`` (:mod:`tracescore.extract.conversation_id`).
    """
    nodes = _build_tree(trace, conventions)
    known = _Known(failed=_failed_calls(nodes))
    runs = [_agent_run(trace, node, known.agents, known.handed)
            for node in nodes if node.kind == "agent"]
    if only_primary:
        runs = [run for run in runs if run.primary]
        runs.extend(_llm_run(trace, node, known) for node in nodes if node.kind == "llm" and _outermost_llm(node))
    else:
        runs.extend(_llm_run(trace, node, known) for node in nodes if node.kind == "llm")
        runs.extend(_tool_run(trace, node) for node in nodes if node.kind == "tool")
    if runs and (conversation := conversation_id(trace.spans, conversation_attributes)) is not None:
        for run in runs:
            run.conversation_id = conversation
    return runs


def primary_runs(runs: Iterable[AgentRun]) -> list[AgentRun]:
    """The runs that stand for each trace's agent (see ``AgentRun.primary``)."""
    return [run for run in runs if run.primary]


RUN_KINDS = ("agent", "llm", "tool")


def select_runs(
    runs: Iterable[AgentRun], *, primary: bool = False, kinds: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """The runs kept by a ``primary`` / ``kinds`` filter, as the JSON documents (Mastra's
    camelCase) that ``tracescore extract`` prints and ``/api/traces/{id}/runs`` returns: one
    function, so a script reads the same runs from either."""
    wanted = set(kinds)
    return [
        run.model_dump(mode="json", by_alias=True, exclude_none=True)
        for run in runs
        if (run.primary or not primary) and (not wanted or run.kind in wanted)
    ]


# --- tree ----------------------------------------------------------------------------------


def _build_tree(trace: Trace, conventions: list[Convention]) -> list[_Node]:
    """The trace's spans read and linked, in start-time order (duplicates sent twice dropped)."""
    logs = trace.logs_by_span()
    nodes: dict[str, _Node] = {}
    claimed: dict[Convention, list[tuple[Span, SpanInfo]]] = {}
    for span in sorted(trace.spans, key=lambda s: s.start_time_ns):
        if span.span_id in nodes:
            continue
        convention = convention_for(span, conventions)
        if convention is None:
            info = new_info(span, "unknown")
        else:
            info = safe_read(convention, span, logs.get(span.span_id, []))
            claimed.setdefault(convention, []).append((span, info))
        nodes[span.span_id] = _Node(span, info)
    for convention, read in claimed.items():
        safe_refine(convention, read)
    for node in nodes.values():
        parent = nodes.get(node.span.parent_span_id or "")
        if parent is not None and parent is not node:
            node.parent = parent
            parent.children.append(node)
    _cut_cycles(nodes.values())
    for node in nodes.values():
        if node.kind == "llm":
            for ancestor in node.ancestors():
                if ancestor.has_llm_below:
                    break
                ancestor.has_llm_below = True
    return list(nodes.values())


def _cut_cycles(nodes: Iterable[_Node]) -> None:
    """Break parent links that loop (corrupt or hostile ids), so every walk up ends. O(n)."""
    done: set[int] = set()
    for start in nodes:
        path: list[_Node] = []
        on_path: set[int] = set()
        node: _Node | None = start
        while node is not None and id(node) not in done:
            if id(node) in on_path:
                closing = path[-1]  # its parent link closes the loop
                node.children.remove(closing)
                closing.parent = None
                closing.info.warnings.append("parent span link forms a cycle; read as a root")
                break
            on_path.add(id(node))
            path.append(node)
            node = node.parent
        done.update(on_path)


def _scope(root: _Node) -> tuple[list[_Node], list[_Node]]:
    """The spans an agent run is made of, and the nested agents where its scope stops."""
    members: list[_Node] = []
    nested: list[_Node] = []
    stack = list(reversed(root.children))
    while stack:
        node = stack.pop()
        if node.kind == "agent":
            nested.append(node)
            continue
        members.append(node)
        stack.extend(reversed(node.children))
    members.sort(key=lambda n: n.span.start_time_ns)
    nested.sort(key=lambda n: n.span.start_time_ns)
    return members, nested


def _subtree(root: _Node) -> Iterator[_Node]:
    stack = list(root.children)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


# --- shared run fields -----------------------------------------------------------------------


def _is_user_turn(message: Message) -> bool:
    """A message the user typed, not a tool result sent with role ``user`` (Pydantic AI)."""
    return message.role == "user" and any(
        part.type != "tool-invocation" for part in message.content.parts
    )


def _split_turn(conversation: list[Message]) -> tuple[list[Message], list[Message]]:
    """(history, current turn): the turn starts at the last block of user messages."""
    last = next(
        (i for i in range(len(conversation) - 1, -1, -1) if _is_user_turn(conversation[i])), None
    )
    if last is None:
        return [], list(conversation)
    start = last
    while start > 0 and _is_user_turn(conversation[start - 1]):
        start -= 1
    return conversation[:start], conversation[start:]


def _user_block(turn: list[Message]) -> int:
    """How many messages the user typed at the start of a turn (before its tool steps)."""
    return next((i for i, m in enumerate(turn) if not _is_user_turn(m)), len(turn))


def _run_input(system: list[str], conversation: list[Message]) -> tuple[RunInput, list[Message]]:
    """The run input (system prompt, the user's messages of the current turn, the history
    before them) and the current turn's steps after the user's messages.

    Those steps (tool calls and the results sent back) are the run's own work, not something the
    user said: an LLM call puts them at the head of its trajectory, an agent (whose input was a
    handoff's history) in its history. History is joined (a tool result on its call) the way
    Mastra keeps memory, so no scorer reads a result apart from the call it answers.
    """
    history, current = _split_turn(conversation)
    block = _user_block(current)
    run_input = RunInput(
        input_messages=current[:block],
        remembered_messages=_joined(history),
        system_messages=[SystemMessage(content=text) for text in system],
    )
    return run_input, current[block:]


def _joined(messages: list[Message]) -> list[Message]:
    """Messages with every tool result moved onto the assistant's call it answers.

    A message that only carried results (role ``tool``, or ``user`` in Pydantic AI format 5)
    disappears once all of them found their call; results that answer no call stay where they
    were.
    """
    if not any(_only_results(m) for m in messages):
        return messages
    trajectory = _Trajectory()
    spans: list[tuple[Message, int, int] | Message] = []
    for message in messages:
        if message.role == "assistant":
            start = len(trajectory.parts)
            trajectory.add_parts(message.content.parts)
            spans.append((message, start, len(trajectory.parts)))
        elif _only_results(message):
            left = [part for part in message.content.parts if not trajectory.join_result(part)]
            if left:
                spans.append(build_message(message.id, message.role, left, message.created_at,
                                           message.content.metadata))
        else:
            spans.append(message)
    joined: list[Message] = []
    for item in spans:
        if isinstance(item, Message):
            joined.append(item)
        else:
            message, start, end = item
            joined.append(build_message(message.id, message.role, trajectory.parts[start:end],
                                        message.created_at, message.content.metadata))
    return joined


def _only_results(message: Message) -> bool:
    """A message that carries tool results and nothing else."""
    parts = message.content.parts
    return message.role in ("tool", "user") and bool(parts) and all(
        p.tool_invocation is not None and p.tool_invocation.state in _RESOLVED for p in parts
    )


def _base_run(trace: Trace, node: _Node, kind: str) -> AgentRun:
    span, info = node.span, node.info
    agent_name = info.agent_name
    if agent_name is None:
        agent_name = next(
            (a.info.agent_name or a.info.name for a in node.ancestors() if a.kind == "agent"), None
        )
    return AgentRun(
        trace_id=trace.trace_id,
        span_id=span.span_id,
        kind=kind,
        convention=info.convention,
        agent_name=agent_name,
        service_name=span.service_name,
        model=info.model,
        provider=info.provider,
        start_time=timestamp(span.start_time_ns),
        end_time=timestamp(span.end_time_ns),
        status=info.status,
        error=info.error,
        span_ids=[span.span_id],
        attributes=span.attributes,  # validation copies them into the run
        resource_attributes=span.resource.attributes,
        warnings=_warnings(node),
    )


def _warnings(node: _Node) -> list[str]:
    return [f"span {node.span.span_id} ({node.span.name}): {w}" for w in node.info.warnings]


def _tool_result_documents(invocations: Iterable[ToolInvocation]) -> list[ContextDocument]:
    return [
        ContextDocument(
            content=json_text(inv.result),
            source=inv.tool_name or None,
            kind="tool_result",
            metadata={"tool_call_id": inv.tool_call_id} if inv.tool_call_id else {},
        )
        for inv in invocations
        if inv.state == "result" and inv.result is not None
    ]


def _merge_tools(groups: Iterable[list[ToolDefinition]]) -> list[ToolDefinition]:
    """Tool definitions by name; a bare name (Mastra) is upgraded by a fuller definition."""
    merged: dict[str, ToolDefinition] = {}
    for group in groups:
        for tool in group:
            known = merged.get(tool.name)
            if known is None or (known.parameters is None and tool.parameters is not None):
                merged[tool.name] = tool
    return list(merged.values())


def _sum_usage(nodes: Iterable[_Node]) -> TokenUsage | None:
    usages = [n.info.usage for n in nodes if n.info.usage is not None]
    return TokenUsage.total_of(usages) if usages else None


# --- agent runs ------------------------------------------------------------------------------


_Queue = list[tuple[int, ToolInvocation]]
"""Calls by the order they were added in (a heap): the first one still pending is looked for."""


def _first_pending(queue: _Queue, still: Callable[[ToolInvocation], bool]) -> ToolInvocation | None:
    """The earliest call of ``queue`` still pending (and ``still`` true of it). Calls that are
    not are dropped on the way: a call once answered (or given an id) never goes back."""
    while queue and (queue[0][1].state in _RESOLVED or not still(queue[0][1])):
        heapq.heappop(queue)
    return queue[0][1] if queue else None


class _Trajectory:
    """The agent's steps as one assistant message's parts, tool calls joined to their results.

    A result is matched to the first pending call of its name: the pending calls are kept in
    queues by name, each answered call dropped once, so a trace of n tool calls is joined in
    about n steps, not n² (a 20,000-span trace scanned every earlier call for each result).
    """

    def __init__(self) -> None:
        self.parts: list[MessagePart] = []
        self.calls: list[ToolInvocation] = []
        self.agent_span_ids: list[str] = []
        self.by_id: dict[str, list[ToolInvocation]] = {}
        self._order: dict[int, int] = {}  # id(call) -> its place in ``calls``
        self._unanswered: deque[ToolInvocation] = deque()
        self._named: dict[str, _Queue] = {}
        self._named_without_id: dict[str, _Queue] = {}

    def _match(self, result: ToolInvocation) -> ToolInvocation | None:
        """The call a result answers: same id, else the first pending call of that name (one
        without an id if the result has one), else for a result with neither the first
        pending call."""
        same_id = self.by_id.get(result.tool_call_id) if result.tool_call_id else None
        if same_id:
            # Some providers reuse ids across steps ("call_0"): the open call is the one meant.
            return next((c for c in same_id if c.state not in _RESOLVED), same_id[0])
        if result.tool_name:
            if result.tool_call_id:
                queue = self._named_without_id.get(result.tool_name, [])
                return _first_pending(queue, lambda call: not call.tool_call_id)
            return _first_pending(self._named.get(result.tool_name, []), lambda call: True)
        if result.tool_call_id:
            return None
        while self._unanswered and self._unanswered[0].state in _RESOLVED:
            self._unanswered.popleft()
        return self._unanswered[0] if self._unanswered else None

    def _queue_by_name(self, call: ToolInvocation) -> None:
        if not call.tool_name:
            return
        entry = (self._order[id(call)], call)
        heapq.heappush(self._named.setdefault(call.tool_name, []), entry)
        if not call.tool_call_id:
            heapq.heappush(self._named_without_id.setdefault(call.tool_name, []), entry)

    def answers_pending_call(self, result: ToolInvocation) -> bool:
        call = self._match(result)
        return call is not None and call.state not in _RESOLVED

    def add_parts(
        self, parts: list[MessagePart], answered: Mapping[str, AnsweredCall] | None = None
    ) -> None:
        """A step's output parts: reasoning first, then calls and text in the model's order.

        Parts are copied: a span's messages feed several runs (and other runs' readers look
        for results among them), so joining a result must never change them. A call found in
        ``answered`` (its agent's run, already joined to its outcome) is shared instead: it is
        never changed again, since a result only fills a pending call.
        """
        if len(parts) > 1 and any(p.type == "reasoning" for p in parts):
            parts = sorted(parts, key=lambda p: p.type != "reasoning")
        for part in parts:
            invocation = part.tool_invocation
            if invocation is None:
                self.parts.append(part.model_copy())
            elif invocation.state in _RESOLVED:
                self.add_result(invocation)
            elif answered and (shared := answered.get(invocation.tool_call_id)) is not None:
                self._add_call(*shared)
            else:
                self._add_call(invocation.model_copy())

    def _add_call(self, call: ToolInvocation, part: MessagePart | None = None) -> None:
        self._order[id(call)] = len(self.calls)
        self.calls.append(call)
        if call.state not in _RESOLVED:
            self._unanswered.append(call)
            self._queue_by_name(call)
        if call.tool_call_id:
            self.by_id.setdefault(call.tool_call_id, []).append(call)
        self.parts.append(part or MessagePart(type="tool-invocation", tool_invocation=call))

    def add_result(self, result: ToolInvocation) -> None:
        """A tool's outcome: fills the call it answers, or records a call no LLM output showed."""
        call = self._match(result)
        if call is None:
            self._add_call(result.model_copy())
        elif call.state not in _RESOLVED:  # else already answered (tool span and output both)
            self._fill(call, result)

    def _fill(self, call: ToolInvocation, result: ToolInvocation) -> None:
        """The result's outcome onto its call (fields that do not change are not set: a
        model's attribute assignment is not free, and long conversations join thousands)."""
        call.result = result.result
        call.state = result.state if result.state in _RESOLVED else "call"
        if call.is_error is not result.is_error:
            call.is_error = result.is_error
        if call.error_text != result.error_text:
            call.error_text = result.error_text
        if not call.tool_name and result.tool_name:
            call.tool_name = result.tool_name
            if call.state not in _RESOLVED:  # still pending: now found by its name too
                self._queue_by_name(call)
        if not call.tool_call_id and result.tool_call_id:
            call.tool_call_id = result.tool_call_id
            self.by_id.setdefault(call.tool_call_id, []).append(call)
        if call.args in (None, {}, "") and result.args not in (None, {}, ""):
            call.args = result.args

    def join_result(self, part: MessagePart) -> bool:
        """A result part sent back to the LLM onto the pending call it answers; False when it
        is no result or answers no pending call."""
        result = part.tool_invocation
        if result is None or result.state not in _RESOLVED:
            return False
        call = self._match(result)
        if call is None or call.state in _RESOLVED:
            return False
        self._fill(call, result)
        return True

    def resolve_from_messages(self, messages: Iterable[Message]) -> None:
        """Results the LLM was sent back (when no tool span ran the tool), for pending calls."""
        for message in messages:
            for part in message.content.parts:
                self.join_result(part)

    def has_text(self) -> bool:
        return any(part.type == "text" and part.text for part in self.parts)


def _tool_outcome(node: _Node) -> ToolInvocation:
    """What a tool span returned."""
    if node.info.tool_call is not None:
        return node.info.tool_call
    return ToolInvocation(tool_call_id="", tool_name=node.info.name, state="call")


def _agent_outcome(run: AgentRun) -> ToolInvocation:
    """A nested agent's run seen as the tool call that invoked it: its question and answer."""
    answer = run.output[0].content.content if run.output else None
    return executed_call(
        "",
        run.agent_name or "",
        _conversation_text(run.input.input_messages),
        answer,
        failed=run.status == "error",
        error=run.error,
    )


def _final_text(messages: list[Message]) -> str:
    texts = [message_text(m) for m in messages if m.role == "assistant"]
    return next((t for t in reversed(texts) if t), "")


def _conversation_text(messages: list[Message]) -> str:
    return "\n".join(t for t in (message_text(m) for m in messages if _is_user_turn(m)) if t)


def _last_text(parts: list[MessagePart]) -> str:
    return next((p.text for p in reversed(parts) if p.type == "text" and p.text), "")


def _under_tool(node: _Node, root: _Node) -> bool:
    """Whether a span sits below a tool span of the same run (a tool's own traced sub-tools)."""
    for ancestor in node.ancestors():
        if ancestor is root:
            return False
        if ancestor.kind == "tool":
            return True
    return False


def _agent_run(
    trace: Trace, node: _Node, built: dict[str, AgentRun], handed: dict[str, int]
) -> AgentRun:
    """The agent's run; nested agents' runs are built first (and kept in ``built``).

    ``handed`` gets, per agent, how many messages after the user's turn it was handed (another
    agent's handoff): its LLM runs read those as history too, not as their own steps.
    """
    if node.span.span_id in built:
        return built[node.span.span_id]
    run = _base_run(trace, node, "agent")
    run.agent_name = node.info.agent_name or node.info.name
    info = node.info
    members, nested = _scope(node)
    steps = [m for m in members if m.kind == "llm" and not m.has_llm_below]
    tools = [m for m in members if m.kind == "tool" and not _under_tool(m, node)]

    sub_runs = [_agent_run(trace, agent, built, handed) for agent in nested]
    # A wrapper that only runs agents (openai-agents' ``Agent workflow``, a workflow of agents)
    # stays in the tree, but it is not an agent of its own: scoring it would score its agents'
    # work twice, and judge its "tool calls" (the agents) against the real tools.
    run.primary = bool(steps or tools or not sub_runs)

    first_input = next((s.info for s in steps if s.info.input_messages), None)
    system = info.system or next((s.info.system for s in steps if s.info.system), [])
    run.input, handed_over = _run_input(
        system, first_input.input_messages if first_input else info.input_messages
    )
    if handed_over:  # what followed the user's messages when this agent started (a handoff)
        handed[node.span.span_id] = len(handed_over)
        run.input.remembered_messages = _joined(
            [*run.input.remembered_messages, *handed_over]
        )
    if not steps and sub_runs and not run.input.input_messages:
        # A workflow-like agent that only delegates: its question is its first agent's.
        run.input = sub_runs[0].input.model_copy()
    trajectory = _trajectory(info, steps, tools, list(zip(nested, sub_runs, strict=True)))
    final = (
        _final_text([s.info.output_messages[-1] for s in steps if s.info.output_messages][-1:])
        or _final_text(info.output_messages)
        or _last_text(trajectory.parts)
        or next((r.output[0].content.content for r in reversed(sub_runs)
                 if not steps and r.output and r.output[0].content.content), "")
    )
    run.output = _output(node, trajectory, final)

    run.model = run.model or next((s.info.model for s in steps if s.info.model), None)
    run.provider = run.provider or next((s.info.provider for s in steps if s.info.provider), None)
    run.tools = _merge_tools([info.tools, *(s.info.tools for s in steps)])
    run.context = _tool_result_documents(trajectory.calls) + [
        doc for member in members for doc in member.info.documents
    ]
    leaves = [n for n in _subtree(node) if n.kind == "llm" and not n.has_llm_below]
    run.usage = _sum_usage(leaves) or info.usage or TokenUsage()
    run.span_ids.extend(m.span.span_id for m in members)
    run.span_ids.extend(trajectory.agent_span_ids)
    for member in members:
        run.warnings.extend(_warnings(member))
    built[node.span.span_id] = run
    return run


def _output(node: _Node, trajectory: _Trajectory, final: str) -> list[Message]:
    """The run's single assistant message: every step's parts; ``content`` = the final answer."""
    if final and not trajectory.has_text():
        trajectory.parts.append(text_part(final))
    if not trajectory.parts:
        return []
    message = build_message(
        f"{node.span.span_id}-output",
        "assistant",
        trajectory.parts,
        timestamp(node.span.end_time_ns),
    )
    message.content.content = final or None
    return [message]


def _trajectory(
    info: SpanInfo,
    steps: list[_Node],
    tools: list[_Node],
    nested: list[tuple[_Node, AgentRun]],
) -> _Trajectory:
    """The agent's steps in time order, with every tool call joined to its outcome.

    A nested agent joins the trajectory as the answer to the call its parent's LLM made; a
    parent with no LLM steps of its own (a workflow of agents) shows each agent as a call.
    """
    trajectory = _Trajectory()
    sub_runs = {id(agent): sub_run for agent, sub_run in nested}
    events = steps + tools + [agent for agent, _ in nested]
    for event in sorted(events, key=lambda n: n.span.start_time_ns):
        if event.kind == "llm":
            for message in event.info.output_messages:
                trajectory.add_parts(message.content.parts)
        elif event.kind == "tool":
            trajectory.add_result(_tool_outcome(event))
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
        _, current = _split_turn(step.info.input_messages)
        trajectory.resolve_from_messages(current)
    return trajectory


# --- LLM and tool runs -----------------------------------------------------------------------


@dataclass(eq=False)
class _Known:
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
                if (call := part.tool_invocation) is not None and call.tool_call_id
                and call.state in _RESOLVED
            }
            self._answered[agent_span_id] = found
        return found


def _failed_calls(nodes: list[_Node]) -> dict[str, ToolInvocation]:
    """Tool spans that failed, by call id. The message an LLM is sent back may not say so
    (LangChain's flattened tool message drops ``status: error``): the tool span does."""
    return {
        call.tool_call_id: call
        for node in nodes
        if node.kind == "tool" and (call := node.info.tool_call) is not None
        and call.tool_call_id and call.state == "output-error"
    }


def _outermost_llm(node: _Node) -> bool:
    """An LLM call with no agent or LLM span above it stands for the agent (raw clients)."""
    return not any(a.kind in ("agent", "llm") for a in node.ancestors())


def _llm_run(trace: Trace, node: _Node, known: _Known) -> AgentRun:
    run = _base_run(trace, node, "llm")
    info = node.info
    run.primary = _outermost_llm(node)
    run.input, earlier_steps = _run_input(info.system, info.input_messages)
    current = [*run.input.input_messages, *earlier_steps]  # the whole turn it was sent
    agent = next((a for a in node.ancestors() if a.kind == "agent"), None)
    before = known.handed.get(agent.span.span_id, 0) if agent is not None else 0
    answered = known.answered(agent.span.span_id) if agent is not None else None
    if before:  # steps of the agent that handed over: history here too
        run.input.remembered_messages = _joined(
            [*run.input.remembered_messages, *earlier_steps[:before]]
        )
        earlier_steps = earlier_steps[before:]
    trajectory = _Trajectory()
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
    run.output = _output(node, trajectory, _final_text(info.output_messages))
    run.tools = list(info.tools)
    results = [
        part.tool_invocation
        for message in current
        for part in message.content.parts
        if part.tool_invocation is not None and part.tool_invocation.state in _RESOLVED
        and part.tool_invocation.tool_call_id not in failed  # a failure is no grounding
    ]
    run.context = _tool_result_documents(results) + list(info.documents)
    leaves = [n for n in _subtree(node) if n.kind == "llm" and not n.has_llm_below]
    run.usage = info.usage or _sum_usage(leaves) or TokenUsage()
    return run


def _tool_run(trace: Trace, node: _Node) -> AgentRun:
    run = _base_run(trace, node, "tool")
    invocation = _tool_outcome(node)
    args = invocation.args
    run.input = RunInput(
        input_messages=[
            build_message(
                f"{node.span.span_id}-args",
                "user",
                [text_part(json_text(args))] if args not in (None, "", {}) else [],
                timestamp(node.span.start_time_ns),
            )
        ]
    )
    part = MessagePart(type="tool-invocation", tool_invocation=invocation)
    message = build_message(
        f"{node.span.span_id}-output", "assistant", [part], timestamp(node.span.end_time_ns)
    )
    if invocation.result is not None:
        message.content.content = json_text(invocation.result)
    run.output = [message]
    run.context = _tool_result_documents([invocation])
    return run
