"""The live pipeline: latency under a steady load, and capacity (traces scored per second).

Starts ``tracescore serve`` (SQLite by default, ``--db`` for PostgreSQL) with its default code
scorers and sends GenAI-convention agent traces (agent → chat, tool, chat).

Latency (the default mode): traces at a steady ``--rate``; for every score, the time from the
agent span's end to the score's row being written. The goal is the idle window plus less than
one second at p95.

    python benchmarks/pipeline.py --rate 20 --seconds 30 --idle-timeout 1

Capacity (``--capacity N``): N traces sent as fast as ingest takes them, then the time until
every one is scored (its trace row ``scored``). Prints traces/s end to end, CPU seconds per
trace over all the service's processes, and their peak memory (RSS and PSS summed, sampled).
``--sampling`` sets every binding's sampling rate.

    python benchmarks/pipeline.py --capacity 20000
    python benchmarks/pipeline.py --capacity 20000 --sampling 0.1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from sqlalchemy import Engine, create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.ingest import MemorySampler, cpu_seconds, process_tree
from tests.server_process import start_server
from tracescore.config import DEFAULT_SCORERS

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
    spans, trace_id = agent_spans(end_ns)
    return export_body(spans), trace_id


def export_body(spans: list[Span]) -> bytes:
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource={"attributes": _attrs({"service.name": "bench-agent"})},
                scope_spans=[ScopeSpans(spans=spans)],
            )
        ]
    )
    return request.SerializeToString()


def agent_spans(end_ns: int) -> tuple[list[Span], str]:
    """The four spans of one agent trace ending at ``end_ns``, and its trace id."""
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
    return spans, trace_id.hex()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=20.0, help="agent traces per second")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to send")
    parser.add_argument("--idle-timeout", type=float, default=1.0)
    parser.add_argument("--db", help="database URL (default: a SQLite file in a temp dir)")
    parser.add_argument("--capacity", type=int, help="capacity mode: send this many traces at once")
    parser.add_argument("--sampling", type=float, default=1.0, help="every binding's sampling rate")
    parser.add_argument("--traces-per-request", type=int, default=25)
    parser.add_argument("--clients", type=int, default=4, help="concurrent senders")
    parser.add_argument("--config", type=Path, help="a YAML config to merge in (server, workers keys)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tracescore-bench-pipeline-"))
    config: dict[str, object] = {"workers": {"poll_interval": 0.05}}
    if args.sampling < 1.0:
        config["scorers"] = [
            {"name": name, "scorer": name, "sampling": {"rate": args.sampling}} for name in DEFAULT_SCORERS
        ]
    if args.config:
        for key, value in yaml.safe_load(args.config.read_text()).items():
            config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value  # type: ignore[dict-item]
    if args.capacity:
        capacity(args, workdir, config)
    else:
        latency(args, workdir, config)


def _scored_traces(engine: Engine) -> int:
    with engine.connect() as connection:
        return connection.execute(text("SELECT count(*) FROM traces WHERE state = 'scored'")).scalar_one()


def _cpu_by_role(pid: int) -> dict[str, float]:
    """CPU seconds so far of the service's processes, summed by what each is."""
    roles: dict[str, float] = {}
    for member in process_tree(pid):
        try:
            command = Path(f"/proc/{member}/cmdline").read_bytes()
            fields = Path(f"/proc/{member}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        role = ("unpacker" if b"tracescore.ingest.unpack" in command
                else "scoring" if b"tracescore.pipeline.process" in command else "service")  # fmt: skip
        roles[role] = roles.get(role, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return roles


def capacity(args: argparse.Namespace, workdir: Path, config: dict[str, object]) -> None:
    now = time.time_ns()
    traces = [agent_spans(now - n * 1000)[0] for n in range(args.capacity)]
    bodies = [
        export_body([span for spans in traces[start : start + args.traces_per_request] for span in spans])
        for start in range(0, len(traces), args.traces_per_request)
    ]
    with start_server(workdir, db_url=args.db, config=config, idle_timeout=args.idle_timeout) as server:
        engine = create_engine(server.db_url)
        pid = server.process.pid
        time.sleep(2.0)  # the scorers' warm-up (lexicons) is start-up, not capacity
        memory = MemorySampler(pid)
        memory.start()
        cpu_before = cpu_seconds(pid)
        roles_before = _cpu_by_role(pid)
        started = time.perf_counter()
        queue = list(reversed(bodies))
        lock = threading.Lock()

        def send() -> None:
            client = httpx.Client(base_url=server.base_url, timeout=60)
            while True:
                with lock:
                    if not queue:
                        return
                    body = queue.pop()
                while client.post("/v1/traces", content=body,
                                  headers={"Content-Type": "application/x-protobuf"}).status_code != 200:
                    time.sleep(0.05)  # 503: ingest pushes back, as exporters retry

        senders = [threading.Thread(target=send) for _ in range(args.clients)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        sent = time.perf_counter() - started
        deadline = time.perf_counter() + 600
        while (done := _scored_traces(engine)) < args.capacity:
            if time.perf_counter() > deadline:
                break
            time.sleep(0.1)
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(pid) - cpu_before
        roles = {role: seconds - roles_before.get(role, 0.0) for role, seconds in _cpu_by_role(pid).items()}
        memory.stop()
        engine.dispose()
    print(f"capacity: {args.capacity} traces ({args.capacity * 4} spans), sampling {args.sampling:g}, "
          f"{'PostgreSQL' if args.db and args.db.startswith('postgres') else 'SQLite'}")
    print(f"  sent in {sent:.1f} s ({args.capacity / sent:,.0f} traces/s acknowledged); "
          f"{done} scored after {elapsed:.1f} s")
    print(f"  end to end: {done / elapsed:,.0f} traces/s ({done * 4 / elapsed:,.0f} spans/s)")
    print(f"  CPU: {cpu / max(done, 1) * 1000:.2f} ms per trace over all processes ("
          + ", ".join(f"{role} {seconds / max(done, 1) * 1000:.2f}" for role, seconds in sorted(roles.items())) + ")")
    print(f"  peak memory of all processes: RSS {memory.peak_rss_mb:.0f} MB, PSS {memory.peak_pss_mb:.0f} MB")


def latency(args: argparse.Namespace, workdir: Path, config: dict[str, object]) -> None:
    ends: dict[str, float] = {}
    with start_server(workdir, db_url=args.db, config=config, idle_timeout=args.idle_timeout) as server:
        started = time.time()

        def send(offset: float) -> None:
            """One of ``--clients`` senders, each at rate / clients, staggered."""
            client = httpx.Client(base_url=server.base_url, timeout=30)
            interval = args.clients / args.rate
            next_send = started + offset * interval
            while time.time() - started < args.seconds:
                time.sleep(max(0.0, next_send - time.time()))
                end_ns = time.time_ns()
                body, trace_id = agent_trace(end_ns)
                response = client.post("/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"})
                response.raise_for_status()
                ends[trace_id] = end_ns / 1e9
                next_send += interval

        senders = [threading.Thread(target=send, args=(n / args.clients,)) for n in range(args.clients)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
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
            created = created.replace(tzinfo=UTC)
        latencies.append(created.timestamp() - ends[trace_id])
    sent = len(ends)
    print(f"traces sent: {sent} at {args.rate:g}/s offered for {args.seconds:g} s "
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
