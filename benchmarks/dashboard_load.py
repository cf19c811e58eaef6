"""Ingest acknowledgements while dashboards are open and a huge trace is being viewed.

Starts the real ``tracescore serve`` (SQLite in a temporary directory, or ``--db``) and
measures the latency of OTLP/HTTP acknowledgements (one small export every 50 ms, from this
process):

1. ``--rounds`` times, back to back (a shared machine's load drifts: each ratio compares
   neighbours): idle, nothing else reading; then with ``--tabs`` simulated browser tabs on
   the overview, each doing what ``live.js`` does (poll ``/ui/live`` every second; re-fetch
   the page when the version moved, at most every 2.5 s), run by asyncio clients in a
   separate process so they do not slow the prober. Printed: p50/p99 of each, the ratio of
   the p99s, and the CPU the service process used a second;
2. while a ``--spans``-span trace's page and the first page of ``/api/v1/traces/{id}/runs``
   are fetched, then every page of its runs: their times and the acks meanwhile, and the
   server's peak memory (``--spans 0`` skips this).

    python benchmarks/dashboard_load.py                  # 200 tabs, 3 rounds, 20,000 spans
    python benchmarks/dashboard_load.py --tabs 50 --seconds 10 --rounds 1 --spans 0
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import orjson

from tests.support.server_process import start_server
from tests.support.web_traces import agent_trace_json, wide_trace_json

POLL_SECONDS = 1.0
REFETCH_SECONDS = 2.5
WARM_UP = 3.0
"""Seconds the tabs run before acks are measured: every tab has polled and fetched its page."""
ACK_EVERY = 0.05


class Prober:
    """Sends one small export every :data:`ACK_EVERY` seconds and records each ack's latency."""

    def __init__(self, base_url: str) -> None:
        self.client = httpx.Client(base_url=base_url, timeout=60)
        self.latencies: list[float] = []

    def measure(self, seconds: float) -> list[float]:
        self.latencies = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            body = agent_trace_json(uuid.uuid4().hex, agent="WeatherBot")
            started = time.perf_counter()
            response = self.client.post(
                "/v1/traces", content=body, headers={"content-type": "application/json"}
            )
            self.latencies.append(time.perf_counter() - started)
            assert response.status_code == 200, response.text[:300]
            time.sleep(ACK_EVERY)
        return self.latencies


def figures(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.99)] * 1000


