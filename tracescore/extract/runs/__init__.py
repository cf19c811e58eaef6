"""Turn a trace into scorable runs, knowing nothing of any span convention.

Convention modules read each span into a :class:`SpanInfo` (kind ``agent``, ``llm``, ``tool``,
``retrieval`` or ``other``, plus neutral messages and facts). This package only walks the tree of
those infos (:mod:`.tree`):

* every agent span becomes an agent run whose trajectory is the LLM and tool spans beneath it,
  down to (not into) nested agent spans, which become runs of their own (:mod:`.agent`);
* so does every hand-written loop: model calls no agent span claims, which what each call was
  sent links into one task (:mod:`.loops`); both are read into a scope (:mod:`.scope`) that
  one function turns into the run;
* every LLM span and every tool span also becomes a run, so configs can score those levels
  (:mod:`.llm`, :mod:`.tool`); the calls of a loop are steps of its run, not primary;
* tool calls the LLMs made are joined with the tool spans that ran them (by id, or by name and
  order when the convention records no id), or else with the tool results the next LLM call
  was sent (:mod:`.trajectory`).

The messages a run was sent are read as a turn by :mod:`.turns`; the fields every run fills
alike are :mod:`.fields`'. This module puts them together and filters the result.

Extraction never raises: a span that cannot be read leaves a warning on its run instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from tracescore.extract.base import Convention
from tracescore.extract.conversation_id import DEFAULT_ID_ATTRIBUTES, conversation_id
from tracescore.extract.model import AgentRun, SpanInfo
from tracescore.extract.registry import CONVENTIONS
from tracescore.extract.runs.agent import agent_run, scope_run
from tracescore.extract.runs.llm import Known, failed_calls, llm_run
from tracescore.extract.runs.loops import find_loops
from tracescore.extract.runs.tool import tool_run
from tracescore.extract.runs.tree import outermost_llm, span_tree
from tracescore.spans import Trace


def read_spans(trace: Trace, conventions: list[Convention] = CONVENTIONS) -> list[SpanInfo]:
    """One ``SpanInfo`` per span of the trace, each read by the convention that claims it."""
    with span_tree(trace, conventions) as nodes:
        return [node.info for node in nodes]


def build_runs(
    trace: Trace,
    conventions: list[Convention] = CONVENTIONS,
    *,
    only_primary: bool = False,
    conversation_attributes: Sequence[str] = DEFAULT_ID_ATTRIBUTES,
) -> list[AgentRun]:
    """All runs of a trace: agent runs first, then LLM runs, then tool runs (each by start time).

    With ``only_primary``, just the runs that stand for the trace's agent, exactly
    ``primary_runs(build_runs(trace))``, without building the others: the LLM runs inside an
    agent and every tool run (the live pipeline's default bindings score only these, and the
    rest was about a third of extraction's time). Every run carries the trace's conversation
    id, found by ``conversation_attributes`` (:mod:`tracescore.extract.conversation_id`).
    """
    return list(
        iter_runs(
            trace,
            conventions,
            only_primary=only_primary,
            conversation_attributes=conversation_attributes,
        )
    )


def iter_runs(
    trace: Trace,
    conventions: list[Convention] = CONVENTIONS,
    *,
    only_primary: bool = False,
    conversation_attributes: Sequence[str] = DEFAULT_ID_ATTRIBUTES,
) -> Iterator[AgentRun]:
    """:func:`build_runs`' runs one at a time, each built when it is asked for: a reader that
    keeps a run's JSON, a count or one run, not the run objects, holds one run at a time. The
    runs of a 20,000-span trace were 220 MB of objects at once, its spans 40 (docs/benchmarks.md,
    Reading one huge trace). Closing the iterator early (a reader that found its run) builds
    no more."""
    with span_tree(trace, conventions) as nodes:
        known = Known(failed=failed_calls(nodes))
        agents: list[AgentRun] = [
            agent_run(trace, node, known.agents, known.handed)
            for node in nodes
            if node.kind == "agent"
        ]
        loops = find_loops(nodes)
        built: Iterable[AgentRun] = itertools.chain(
            agents, (scope_run(trace, loop, known.agents, known.handed) for loop in loops)
        )
        in_loop = {id(step) for loop in loops for step in loop.members if step.kind == "llm"}
        if only_primary:
            built = itertools.chain(
                (run for run in built if run.primary),
                (
                    llm_run(trace, node, known)
                    for node in nodes
                    if node.kind == "llm" and outermost_llm(node) and id(node) not in in_loop
                ),
            )
        else:
            built = itertools.chain(
                built,
                (
                    llm_run(trace, node, known, in_loop=id(node) in in_loop)
                    for node in nodes
                    if node.kind == "llm"
                ),
                (tool_run(trace, node) for node in nodes if node.kind == "tool"),
            )
        conversation: str | None = None
        for count, run in enumerate(built):
            if count == 0:  # looked for once the trace has a run, as before runs were lazy
                conversation = conversation_id(trace.spans, conversation_attributes)
            if conversation is not None:
                run.conversation_id = conversation
            run.trace_cut = trace.cut_of(run.end_time)
            yield run


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
        run_document(run)
        for run in runs
        if (run.primary or not primary) and (not wanted or run.kind in wanted)
    ]


def run_document(run: AgentRun) -> dict[str, Any]:
    """One run's JSON document, as :func:`select_runs` returns each."""
    return run.model_dump(mode="json", by_alias=True, exclude_none=True)
