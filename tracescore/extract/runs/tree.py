"""The trace's spans read and linked into a tree, and the walks the run builders take over it.

Parent links come from span ids a client chose: duplicates are dropped and links that loop are
cut, so every walk up or down ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tracescore.extract.base import Convention, new_info, safe_read, safe_refine
from tracescore.extract.model import SpanInfo
from tracescore.extract.registry import claimants, first_claimant
from tracescore.extract.twin_calls import drop_twin_calls
from tracescore.spans import Span, Trace


@dataclass(eq=False)
class SpanNode:
    """A span, what its convention read from it, and its links in the trace's tree."""

    span: Span
    info: SpanInfo
    parent: SpanNode | None = None
    children: list[SpanNode] = field(default_factory=list)
    has_llm_below: bool = False

    @property
    def kind(self) -> str:
        return self.info.kind

    def ancestors(self) -> Iterator[SpanNode]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


@contextmanager
def span_tree(trace: Trace, conventions: list[Convention]) -> Iterator[list[SpanNode]]:
    """The trace's tree (:func:`_linked_tree`) for the block, its links dropped after it.

    A parent and its children refer to each other, so a tree left as it is becomes cyclic
    garbage, with every span, message and part it reaches: about a hundred objects a trace that
    only the cyclic collector frees, a tenth of a scoring process's CPU spent traversing them.
    Unlinked, the tree is freed by reference counting as soon as nothing else holds it. A
    node's ``children`` list is replaced rather than emptied, in case a run kept it."""
    nodes = _linked_tree(trace, conventions)
    try:
        yield nodes
    finally:
        for node in nodes:
            node.parent = None
            node.children = []


def _linked_tree(trace: Trace, conventions: list[Convention]) -> list[SpanNode]:
    """The trace's spans read and linked, in start-time order (duplicates sent twice dropped)."""
    logs = trace.logs_by_span()
    nodes: dict[str, SpanNode] = {}
    claimed: dict[Convention, list[tuple[Span, SpanInfo]]] = {}
    order = tuple(conventions)
    by_scope: dict[str, tuple[Convention, ...]] = {}
    for span in sorted(trace.spans, key=lambda s: s.start_time_ns):
        if span.span_id in nodes:
            continue
        scope = span.scope.name
        if (offered := by_scope.get(scope)) is None:
            offered = by_scope[scope] = claimants(order, scope)
        convention = first_claimant(span, offered)
        if convention is None:
            info = new_info(span, "unknown")
        else:
            info = safe_read(convention, span, logs.get(span.span_id, []))
            claimed.setdefault(convention, []).append((span, info))
        nodes[span.span_id] = SpanNode(span, info)
    for convention, read in claimed.items():
        safe_refine(convention, read)
    if len(claimed) > 1:  # a twin is another library's copy
        drop_twin_calls(list(nodes.values()))
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


def _cut_cycles(nodes: Iterable[SpanNode]) -> None:
    """Break parent links that loop (corrupt or hostile ids), so every walk up ends. O(n)."""
    done: set[int] = set()
    for start in nodes:
        path: list[SpanNode] = []
        on_path: set[int] = set()
        node: SpanNode | None = start
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


def agent_scope(root: SpanNode) -> tuple[list[SpanNode], list[SpanNode]]:
    """The spans an agent run is made of, and the nested agents where its scope stops."""
    members: list[SpanNode] = []
    nested: list[SpanNode] = []
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


def subtree(root: SpanNode) -> Iterator[SpanNode]:
    stack = list(root.children)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def under_tool(node: SpanNode, root: SpanNode) -> bool:
    """Whether a span sits below a tool span of the same run (a tool's own traced sub-tools)."""
    for ancestor in node.ancestors():
        if ancestor is root:
            return False
        if ancestor.kind == "tool":
            return True
    return False


def outermost_llm(node: SpanNode) -> bool:
    """An LLM call with no agent or LLM span above it stands for the agent (raw clients)."""
    return not any(a.kind in ("agent", "llm") for a in node.ancestors())