class TabConnection:
    """One tab's keep-alive connection, speaking just enough HTTP/1.1 by hand.

    httpx costs a millisecond or more of CPU a request: 200 tabs driven through it made about
    half the requests they were due and took a core from the machine the service runs on,
    so a slow ack measured the simulator as much as the service. Bare asyncio streams let one
    process make every request the tabs are due."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        if length is None:
            raise ConnectionError(f"no content-length in the answer to {path}")
        return status, await self.reader.readexactly(int(length.group(1)))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _tab(connection: TabConnection, stop: float, counts: dict[str, int]) -> None:
    """What live.js does in one tab: poll the live version every second, re-fetch the page
    when it moved (at most every :data:`REFETCH_SECONDS`)."""
    version = None
    fetched = 0.0
    await asyncio.sleep(POLL_SECONDS * random.random())
    while time.monotonic() < stop:
        began = time.monotonic()
        try:
            status, body = await connection.get("/ui/live")
            latest = orjson.loads(body)["version"]
            counts["polls"] += 1
            counts["errors"] += status != 200
            if latest != version and began - fetched >= REFETCH_SECONDS:
                status, _ = await connection.get("/")
                counts["pages"] += 1
                counts["errors"] += status != 200
                fetched, version = time.monotonic(), latest
        except (OSError, asyncio.IncompleteReadError, ConnectionError):
            counts["errors"] += 1
            connection.close()
            connection.writer = None
        await asyncio.sleep(max(0.0, POLL_SECONDS - (time.monotonic() - began)))


def run_tabs(base_url: str, tabs: int, seconds: float, report: multiprocessing.Queue) -> None:
    """``tabs`` tabs for ``seconds``; reports the requests made, counted from the moment
    every tab has started (the first :data:`WARM_UP` seconds are not counted)."""
    url = httpx.URL(base_url)
    assert url.port is not None

    async def main() -> None:
        counts = {"polls": 0, "pages": 0, "errors": 0}
        connections = [TabConnection(url.host, url.port) for _ in range(tabs)]
        stop = time.monotonic() + seconds
        running = asyncio.gather(*(_tab(c, stop, counts) for c in connections))
        await asyncio.sleep(WARM_UP)
        counts.update(polls=0, pages=0, errors=0)
        began = time.monotonic()
        await running
        for connection in connections:
            connection.close()
        report.put({**counts, "seconds": time.monotonic() - began})

    asyncio.run(main())


def cpu_seconds(pid: int) -> float:
    """User and system CPU of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--tabs", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    with (
        tempfile.TemporaryDirectory() as scratch,
        start_server(
            Path(scratch), db_url=args.db, idle_timeout=0.3, scoring_processes=None
        ) as server,
    ):
        prober = Prober(server.base_url)
        pid = server.process.pid
        prober.measure(3.0)  # warm up, and give the overview some scores
        for round in range(1, args.rounds + 1):
            used = cpu_seconds(pid)
            idle = figures(prober.measure(args.seconds))
            idle_cpu = (cpu_seconds(pid) - used) / args.seconds
            report: multiprocessing.Queue = multiprocessing.Queue()
            tabs = multiprocessing.Process(
                target=run_tabs, args=(server.base_url, args.tabs, WARM_UP + args.seconds, report)
            )
            tabs.start()
            time.sleep(WARM_UP)
            used = cpu_seconds(pid)
            loaded = figures(prober.measure(args.seconds))
            loaded_cpu = (cpu_seconds(pid) - used) / args.seconds
            counts = report.get()
            tabs.join()
            print(
                f"round {round}: acks idle p50 {idle[0]:.1f} ms, p99 {idle[1]:.1f} ms "
                f"(service CPU {idle_cpu:.2f} s/s); with {args.tabs} tabs p50 {loaded[0]:.1f} ms, "
                f"p99 {loaded[1]:.1f} ms (CPU {loaded_cpu:.2f} s/s; "
                f"{counts['polls'] / counts['seconds']:.0f} polls/s, "
                f"{counts['pages'] / counts['seconds']:.0f} page loads/s, {counts['errors']} errors); "
                f"p99 {loaded[1] / idle[1]:.2f}x idle",
                flush=True,
            )

        if args.spans == 0:
            return
        trace_id = uuid.uuid4().hex
        for first in range(0, args.spans, 2_000):
            part = wide_trace_json(trace_id, min(2_000, args.spans - first), first)
            posted = prober.client.post(
                "/v1/traces", content=part, headers={"content-type": "application/json"}
            )
            assert posted.status_code == 200, posted.text[:300]
        while True:  # stored once the unpacker has written every part
            summary = prober.client.get(f"/api/v1/traces/{trace_id}")
            if summary.status_code == 200 and len(summary.json()["spans"]) > args.spans:
                break
            time.sleep(0.5)
        times: dict[str, float] = {}
        sizes: dict[str, int] = {}

        def fetch(name: str, path: str) -> None:
            with httpx.Client(base_url=server.base_url, timeout=300) as reader:
                started = time.perf_counter()
                response = reader.get(path)
                times[name] = time.perf_counter() - started
                sizes[name] = len(response.content)
                assert response.status_code == 200, response.text[:300]

        runs_url = f"/api/v1/traces/{trace_id}/runs?limit=200"
        readers = [
            threading.Thread(target=fetch, args=("page", f"/ui/traces/{trace_id}")),
            threading.Thread(target=fetch, args=("runs", runs_url)),
        ]
        for reader in readers:
            reader.start()
        during = list(prober.measure(1.0))
        while any(reader.is_alive() for reader in readers):
            during += prober.measure(0.5)
        for reader in readers:
            reader.join()
        big = figures(during)
        with httpx.Client(base_url=server.base_url, timeout=300) as reader:
            started, pages, size = time.perf_counter(), 0, 0
            cursor: str | None = None
            while pages == 0 or cursor:
                answer = reader.get(runs_url + (f"&cursor={cursor}" if cursor else ""))
                pages, size, cursor = (
                    pages + 1,
                    size + len(answer.content),
                    answer.json()["next_cursor"],
                )
            walked = time.perf_counter() - started
        print(
            f"{args.spans:,}-span trace: page {times['page']:.2f} s ({sizes['page'] / 1e6:.2f} MB), "
            f"first page of runs (200) {times['runs']:.2f} s ({sizes['runs'] / 1e6:.2f} MB), "
            f"both at once; acks meanwhile p50 {big[0]:.1f} ms, p99 {big[1]:.1f} ms, "
            f"max {max(during) * 1000:.0f} ms; then all {pages} pages of runs {walked:.2f} s "
            f"({size / 1e6:.1f} MB); server peak RSS {peak_rss_mb(pid):.0f} MB"
        )


if __name__ == "__main__":
    main()
