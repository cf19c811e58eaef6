"""The live pipeline: latency under a steady load, and capacity (traces scored per second).

Starts ``tracescore serve`` (SQLite by default, ``--db`` for PostgreSQL) with its default code
scorers and sends GenAI-convention agent traces (agent → chat, tool, chat).

Latency (the default mode): traces at a steady ``--rate``; for every score, the time from the
agent span's end to the score's row being written. The goal is the idle window plus less than
one second at p95.

    python benchmarks/pipeline.py --rate 20 --seconds 30 --idle-timeout 1

Capacity (``--capacity N``): N traces sent by ``--clients`` concurrent clients, in requests of
``--traces-per-request`` traces, as fast as ingest takes them, then the time until every one is
scored (its trace row ``scored``). Prints traces/s end to end, CPU time per trace over all the
service's processes and by role, and their peak memory (RSS and PSS summed, sampled; RSS also
by role). ``--sampling`` (or ``--sample``) sets every binding's sampling rate; ``--when`` puts
``benchmarks/conditions.py``'s realistic ``when:`` on every binding (one every benchmark trace
passes, so the scorers' work is the same and the difference is the conditions' cost).

In the same run, after the service has stopped, the *in-process floor*: the same request bodies
decoded by the service's decoder, their runs extracted and scored by the same bindings, in one
loop in this process (no database, no processes, no queue). Its CPU time per trace, and the
ratio of the live path's to it, do not depend on how fast the machine is that day: the ratio is
what the pipeline's machinery costs on top of the work itself.

    python benchmarks/pipeline.py --capacity 20000
    python benchmarks/pipeline.py --capacity 20000 --sampling 0.1
    python benchmarks/pipeline.py --capacity 20000 --when
    python benchmarks/pipeline.py --capacity 20000 --clients 8 --traces-per-request 50
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from sqlalchemy import Engine, create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.conditions import REALISTIC
from benchmarks.ingest import MemorySampler, cpu_seconds, process_tree
from tests.support.server_process import start_server
from tracescore.batch_gc import bulk_scoring
from tracescore.config import DEFAULT_SCORERS, Config
from tracescore.extract import extract_runs
from tracescore.ingest.decode import decode_traces
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.budget import within_input_budget
from tracescore.pipeline.sampling import sampled_at, unit_hash
from tracescore.pipeline.score_rows import score_row
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.spans import Trace

SYSTEM = json.dumps(
    [{"type": "text", "content": "You are WeatherBot, a concise weather assistant."}]
)
USER = {"role": "user", "parts": [{"type": "text", "content": "What's the weather like in Paris?"}]}
CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
ANSWER = {
    "role": "assistant",
    "parts": [{"type": "text", "content": "It is sunny in Paris today, about 21 degrees Celsius."}],
}


def _attrs(values: dict[str, object]) -> list[KeyValue]:
    out = []
    for key, value in values.items():
        any_value = (
            AnyValue(int_value=value)
            if isinstance(value, int)
            else AnyValue(string_value=str(value))
        )
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

    def span(
        span_id: bytes, parent: bytes, name: str, offset_ms: int, dur_ms: int, **attrs: object
    ) -> Span:
        return Span(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent,
            name=name,
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start + offset_ms * 1_000_000,
            end_time_unix_nano=start + (offset_ms + dur_ms) * 1_000_000,
            attributes=_attrs(attrs),
        )

    spans = [
        span(
            chat1,
            agent_id,
            "chat gpt-4o-mini",
            10,
            300,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.input.messages": json.dumps([USER]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [CALL]}]),
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 20,
            },
        ),
        span(
            tool,
            agent_id,
            "execute_tool get_weather",
            320,
            50,
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                "gen_ai.tool.call.result": '{"forecast": "sunny", "temperature_c": 21}',
            },
        ),
        span(
            chat2,
            agent_id,
            "chat gpt-4o-mini",
            380,
            500,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.output.messages": json.dumps([ANSWER]),
                "gen_ai.usage.input_tokens": 180,
                "gen_ai.usage.output_tokens": 30,
            },
        ),
        span(
            agent_id,
            b"",
            "invoke_agent WeatherBot",
            0,
            900,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "WeatherBot",
                "gen_ai.system_instructions": SYSTEM,
                "gen_ai.input.messages": json.dumps([USER]),
                "gen_ai.output.messages": json.dumps([ANSWER]),
            },
        ),
    ]
    return spans, trace_id.hex()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=20.0, help="agent traces per second")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to send")
    parser.add_argument("--idle-timeout", type=float, default=1.0)
    parser.add_argument("--db", help="database URL (default: a SQLite file in a temp dir)")
    parser.add_argument("--capacity", type=int, help="capacity mode: send this many traces at once")
    parser.add_argument(
        "--sampling", "--sample", type=float, default=1.0, help="every binding's sampling rate"
    )
    parser.add_argument(
        "--when", action="store_true", help="a realistic when: on every binding (capacity)"
    )
    parser.add_argument(
        "--traces-per-request", type=int, default=25, help="traces per export request (capacity)"
    )
    parser.add_argument("--clients", type=int, default=4, help="concurrent senders")
    parser.add_argument(
        "--floor-traces",
        type=int,
        default=10_000,
        help="capacity: how many of the traces the in-process floor goes through (0: none)",
    )
    parser.add_argument(
        "--config", type=Path, help="a YAML config to merge in (server, workers keys)"
    )
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tracescore-bench-pipeline-"))
    config = sampling_config(args.sampling, REALISTIC if args.when else None)
    if args.config:
        for key, value in yaml.safe_load(args.config.read_text()).items():
            config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value  # type: ignore[dict-item]
    if args.capacity:
        capacity(args, workdir, config)
    else:
        latency(args, workdir, config)


def sampling_config(rate: float, when: dict[str, object] | None = None) -> dict[str, object]:
    """The service's config for the benchmark: the default bindings, every one at ``rate`` and
    with ``when`` as its ``when:``."""
    config: dict[str, object] = {"workers": {"poll_interval": 0.05}}
    if rate < 1.0 or when is not None:
        config["scorers"] = [
            {
                "name": name,
                "scorer": name,
                "sampling": {"rate": rate},
                **({"when": when} if when is not None else {}),
            }
            for name in DEFAULT_SCORERS
        ]
    return config


def _scored_traces(engine: Engine) -> int:
    with engine.connect() as connection:
        return connection.execute(
            text("SELECT count(*) FROM traces WHERE state = 'scored'")
        ).scalar_one()


def _database_bytes(engine: Engine) -> int:
    """What the database takes: its pages on SQLite (``page_count``, which counts the pages
    still in the WAL, times ``page_size``: the main file's size once checkpointed), every
    table's ``pg_total_relation_size`` (indexes and TOAST included) on PostgreSQL."""
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            pages = connection.exec_driver_sql("PRAGMA page_count").scalar_one()
            return int(pages * connection.exec_driver_sql("PRAGMA page_size").scalar_one())
        return int(
            connection.execute(
                text(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
                )
            ).scalar_one()
        )


def _role(pid: int) -> str:
    """What one of the service's processes is, from its command line."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "service"
    return (
        "unpacker"
        if b"tracescore.ingest.unpack" in command
        else "scoring"
        if b"tracescore.pipeline.scoring_processes" in command
        else "service"
    )


def _cpu_by_role(pid: int) -> dict[str, float]:
    """CPU seconds so far of the service's processes, summed by what each is."""
    roles: dict[str, float] = {}
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        role = _role(member)
        roles[role] = roles.get(role, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf(
            "SC_CLK_TCK"
        )
    return roles


def _wait_started(pid: int, quiet: float = 0.05, longest: float = 120.0) -> None:
    """Wait until the service's processes have started: their CPU time grew by less than
    ``quiet`` seconds over the last half second (idle), at least two seconds after the
    service answered.

    A fixed two seconds was not enough on a busy machine: the scoring processes' imports and
    warm-up (~1.8 s of CPU each) and the unpacker's (~0.6 s) went on into the measured window,
    adding ~1 ms a trace to ``--capacity 3000`` at a load average of 6."""
    started = time.perf_counter()
    time.sleep(2.0)
    before = sum(_cpu_by_role(pid).values())
    while time.perf_counter() - started < longest:
        time.sleep(0.5)
        now = sum(_cpu_by_role(pid).values())
        if now - before < quiet:
            break
        before = now
    print(f"  (start-up: waited {time.perf_counter() - started:.1f} s for the processes to idle)")


@dataclass
class Floor:
    """CPU seconds (this thread's) of the in-process floor, by phase, over ``traces`` traces."""

    traces: int = 0
    runs: int = 0
    scores: int = 0
    decode: float = 0.0
    """The request bodies through the service's decoder, and the spans grouped by trace."""
    extract: float = 0.0
    score: float = 0.0
    """The scorers' input (``ScorerRun``, the input budget) and ``run_sync`` of every sampled binding."""
    rows: float = 0.0
    """Building the score rows (``score_row``): measured beside the floor, not part of it, since
    what a row costs is the storage's overhead that the issue asks to cut."""

    @property
    def seconds(self) -> float:
        return self.decode + self.extract + self.score


def in_process_floor(bodies: list[bytes], config: dict[str, object]) -> Floor:
    """Decode, extract and score ``bodies`` in one loop in this process, with the bindings the
    service compiled from the same ``config``: the work the live path cannot avoid."""
    loaded = Config.model_validate(config)
    bindings = compile_bindings(loaded.scorers, {}, None)
    only_primary = all(binding.config.target in ("agent", "trace") for binding in bindings)
    max_chars = loaded.workers.budget.max_chars
    floor = Floor()

    def one_pass(batch: list[bytes], into: Floor) -> None:
        clock = time.thread_time
        for body in batch:
            began = clock()
            traces: dict[str, Trace] = {}
            for span in decode_traces(body, json=False).spans:
                if (trace := traces.get(span.trace_id)) is None:
                    trace = traces[span.trace_id] = Trace(span.trace_id)
                trace.spans.append(span)
            into.decode += clock() - began
            now = datetime.now(UTC)
            for trace in traces.values():
                into.traces += 1
                position = unit_hash(trace.trace_id)
                verdicts = [sampled_at(position, binding.sampling_rate) for binding in bindings]
                if not any(verdicts):
                    continue  # the live path never loads it either
                began = clock()
                runs = extract_runs(trace, only_primary=only_primary)
                extracted = clock()
                into.extract += extracted - began
                inputs: dict[int, ScorerRun] = {}
                results = []
                for binding, sampled in zip(bindings, verdicts, strict=True):
                    if not sampled:
                        continue
                    for run in binding.eligible(runs, trace):
                        if (scorer_input := inputs.get(id(run))) is None:
                            scorer_input = inputs[id(run)] = within_input_budget(
                                ScorerRun.of(run), max_chars
                            )[0]
                        results.append((binding, run, binding.scorer.run_sync(scorer_input)))
                scored = clock()
                into.score += scored - extracted
                for binding, run, result in results:
                    score_row(binding, run, status=result.status, result=result, now=now)
                into.rows += clock() - scored
                into.runs += len(runs)
                into.scores += len(results)

    one_pass(bodies[:2], Floor())  # warm-up: the scorers load their lexicons on first use
    gc.collect()
    with bulk_scoring():  # the collector set as a scoring process sets it
        one_pass(bodies, floor)
    return floor


def capacity(args: argparse.Namespace, workdir: Path, config: dict[str, object]) -> None:
    now = time.time_ns()
    traces = [agent_spans(now - n * 1000)[0] for n in range(args.capacity)]
    bodies = [
        export_body(
            [span for spans in traces[start : start + args.traces_per_request] for span in spans]
        )
        for start in range(0, len(traces), args.traces_per_request)
    ]
    del traces
    with start_server(
        workdir,
        db_url=args.db,
        config=config,
        idle_timeout=args.idle_timeout,
        scoring_processes=None,
    ) as server:
        engine = create_engine(server.db_url)
        pid = server.process.pid
        _wait_started(pid)  # imports and the scorers' warm-up are start-up, not capacity
        scored_before = _scored_traces(engine)  # a reused database's earlier runs
        if scored_before:
            # Bigger tables and indexes make every insert dearer: 5 earlier runs of 20,000 cut
            # PostgreSQL from ~1,000 to under 600 traces/s, measured.
            print(
                f"  (the database already holds {scored_before:,} scored traces: figures are "
                "comparable only with runs on a database as full; use a fresh one)"
            )
        memory = MemorySampler(pid, role=_role)
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
                while (
                    client.post(
                        "/v1/traces",
                        content=body,
                        headers={"Content-Type": "application/x-protobuf"},
                    ).status_code
                    != 200
                ):
                    time.sleep(0.05)  # 503: ingest pushes back, as exporters retry

        senders = [threading.Thread(target=send) for _ in range(args.clients)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        sent = time.perf_counter() - started
        deadline = time.perf_counter() + 600
        while (done := _scored_traces(engine) - scored_before) < args.capacity:
            if time.perf_counter() > deadline:
                break
            time.sleep(0.1)
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(pid) - cpu_before
        roles = {
            role: seconds - roles_before.get(role, 0.0)
            for role, seconds in _cpu_by_role(pid).items()
        }
        memory.stop()
        stored = _database_bytes(engine)
        engine.dispose()
    floor_bodies = (
        bodies[: -(-args.floor_traces // args.traces_per_request)] if args.floor_traces > 0 else []
    )
    floor = in_process_floor(floor_bodies, config) if floor_bodies else None
    database = "PostgreSQL" if args.db and args.db.startswith("postgres") else "SQLite"
    per_trace = cpu / max(done, 1) * 1000
    print(
        f"capacity: {args.capacity} traces ({args.capacity * 4} spans), sampling {args.sampling:g}, {database}, "
        f"{args.clients} clients x {args.traces_per_request} traces per request"
    )
    print(
        f"  sent in {sent:.1f} s ({args.capacity / sent:,.0f} traces/s acknowledged); "
        f"{done} scored after {elapsed:.1f} s"
    )
    print(f"  end to end: {done / elapsed:,.0f} traces/s ({done * 4 / elapsed:,.0f} spans/s)")
    print(
        f"  CPU: {per_trace:.2f} ms per trace over all processes ("
        + ", ".join(
            f"{role} {seconds / max(done, 1) * 1000:.2f}" for role, seconds in sorted(roles.items())
        )
        + ")"
    )
    print(
        f"  storage: {stored / max(done + scored_before, 1):,.0f} bytes per scored trace "
        f"({stored / 1e6:,.1f} MB for {done + scored_before:,} scored traces)"
    )
    if floor is not None and floor.traces:
        floor_ms = floor.seconds / floor.traces * 1000
        print(
            f"  in-process floor: {floor_ms:.3f} ms per trace (decode {floor.decode / floor.traces * 1000:.3f}, "
            f"extract {floor.extract / floor.traces * 1000:.3f}, score {floor.score / floor.traces * 1000:.3f}; "
            f"{floor.traces} traces, {floor.runs} runs, {floor.scores} scores); "
            f"score rows beside it {floor.rows / floor.traces * 1000:.3f}"
        )
        print(
            f"  live / floor: {per_trace / floor_ms:.2f} (overhead {per_trace / floor_ms - 1:.0%} of the floor)"
        )
    print(
        f"  peak memory of all processes: RSS {memory.peak_rss_mb:.0f} MB, PSS {memory.peak_pss_mb:.0f} MB (RSS "
        + ", ".join(f"{role} {mb:.0f}" for role, mb in sorted(memory.peak_rss_mb_by_role.items()))
        + ")"
    )


def latency(args: argparse.Namespace, workdir: Path, config: dict[str, object]) -> None:
    ends: dict[str, float] = {}
    with start_server(
        workdir,
        db_url=args.db,
        config=config,
        idle_timeout=args.idle_timeout,
        scoring_processes=None,
    ) as server:
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
                response = client.post(
                    "/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"}
                )
                response.raise_for_status()
                ends[trace_id] = end_ns / 1e9
                next_send += interval

        senders = [
            threading.Thread(target=send, args=(n / args.clients,)) for n in range(args.clients)
        ]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        engine = create_engine(server.db_url)
        deadline = time.time() + args.idle_timeout + 30
        rows: list = []
        while time.time() < deadline:
            with engine.connect() as connection:
                rows = connection.execute(
                    text("SELECT trace_id, MAX(created_at) FROM scores GROUP BY trace_id")
                ).all()
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
    print(
        f"traces sent: {sent} at {args.rate:g}/s offered for {args.seconds:g} s "
        f"({sent * 4 / args.seconds:.0f} spans/s); traces scored: {len(latencies)}"
    )
    if latencies:
        over = [value - args.idle_timeout for value in latencies]
        print(
            f"span end -> scores stored: p50 {percentile(latencies, 0.5):.3f} s, "
            f"p95 {percentile(latencies, 0.95):.3f} s, max {max(latencies):.3f} s "
            f"(idle window {args.idle_timeout:g} s)"
        )
        print(
            f"beyond the idle window: p50 {percentile(over, 0.5):.3f} s, p95 {percentile(over, 0.95):.3f} s, "
            f"mean {statistics.fmean(over):.3f} s"
        )


if __name__ == "__main__":
    main()
