"""The lines extraction executes to rebuild a wide agent trace, counted in a process of its own.

Run as ``python -m tests.support.extract_lines STEPS calls|results``: it prints the count, the
runs built and the agent's tool results as JSON. The count uses ``sys.settrace``, which slows
every line a hundredfold; in a pytest process that had run other tests (their idle threads and
pools) a run once sat for minutes where it takes a second, so it runs apart, under a timeout.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import orjson

from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.spans import Resource, Scope, Span, Trace

TRACE_ID = "cd" * 16
START = 1_700_000_000_000_000_000


def step_span(
    trace_id: str,
    index: int,
    name: str,
    attributes: dict[str, Any],
    parent: str | None,
    resource: Resource,
    scope: Scope,
) -> Span:
    """The span at ``index`` of a synthetic trace: spans a millisecond apart, each 0.9 ms long,
    ids numbered from 1 (``benchmarks/extract.py`` builds its long trace with it too)."""
    begin = START + index * 1_000_000
    return Span(
        trace_id,
        f"{index + 1:016x}",
        parent,
        name,
        1,
        begin,
        begin + 900_000,
        attributes,
        resource,
        scope,
    )


def wide_trace(steps: int, *, calls: bool) -> Trace:
    """One agent with ``steps`` chat steps, each followed by a ``get_weather`` tool span (no
    call ids: results are matched by name). With ``calls`` each chat step asks for the call;
    without, it only says something and the tool span is a call no output showed."""
    resource, scope = Resource({"service.name": "wide"}), Scope("test")

    def span(index: int, name: str, attributes: dict[str, Any], parent: str | None) -> Span:
        return step_span(TRACE_ID, index, name, attributes, parent, resource, scope)

    agent = span(
        0,
        "invoke_agent Wide",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Wide"},
        None,
    )
    spans = [agent]
    for step in range(steps):
        part = (
            {"type": "tool_call", "name": "get_weather", "arguments": {"step": step}}
            if calls
            else {"type": "text", "content": f"step {step}"}
        )
        spans.append(
            span(
                len(spans),
                "chat m",
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m",
                    "gen_ai.output.messages": orjson.dumps(
                        [{"role": "assistant", "parts": [part]}]
                    ).decode(),
                },
                agent.span_id,
            )
        )
        spans.append(
            span(
                len(spans),
                "execute_tool get_weather",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.result": f"sunny {step}",
                },
                agent.span_id,
            )
        )
    return Trace(TRACE_ID, spans)


def lines_run(trace: Trace) -> tuple[int, list[AgentRun]]:
    """The runs of ``trace`` and how many lines of tracescore's extraction ran to build them."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if "tracescore/extract" not in frame.f_code.co_filename:
            return None  # not into pydantic, json...: only extraction's own lines
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        runs = extract_runs(trace)
    finally:
        sys.settrace(None)
    return count, runs


def tool_results(run: AgentRun) -> Iterator[Any]:
    for message in run.output:
        for part in message.content.parts:
            if part.tool_invocation is not None:
                yield part.tool_invocation.result


if __name__ == "__main__":
    steps, kind = int(sys.argv[1]), sys.argv[2]
    count, runs = lines_run(wide_trace(steps, calls=kind == "calls"))
    agent = next(run for run in runs if run.kind == "agent")
    results = list(tool_results(agent))
    print(orjson.dumps({"lines": count, "runs": len(runs), "results": results}).decode())
