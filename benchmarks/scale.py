"""Scale-out: spans/s and scores/s with 1, 2 and 3 ``tracescore serve`` processes on one PostgreSQL.

Each process count gets a fresh database and two runs:

* ingest: no scorer bound, so the figure is what the collectors store (spans/s until every
  export request is acknowledged; trace assembly and claiming still run);
* end to end: the five default code scorers on every agent run; scores/s from the first span
  sent to the last score stored.

Besides wall-clock rates it prints the CPU time the tracescore processes spent: per 1,000
spans in the ingest run (storing, assembling, claiming and completing each trace), and per
agent run scored (the end-to-end run's CPU less the ingest run's share). Those vary less on a
busy machine than rates do and size a deployment: cores = rate × CPU per item.

Spans reach the processes in one of two ways (tests/support/agent_otlp.py): ``trace`` keeps each trace
on one process, as the gateway's loadbalancing exporter does; ``scatter`` sends every span to a
process at random, the worst case (no gateway, or replicas changing). Load comes from a pool of
client threads in this process, on the same machine: with 2 cores shared by the client, the
servers and PostgreSQL, more processes mostly buy isolation rather than throughput, and the
figures say so.

    python benchmarks/scale.py                       # 1, 2 and 3 processes, both routings
    python benchmarks/scale.py --processes 2 --routing trace --traces 300
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.agent_otlp import agent_trace, by_trace, scatter
from tests.support.databases import fresh_pg_database
from tests.support.server_process import ServerProcess, start_server
from tracescore.config import DEFAULT_SCORERS

TRACES_PER_REQUEST_ROUND = 25
"""Traces whose spans one sender scatters at a time (≈100 spans, an SDK-sized export batch)."""


@dataclass(frozen=True)
class Result:
    processes: int
    spans: int
    ingest_seconds: float
    scores: int
    scored_seconds: float | None
    cpu_seconds: float
    """CPU time the tracescore processes used from the first span sent until every trace was
    handled (claimed and completed; with scorers, scored): less sensitive than wall-clock
    figures to other load on the machine."""


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its threads, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _post(client: httpx.Client, url: str, body: bytes, attempts: int = 3) -> None:
    """POST one export, retrying transport errors as OTLP exporters do (a keep-alive connection
    the server closed while idle); stored spans are deduplicated, so a retry is harmless."""
    for attempt in range(attempts):
        try:
            client.post(
                url, content=body, headers={"Content-Type": "application/x-protobuf"}
            ).raise_for_status()
            return
        except httpx.TransportError:
            if attempt == attempts - 1:
                raise


def _send_all(
    servers: list[ServerProcess], traces: int, senders: int, routing: str
) -> tuple[int, float]:
    """Send ``traces`` agent traces to ``servers``; (spans sent, seconds)."""
    rng = random.Random(len(servers))
    batches = []
    for start in range(0, traces, TRACES_PER_REQUEST_ROUND):
        group = [
            agent_trace(rng, f"city-{n}")
            for n in range(start, min(start + TRACES_PER_REQUEST_ROUND, traces))
        ]
        batches.append(
            scatter(group, len(servers), rng)
            if routing == "scatter"
            else by_trace(group, len(servers))
        )
    local = threading.local()

    def send(batch: list[tuple[int, bytes]]) -> None:
        client = getattr(local, "client", None) or httpx.Client(timeout=60)
        local.client = client
        for target, body in batch:
            _post(client, f"{servers[target].base_url}/v1/traces", body)

    started = time.perf_counter()
    with ThreadPoolExecutor(senders) as pool:
        list(pool.map(send, batches))
    return traces * 4, time.perf_counter() - started


def _wait_for_rows(url: str, where: str, count: int, timeout: float) -> None:
    """Wait until ``SELECT count(*) FROM <where>`` reaches ``count``."""
    engine = create_engine(url)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                if connection.execute(text(f"SELECT count(*) FROM {where}")).scalar() >= count:
                    return
            time.sleep(0.05)
    finally:
        engine.dispose()
    raise RuntimeError(f"fewer than {count} rows in {where} after {timeout}s")


def measure(processes: int, traces: int, senders: int, routing: str, score: bool) -> Result:
    config: dict[str, Any] = {"assembly": {"idle_timeout": 0.5}}
    if not score:
        config["scorers"] = []
    with fresh_pg_database() as url, tempfile.TemporaryDirectory() as workdir:
        servers = []
        try:
            for n in range(processes):
                servers.append(
                    start_server(
                        Path(workdir) / f"p{n}",
                        db_url=url,
                        config=config,
                        idle_timeout=None,
                        scoring_processes=None,
                        timeout=60,
                    )
                )
            pids = [server.process.pid for server in servers]
            cpu_before = sum(map(_cpu_seconds, pids))
            started = time.perf_counter()
            spans, ingest_seconds = _send_all(servers, traces, senders, routing)
            _wait_for_rows(url, "spans", spans, timeout=30)
            if not score:
                # CPU until every trace is assembled, claimed and completed (with no binding).
                _wait_for_rows(url, "traces WHERE state = 'scored'", traces, timeout=120)
                cpu = sum(map(_cpu_seconds, pids)) - cpu_before
                return Result(processes, spans, ingest_seconds, 0, None, cpu)
            expected = traces * len(DEFAULT_SCORERS)
            _wait_for_rows(url, "scores", expected, timeout=600)
            scored_seconds = time.perf_counter() - started
            cpu = sum(map(_cpu_seconds, pids)) - cpu_before
            return Result(processes, spans, ingest_seconds, expected, scored_seconds, cpu)
        finally:
            for server in servers:
                server.stop(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--traces", type=int, default=1000, help="agent traces (4 spans each) per run"
    )
    parser.add_argument("--senders", type=int, default=6, help="client threads sending OTLP")
    parser.add_argument(
        "--routing", choices=["trace", "scatter"], nargs="+", default=["trace", "scatter"]
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per figure; the best is printed (the least disturbed by other load)",
    )
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    print(
        f"{os.cpu_count()} CPUs; {args.traces} traces × 4 spans per run; {args.senders} sender "
        f"threads; best of {args.repeat}; scorers: {', '.join(DEFAULT_SCORERS)}"
    )
    print(
        f"{'routing':>7}  {'processes':>9}  {'ingest spans/s':>14}  {'e2e spans/s':>11}  "
        f"{'scores/s':>8}  {'all scored after':>16}  {'CPU ms/1k spans':>15}  {'CPU ms/run':>10}"
    )
    for routing in args.routing:
        for processes in args.processes:
            runs = [
                (
                    measure(processes, args.traces, args.senders, routing, score=False),
                    measure(processes, args.traces, args.senders, routing, score=True),
                )
                for _ in range(args.repeat)
            ]
            ingest = min((i for i, _ in runs), key=lambda r: r.ingest_seconds)
            scored = min((s for _, s in runs), key=lambda r: r.scored_seconds or 0.0)
            assert scored.scored_seconds is not None
            # Scoring CPU per agent run: the end-to-end run's CPU less its ingest share.
            ingest_cpu = ingest.cpu_seconds / ingest.spans
            scoring_cpu = (scored.cpu_seconds - ingest_cpu * scored.spans) / args.traces
            print(
                f"{routing:>7}  {processes:>9}  {ingest.spans / ingest.ingest_seconds:>14,.0f}  "
                f"{scored.spans / scored.ingest_seconds:>11,.0f}  "
                f"{scored.scores / scored.scored_seconds:>8,.0f}  {scored.scored_seconds:>15.1f}s  "
                f"{ingest_cpu * 1e6:>15,.0f}  {scoring_cpu * 1e3:>10,.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
