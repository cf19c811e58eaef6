"""Ingest benchmark: sustained durable OTLP ingest into the real ``tracescore serve`` process.

For each database (SQLite, and PostgreSQL with ``--pg``), transport (OTLP/HTTP protobuf,
OTLP/HTTP JSON, OTLP/gRPC) and batch size (100 and 1000 spans), several client threads send
realistic batches (see ``otlp_load.py``) back to back for ``--seconds``; every acknowledged
request has been committed, so acked spans/s is durable throughput. Prints spans/s, p50/p99
acknowledgement latency, and the server's peak memory (RSS and PSS of all its processes at once);
checks the database holds every acked span.

Readiness timeouts are set to an hour so no trace becomes ready (and gets scored) during the
run: this measures ingest alone.

``--peer phoenix`` runs the HTTP protobuf load against Arize Phoenix (installed in its own venv,
``--phoenix-python``) and compares spans *persisted* per second: Phoenix acknowledges before it
writes, so its spans are counted in its SQLite database until all acked spans are there or
``--phoenix-drain`` seconds have passed.

    python benchmarks/ingest.py --seconds 10 [--pg postgresql://postgres@127.0.0.1/bench]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.otlp_load import batch_json, batch_protobuf, fresh_ids
from tests.support.server_process import free_port, start_server
from tracescore.store import open_store

TRANSPORTS = ("http-protobuf", "http-json", "grpc")
_GRPC_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@dataclass
class Result:
    acked_spans: int = 0
    failed_requests: int = 0
    latencies: list[float] = field(default_factory=list)
    elapsed: float = 0.0
    stored_after: float = 0.0
    """Seconds from the start until every acked span was a row (readable, scorable)."""
    server_cpu: float = float("nan")
    """CPU seconds the server used during the run (the machine may be shared)."""

    @property
    def spans_per_second(self) -> float:
        """Acked spans per second of the run, counted until they were all stored as rows: what
        the collector sustains, whatever its journal absorbed meanwhile."""
        return self.acked_spans / self.stored_after if self.stored_after else 0.0

    def percentile(self, q: float) -> float:
        if len(self.latencies) < 2:
            return self.latencies[0] if self.latencies else float("nan")
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[int(q) - 1]


class _Counter:
    def __init__(self, start: int) -> None:
        self._next, self._lock = start, threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            self._next += 1
            return self._next


def _http_sender(port: int, path: str, content_type: str) -> Callable[[bytes], bool]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def send(body: bytes) -> bool:
        connection.request("POST", path, body, {"Content-Type": content_type})
        response = connection.getresponse()
        response.read()
        return response.status == 200

    return send


def _grpc_sender(port: int) -> Callable[[bytes], bool]:
    channel = grpc.insecure_channel(
        f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", 64 * 1024 * 1024)]
    )
    export = channel.unary_unary(_GRPC_METHOD, request_serializer=None, response_deserializer=None)

    def send(body: bytes) -> bool:
        try:
            export(body, timeout=60)
        except grpc.RpcError:
            return False
        return True

    return send


def run_load(
    make_sender: Callable[[], Callable[[bytes], bool]],
    template: bytes,
    *,
    json: bool,
    spans_per_request: int,
    seconds: float,
    clients: int,
    numbers: _Counter,
    rate: float | None = None,
) -> Result:
    """``clients`` threads sending fresh copies of ``template`` for ``seconds``: back to back,
    or with ``rate`` (spans/s, all clients together) on a fixed schedule. Latency is counted
    from the scheduled send time, so a client held up by slow acks counts its lateness too."""
    result = Result()
    lock = threading.Lock()
    start = time.perf_counter()
    deadline = start + seconds
    period = clients * spans_per_request / rate if rate else 0.0

    def client(index: int) -> None:
        send = make_sender()
        due = start + index * period / clients
        while due < deadline and time.perf_counter() < deadline:
            body = fresh_ids(template, numbers(), json=json)
            if rate:
                time.sleep(max(0.0, due - time.perf_counter()))
                sent = due
                due += period
            else:
                sent = time.perf_counter()
            ok = send(body)
            latency = time.perf_counter() - sent
            with lock:
                if ok:
                    result.acked_spans += spans_per_request
                    result.latencies.append(latency)
                else:
                    result.failed_requests += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.elapsed = time.perf_counter() - start
    return result


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the service processes of ``--processes N``)."""
    pids = [pid]
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                pids.extend(process_tree(int(child)))
    except (FileNotFoundError, ProcessLookupError):  # a thread or process that just ended
        pass
    return pids


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process and its children have used so far."""
    total = 0
    for member in process_tree(pid):
        fields = Path(f"/proc/{member}/stat").read_text().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


class MemorySampler:
    """The process tree's memory summed at one instant, sampled every ``interval`` seconds
    while the load runs: peak RSS (shared pages counted in every process that maps them, as
    ``ps`` adds up) and peak PSS (each shared page divided among the processes sharing it, so
    the sum is what the tree really holds). With ``role`` (a process id's role), also each
    role's peak RSS, summed over its processes at one instant."""

    def __init__(
        self, pid: int, interval: float = 0.2, role: Callable[[int], str] | None = None
    ) -> None:
        self.pid, self.interval, self.role = pid, interval, role
        self.peak_rss_mb = self.peak_pss_mb = 0.0
        self.peak_rss_mb_by_role: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            rss = pss = 0
            by_role: dict[str, int] = {}
            for member in process_tree(self.pid):
                try:
                    member_rss = 0
                    for line in Path(f"/proc/{member}/smaps_rollup").read_text().splitlines():
                        if line.startswith("Rss:"):
                            member_rss = int(line.split()[1])
                        elif line.startswith("Pss:"):
                            pss += int(line.split()[1])
                    if self.role is not None:
                        role = self.role(member)
                        by_role[role] = by_role.get(role, 0) + member_rss
                except (FileNotFoundError, ProcessLookupError):
                    continue  # a process that just ended
                rss += member_rss
            self.peak_rss_mb = max(self.peak_rss_mb, rss / 1024)
            self.peak_pss_mb = max(self.peak_pss_mb, pss / 1024)
            for role, kb in by_role.items():
                self.peak_rss_mb_by_role[role] = max(
                    self.peak_rss_mb_by_role.get(role, 0.0), kb / 1024
                )


def _peak_rss_mb(pid: int) -> float:
    """Peak resident memory, summed over the process tree (each process's own peak)."""
    total_kb = 0
    for member in process_tree(pid):
        for line in Path(f"/proc/{member}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total_kb += int(line.split()[1])
    return total_kb / 1024


def _report(label: str, result: Result) -> None:
    print(
        f"  {label:<20} {result.spans_per_second:>8,.0f} spans/s stored "
        f"(acked at {result.acked_spans / result.elapsed:,.0f}/s, all rows {result.stored_after - result.elapsed:.1f} s after the load)  "
        f"p50 {result.percentile(50) * 1000:6.1f} ms  p99 {result.percentile(99) * 1000:6.1f} ms  "
        f"server CPU {result.server_cpu / result.stored_after:4.0%}, "
        f"{result.acked_spans / result.server_cpu:,.0f} spans/CPU-s  "
        f"({result.acked_spans:,} acked, {result.failed_requests} refused)",
        flush=True,
    )


def bench_tracescore(
    db_url: str, args: argparse.Namespace, workdir: Path
) -> dict[tuple[str, int], Result]:
    config = {"assembly": {"idle_timeout": 3600, "max_wait": 3600}}
    server = start_server(
        workdir,
        db_url=db_url,
        config=config,
        idle_timeout=None,
        scoring_processes=None,
        args=["--processes", str(args.processes), "--unpackers", str(args.unpackers)],
    )
    results: dict[tuple[str, int], Result] = {}
    numbers = _Counter(int(time.time()) % 1_000_000 * 1000)
    store = open_store(db_url, create=False)
    try:
        # Warm-up (imports, caches, scorer start-up work), not measured.
        run_load(
            lambda: _http_sender(server.http_port, "/v1/traces", "application/x-protobuf"),
            batch_protobuf(100),
            json=False,
            spans_per_request=100,
            seconds=args.warmup,
            clients=1,
            numbers=numbers,
        )
        memory = MemorySampler(server.process.pid)
        memory.start()
        for size in args.batch_sizes:
            templates = {False: batch_protobuf(size), True: batch_json(size)}
            for transport in args.transports:
                json = transport == "http-json"
                if transport == "grpc":
                    make_sender = partial(_grpc_sender, server.grpc_port)
                else:
                    content_type = "application/json" if json else "application/x-protobuf"
                    make_sender = partial(
                        _http_sender, server.http_port, "/v1/traces", content_type
                    )
                cpu_before = cpu_seconds(server.process.pid)
                started = time.perf_counter()
                result = run_load(
                    make_sender,
                    templates[json],
                    json=json,
                    spans_per_request=size,
                    seconds=args.seconds,
                    clients=args.clients,
                    numbers=numbers,
                    rate=args.rate,
                )
                settled = store.journal.settle(timeout=600)
                result.stored_after = time.perf_counter() - started
                result.server_cpu = cpu_seconds(server.process.pid) - cpu_before
                if not settled:
                    print("  acknowledged requests still in the journal after 600 s", flush=True)
                results[(transport, size)] = result
                _report(f"{transport} x{size}", result)
        memory.stop()
        print(
            f"  server memory at its peak, all processes together: RSS {memory.peak_rss_mb:.0f} MB, "
            f"PSS {memory.peak_pss_mb:.0f} MB (sum of each process's own peak RSS: "
            f"{_peak_rss_mb(server.process.pid):.0f} MB)",
            flush=True,
        )
    finally:
        server.stop()
    stored, acked = store.count_spans(), sum(r.acked_spans for r in results.values())
    store.close()
    print(
        f"  stored spans {stored:,} >= acked {acked:,} (+ warm-up): "
        f"{'ok' if stored >= acked else 'MISSING'}"
    )
    return results


# --------------------------------------------------------------------------- Phoenix


def _phoenix_span_count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            return conn.execute("SELECT count(*) FROM spans").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@contextlib.contextmanager
def _phoenix(python: Path, workdir: Path) -> Iterator[tuple[int, Path]]:
    """A fresh Phoenix server (its own working directory and SQLite database): (port, db)."""
    workdir.mkdir(parents=True)
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_HOST": "127.0.0.1",
    }
    with open(workdir / "phoenix.log", "wb") as log:
        process = subprocess.Popen(
            [str(python), "-m", "phoenix.server.main", "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 300
            while not _healthy(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"Phoenix did not start; see {workdir / 'phoenix.log'}")
                time.sleep(0.5)
            yield port, workdir / "phoenix.db"
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def _healthy(port: int) -> bool:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False


def bench_phoenix(args: argparse.Namespace, workdir: Path) -> dict[tuple[str, int], float]:
    """Persisted spans/s of Phoenix under the HTTP protobuf load, per batch size (each on a
    fresh Phoenix, so one run's backlog does not slow the next)."""
    python = Path(args.phoenix_python)
    if not python.exists():
        raise SystemExit(
            f"{python} not found: install Phoenix first: python -m venv /tmp/phoenix-venv && "
            "/tmp/phoenix-venv/bin/pip install arize-phoenix"
        )
    rates: dict[tuple[str, int], float] = {}
    numbers = _Counter(900_000_000)
    for size in args.batch_sizes:
        with _phoenix(python, workdir / f"x{size}") as (port, db):
            before = _phoenix_span_count(db)
            start = time.perf_counter()
            result = run_load(
                lambda: _http_sender(port, "/v1/traces", "application/x-protobuf"),
                batch_protobuf(size),
                json=False,
                spans_per_request=size,
                seconds=args.seconds,
                clients=args.clients,
                numbers=numbers,
            )
            # Phoenix acknowledges before it writes: keep counting until every acked span is
            # persisted or --phoenix-drain seconds have passed, and rate what got persisted.
            drain_until = time.perf_counter() + args.phoenix_drain
            persisted = _phoenix_span_count(db) - before
            while persisted < result.acked_spans and time.perf_counter() < drain_until:
                time.sleep(1)
                persisted = _phoenix_span_count(db) - before
            elapsed = time.perf_counter() - start
            rates[("http-protobuf", size)] = persisted / elapsed
            print(
                f"  phoenix http-protobuf x{size}: {persisted / elapsed:,.0f} spans/s persisted "
                f"({persisted:,} of {result.acked_spans:,} acked spans after {elapsed:.0f} s)",
                flush=True,
            )
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="load duration per case")
    parser.add_argument(
        "--pg", metavar="URL", help="also benchmark this (scratch) PostgreSQL database"
    )
    parser.add_argument("--clients", type=int, default=4, help="concurrent client connections")
    parser.add_argument(
        "--rate", type=float, help="offered spans/s (fixed schedule) instead of back to back"
    )
    parser.add_argument("--processes", type=int, default=1, help="tracescore service processes")
    parser.add_argument(
        "--unpackers", type=int, default=1, help="unpacker processes per service process"
    )
    parser.add_argument(
        "--warmup", type=float, default=3.0, help="unmeasured seconds of load first"
    )
    parser.add_argument(
        "--batch-sizes", type=lambda s: [int(x) for x in s.split(",")], default=[100, 1000]
    )
    parser.add_argument("--transports", type=lambda s: s.split(","), default=list(TRANSPORTS))
    parser.add_argument("--no-sqlite", action="store_true", help="skip the SQLite runs")
    parser.add_argument("--peer", choices=["phoenix"], help="compare with another collector")
    parser.add_argument("--phoenix-python", default="/tmp/phoenix-venv/bin/python")
    parser.add_argument(
        "--phoenix-drain",
        type=float,
        default=60.0,
        help="max seconds to wait for Phoenix to persist what it acknowledged",
    )
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="tracescore-bench-"))
    print(f"{os.cpu_count()} CPUs, {args.clients} clients, {args.seconds:g} s per case")
    ours: dict[tuple[str, int], Result] = {}
    try:
        if not args.no_sqlite:
            print("tracescore, SQLite (WAL):", flush=True)
            ours = bench_tracescore(
                f"sqlite:///{workdir / 'sqlite' / 'bench.db'}", args, workdir / "sqlite"
            )
        if args.pg:
            print(f"tracescore, PostgreSQL ({args.pg.rsplit('@', 1)[-1]}):", flush=True)
            pg = bench_tracescore(args.pg, args, workdir / "pg")
            ours = ours or pg
        if args.peer == "phoenix":
            print("Arize Phoenix (SQLite):", flush=True)
            theirs = bench_phoenix(args, workdir / "phoenix")
            for key, rate in theirs.items():
                if key in ours and rate > 0:
                    print(
                        f"  ratio tracescore/phoenix {key[0]} x{key[1]}: "
                        f"{ours[key].spans_per_second / rate:,.0f}x"
                    )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
