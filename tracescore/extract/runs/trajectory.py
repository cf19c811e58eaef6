"""An agent's steps as one assistant message, every tool call joined to its outcome.

Tool calls the LLMs made are joined with the tool spans that ran them (by id, or by name and order
when the convention records no id), or else with the tool results the next LLM call was sent.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping

from tracescore.extract.model import Message, MessagePart, ToolInvocation

RESOLVED = frozenset({"result", "output-error", "output-denied"})
AnsweredCall = tuple[ToolInvocation, MessagePart]
"""A tool call an agent run already joined to its outcome, and the message part holding it."""


@functools.lru_cache(maxsize=1024)
def _name_key(name: str) -> str:
    """A tool name as results are matched by it: case and separators folded, so the tool span
    ``get_weather`` answers the call ``GetWeather`` (Instructor names the model's call after its
    response model, and the user's ``@tool`` function after itself)."""
    return _SEPARATORS.sub("", name).casefold()


_SEPARATORS = re.compile(r"[\s_\-.]+")

_Queue = list[tuple[int, ToolInvocation]]
"""Calls by the order they were added in (a heap): the first one still pending is looked for."""


def _first_pending(queue: _Queue, still: Callable[[ToolInvocation], bool]) -> ToolInvocation | None:
    """The earliest call of ``queue`` still pending (and ``still`` true of it). Calls that are
    not are dropped on the way: a call once answered (or given an id) never goes back."""
    while queue and (queue[0][1].state in RESOLVED or not still(queue[0][1])):
        heapq.heappop(queue)
    return queue[0][1] if queue else None


class Trajectory:
    """The agent's steps as one assistant message's parts, tool calls joined to their results.

    A result is matched to the first pending call of its name (case and separators folded): the pending calls are kept in
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
            return next((c for c in same_id if c.state not in RESOLVED), same_id[0])
        if result.tool_name:
            if result.tool_call_id:
                queue = self._named_without_id.get(_name_key(result.tool_name), [])
                return _first_pending(queue, lambda call: not call.tool_call_id)
            return _first_pending(
                self._named.get(_name_key(result.tool_name), []), lambda call: True
            )
        if result.tool_call_id:
            return None
        while self._unanswered and self._unanswered[0].state in RESOLVED:
            self._unanswered.popleft()
        return self._unanswered[0] if self._unanswered else None

    def _queue_by_name(self, call: ToolInvocation) -> None:
        if not call.tool_name:
            return
        entry = (self._order[id(call)], call)
        key = _name_key(call.tool_name)
        heapq.heappush(self._named.setdefault(key, []), entry)
        if not call.tool_call_id:
            heapq.heappush(self._named_without_id.setdefault(key, []), entry)

    def answers_pending_call(self, result: ToolInvocation) -> bool:
        call = self._match(result)
        return call is not None and call.state not in RESOLVED

    def add_parts(
        self, parts: list[MessagePart], answered: Mapping[str, AnsweredCall] | None = None
    ) -> None:
        """A step's output parts: reasoning first, then calls and text in the model's order.

        Calls are copied: a span's messages feed several runs (and other runs' readers look
        for results among them), so joining a result must never change them. Other parts
        are shared: nothing changes a part once built. A call found in
        ``answered`` (its agent's run, already joined to its outcome) is shared instead: it is
        never changed again, since a result only fills a pending call.
        """
        if len(parts) > 1 and any(p.type == "reasoning" for p in parts):
            parts = sorted(parts, key=lambda p: p.type != "reasoning")
        for part in parts:
            invocation = part.tool_invocation
            if invocation is None:
                self.parts.append(part)
            elif invocation.state in RESOLVED:
                self.add_result(invocation)
            elif answered and (shared := answered.get(invocation.tool_call_id)) is not None:
                self._add_call(*shared)
            else:
                self._add_call(invocation.copied())

    def _add_call(self, call: ToolInvocation, part: MessagePart | None = None) -> None:
        self._order[id(call)] = len(self.calls)
        self.calls.append(call)
        if call.state not in RESOLVED:
            self._unanswered.append(call)
            self._queue_by_name(call)
        if call.tool_call_id:
            self.by_id.setdefault(call.tool_call_id, []).append(call)
        self.parts.append(part or MessagePart(type="tool-invocation", tool_invocation=call))

    def add_result(self, result: ToolInvocation) -> None:
        """A tool's outcome: fills the call it answers, or records a call no LLM output showed."""
        call = self._match(result)
        if call is None:
            self._add_call(result.copied())
        elif call.state not in RESOLVED:  # else already answered (tool span and output both)
            self._fill(call, result)

    def _fill(self, call: ToolInvocation, result: ToolInvocation) -> None:
        """The result's outcome onto its call (fields that do not change are not set: a
        model's attribute assignment is not free, and long conversations join thousands)."""
        call.result = result.result
        call.state = result.state if result.state in RESOLVED else "call"
        if call.is_error is not result.is_error:
            call.is_error = result.is_error
        if call.error_text != result.error_text:
            call.error_text = result.error_text
        if not call.tool_name and result.tool_name:
            call.tool_name = result.tool_name
            if call.state not in RESOLVED:  # still pending: now found by its name too
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
        if result is None or result.state not in RESOLVED:
            return False
        call = self._match(result)
        if call is None or call.state in RESOLVED:
            return False
        self._fill(call, result)
        return True

    def resolve_from_messages(self, messages: Iterable[Message]) -> None:
        """Results the LLM was sent back (when no tool span ran the tool), for pending calls.

        A call whose step recorded no id (LiteLLM's ``gen_ai.completion.N.function_call.*``)
        learns it from the call as a later step was sent it (same tool and arguments, with its
        id): the results sent after it name only the id."""
        for message in messages:
            for part in message.content.parts:
                if not self.join_result(part) and message.role == "assistant":
                    self._learn_id(part.tool_invocation)

    def _learn_id(self, sent: ToolInvocation | None) -> None:
        if (
            sent is None
            or not sent.tool_call_id
            or not sent.tool_name
            or sent.tool_call_id in self.by_id
        ):
            return
        queue = self._named_without_id.get(_name_key(sent.tool_name), [])
        call = _first_pending(queue, lambda c: not c.tool_call_id)
        if call is not None and call.args in (sent.args, None, {}, ""):
            call.tool_call_id = sent.tool_call_id
            self.by_id.setdefault(sent.tool_call_id, []).append(call)

    def has_text(self) -> bool:
        return any(part.type == "text" and part.text for part in self.parts)
