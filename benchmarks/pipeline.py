"""Span end → code score stored: latency of the live pipeline under a sustained load.

Starts ``tracescore serve`` (SQLite by default, ``--db`` for PostgreSQL) with its default code
scorers, sends GenAI-convention agent traces (agent → chat, tool, chat) at a steady rate, and
measures for every score the time from the agent span's end to the score's row being written.
The goal is the idle window plus less than one second at p95.

    python benchmarks/pipeline.py --rate 20 --seconds 30 --idle-timeout 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.server_process import start_server  # noqa: E402

SYSTEM = json.dumps([{"type": "text", "content": "You are WeatherBot, a concise weather assistant."}])
USER = {"role": "user", "parts": [{"type": "text", "content": "What's the weather like in Paris?"}]}
CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
ANSWER = {
    "role": "assistant",
    "parts": [{"type": "text", "content": "It is sunny in Paris today, about 21 degrees Celsius."}],
}


def _attrs(values: dict[str, object]) -> list[KeyValue]:
    out = []
    for key, value in values.items():
        any_value = AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=str(value))
        out.append(KeyValue(key=key, value=any_value))
    return out


def agent_trace(end_ns: int) -> tuple[bytes, str]:
    """One agent trace ending at ``end_ns``, as an OTLP protobuf body, and its trace id."""
    trace_id = os.urandom(16)
    agent_id, chat1, tool, chat2 = (os.urandom(8) for _ in range(4))
    start = end_ns - 900_000_000

    def span(span_id: bytes, parent: bytes, name: str, offset_ms: int, dur_ms: int, **attrs: object) -> Span:
        return Span(
            trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=name, kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start + offset_ms * 1_000_000,
            end_time_unix_nano=start + (offset_ms + dur_ms) * 1_000_000, attributes=_attrs(attrs),
        )

    spans = [
        span(chat1, agent_id, "chat gpt-4o-mini", 10, 300, **{
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps([USER]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [CALL]}]),
            "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 20}),
        span(tool, agent_id, "execute_tool get_weather", 320, 50, **{
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": '{"city": "Paris"}',
            "gen_ai.tool.call.result": '{"forecast": "sunny", "temperature_c": 21}'}),
        span(chat2, agent_id, "chat gpt-4o-mini", 380, 500, **{
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.output.messages": json.dumps([ANSWER]),
            "gen_ai.usage.input_tokens": 180, "gen_ai.usage.output_tokens": 30}),
        span(agent_id, b"", "invoke_agent WeatherBot", 0, 900, **{
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "WeatherBot",
            "gen_ai.system_instructions": SYSTEM, "gen_ai.input.messages": json.dumps([USER]),
            "gen_ai.output.messages": json.dumps([ANSWER])}),
    ]  # fmt: skip
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource={"attributes": _attrs({"service.name": "bench-agent"})},
                scope_spans=[ScopeSpans(spans=spans)],
            )
        ]
    )
    return request.SerializeToString(), trace_id.hex()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=20.0, help="agent traces per second")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to send")
    parser.add_argument("--idle-timeout", type=float, default=1.0)
    parser.add_argument("--db", help="database URL (default: a SQLite file in a temp dir)")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="tracescore-bench-pipeline-"))
    config = {"workers": {"poll_interval": 0.05}}
    ends: dict[str, float] = {}
    with start_server(workdir, db_url=args.db, config=config, idle_timeout=args.idle_timeout) as server:
        client = httpx.Client(base_url=server.base_url, timeout=30)
        interval = 1.0 / args.rate
        started = time.time()
        next_send = started
        while time.time() - started < args.seconds:
            end_ns = time.time_ns()
            body, trace_id = agent_trace(end_ns)
            response = client.post("/v1/traces", content=body,
                                   headers={"Content-Type": "application/x-protobuf"})
            response.raise_for_status()
            ends[trace_id] = end_ns / 1e9
            next_send += interval
            time.sleep(max(0.0, next_send - time.time()))
        engine = create_engine(server.db_url)
        deadline = time.time() + args.idle_timeout + 30
        rows: list = []
        while time.time() < deadline:
            with engine.connect() as connection:
                rows = connection.execute(text(
                    "SELECT trace_id, MAX(created_at) FROM scores GROUP BY trace_id")).all()
            if len(rows) >= len(ends):
                break
            time.sleep(0.25)
        engine.dispose()

    latencies = []
    for trace_id, created in rows:
        if isinstance(created, str):  # SQLite hands back text
            created = datetime.fromisoformat(created)
        if created.tzinfo is None:
            created = created.replace(tzinfo=timezone.utc)
        latencies.append(created.timestamp() - ends[trace_id])
    sent = len(ends)
    print(f"traces sent: {sent} at {args.rate:g}/s for {args.seconds:g} s "
          f"({sent * 4 / args.seconds:.0f} spans/s); traces scored: {len(latencies)}")
    if latencies:
        over = [value - args.idle_timeout for value in latencies]
        print(f"span end -> scores stored: p50 {percentile(latencies, .5):.3f} s, "
              f"p95 {percentile(latencies, .95):.3f} s, max {max(latencies):.3f} s "
              f"(idle window {args.idle_timeout:g} s)")
        print(f"beyond the idle window: p50 {percentile(over, .5):.3f} s, p95 {percentile(over, .95):.3f} s, "
              f"mean {statistics.fmean(over):.3f} s")


if __name__ == "__main__":
    main()
