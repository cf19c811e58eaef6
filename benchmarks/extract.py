"""Run extraction speed: the real captures, and one long synthetic agent trace.

1. every capture in ``tests/fixtures/captures`` (all conventions), extracted ``--rounds`` times:
   traces and spans per second;
2. one agent trace with ``--steps`` chat calls and as many tool calls, each chat call sent the
   last 20 messages (so ~20 messages parsed per span): milliseconds per trace and per span;
3. the captures' primary runs as the scoring worker reads a batch, each trace alone and then
   linked across traces (:mod:`tracescore.extract.linked`: twins dropped, per-call loops joined,
   which extracts a joined loop's answering trace twice): traces per second of each.

Times are this thread's CPU time (``time.thread_time``), not the wall clock: on a machine shared
with other jobs the wall clock measures the others' load (the same code gave 240 and 1,900
traces/s minutes apart), CPU time far less so.

    python benchmarks/extract.py
    python benchmarks/extract.py --rounds 50 --steps 1000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.extract_lines import step_span  # noqa: E402
from tracescore.extract import extract_runs  # noqa: E402
from tracescore.extract.linked import CallLinks, read_linked  # noqa: E402
from tracescore.ingest.files import load_traces  # noqa: E402
from tracescore.spans import Resource, Scope, Span, Trace  # noqa: E402


def long_agent_trace(steps: int) -> Trace:
    resource, scope = Resource({"service.name": "bench"}), Scope("bench")

    def make(index: int, name: str, attributes: dict, parent: str | None) -> Span:
        return step_span("ab" * 16, index, name, attributes, parent, resource, scope)

    agent = make(
        0,
        "invoke_agent A",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "A"},
        None,
    )
    spans = [agent]
    history = [{"role": "user", "parts": [{"type": "text", "content": "Plan the trip"}]}]
    for step in range(steps):
        call = [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": f"c{step}",
                        "name": "search",
                        "arguments": {"q": step},
                    }
                ],
            }
        ]
        spans.append(
            make(
                len(spans),
                "chat m",
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m",
                    "gen_ai.usage.input_tokens": 100,
                    "gen_ai.usage.output_tokens": 10,
                    "gen_ai.input.messages": orjson.dumps(history[:1] + history[-19:]).decode(),
                    "gen_ai.output.messages": orjson.dumps(call).decode(),
                },
                agent.span_id,
            )
        )
        spans.append(
            make(
                len(spans),
                "execute_tool search",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.id": f"c{step}",
                    "gen_ai.tool.call.result": '{"hits": 3}',
                },
                agent.span_id,
            )
        )
        history += [
            *call,
            {
                "role": "tool",
                "parts": [
                    {"type": "tool_call_response", "id": f"c{step}", "response": {"hits": 3}}
                ],
            },
        ]
    return Trace("ab" * 16, spans)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()

    traces = load_traces([ROOT / "tests" / "fixtures" / "captures"])
    spans = sum(len(t.spans) for t in traces)
    timings = []
    for _ in range(args.rounds):
        began = time.thread_time()
        runs = sum(len(extract_runs(t)) for t in traces)
        timings.append(time.thread_time() - began)
    best, median = min(timings), statistics.median(timings)
    print(f"captures: {len(traces)} traces, {spans} spans, {runs} runs per round")
    print(
        f"  median {len(traces) / median:,.0f} traces/s, {spans / median:,.0f} spans/s "
        f"(best {len(traces) / best:,.0f} traces/s)"
    )

    trace = long_agent_trace(args.steps)
    timings = []
    for _ in range(3):
        began = time.thread_time()
        runs = len(extract_runs(trace))
        timings.append(time.thread_time() - began)
    median = statistics.median(timings)
    print(
        f"long agent: {len(trace.spans)} spans, {runs} runs: median {median * 1000:,.0f} ms "
        f"per trace, {median * 1e6 / len(trace.spans):,.0f} µs per span"
    )
    primary_batch(traces, args.rounds)


def primary_batch(traces: list[Trace], rounds: int) -> None:
    """The worker's pass over the captures as one batch: primary runs alone, then linked."""
    batch = {trace.trace_id: trace for trace in traces}

    def primary(trace: Trace) -> list:
        return extract_runs(trace, only_primary=True)

    for label, read in (
        ("alone", lambda: [primary(trace) for trace in traces]),
        ("linked", lambda: read_linked(batch, CallLinks(), primary, lambda _: {})),
    ):
        timings = []
        for _ in range(rounds):
            began = time.thread_time()
            read()
            timings.append(time.thread_time() - began)
        median = statistics.median(timings)
        print(f"primary runs, {label}: median {len(traces) / median:,.0f} traces/s")


if __name__ == "__main__":
    main()
