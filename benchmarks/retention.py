"""Ingest latency while retention prunes a large backlog, and how fast it prunes.

Seeds a SQLite file (or, with ``--db``, an empty PostgreSQL database) with ``--spans`` expired
spans (scored traces of ``--per-trace`` spans, ~``--attribute-bytes`` of attributes each), then
measures the latency of the writes ingest makes (``SpanStore.write`` of one export request of
``--request-spans`` fresh spans, what an unpacker does per acknowledged request) at ``--rate``
requests per second:

1. for ``--seconds`` with nothing else running (the baseline);
2. while a retention pass prunes every seeded span in another process, as a service's
   pruning replica would, until the pass (and the space reclaim after it) ends.

Prints p50/p99/max of both, and the pass's rows per second. The acknowledgement of an OTLP
request on SQLite writes the spool file only, so a prune never delays it: the latency below is
how far storage lags, the figure a prune could hurt.

    python benchmarks/retention.py                        # 1,000,000 spans
    python benchmarks/retention.py --spans 200000 --batch-size 5000
    python benchmarks/retention.py --db postgresql://postgres@127.0.0.1/bench
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.sql_numbers import NUMBERS
from tracescore.retention.config import RetentionConfig
from tracescore.retention.prune import Pruner
from tracescore.spans import Resource, Scope, Span
from tracescore.store import open_store
from tracescore.store.packed import pack
from tracescore.store.vacuum import reclaim_space

DAY_NS = 86_400 * 10**9


_HEX = {
    "sqlite": "unhex(printf('%0{width}x', {value}))",
    "postgresql": "decode(lpad(to_hex({value}), {width}, '0'), 'hex')",
}


def seed(engine: Engine, spans: int, per_trace: int, attribute_bytes: int) -> None:
    """Expired, scored traces written with plain SQL (a million spans in seconds, where ingest
    would take a minute)."""
    dialect = engine.dialect.name
    prefix, numbers = NUMBERS[dialect]

    def hex_id(value: str, width: int) -> str:
        return _HEX[dialect].format(value=value, width=width)

    traces = spans // per_trace
    values = {
        "per": per_trace,
        "old": time.time_ns() - 30 * DAY_NS,
        "attributes": pack('{"padding": "' + "x" * attribute_bytes + '"}'),
        "resource": b"r",
        "scope": b"s",
    }
    with engine.begin() as db:
        if dialect == "sqlite":  # ids are stored as bytes; SQLite before 3.41 has no unhex()
            driver = db.connection.driver_connection
            driver.create_function("unhex", 1, bytes.fromhex, deterministic=True)  # type: ignore[union-attr]
        db.execute(text("INSERT INTO resources VALUES (1, :resource, '{}')"), values)
        db.execute(text("INSERT INTO scopes VALUES (1, :scope, 'bench', '1', '{}')"), values)
        db.execute(
            text(
                f"""{prefix} INSERT INTO traces (trace_id, service_name, root_name, has_root,
                span_count, log_count, generation, start_time_ns, end_time_ns, first_seen,
                last_seen,
                pending_since, state, scored_generation, attempts)
            SELECT {hex_id("i", 32)}, 'bench', 'root', 1 = 1, :per, 0, 1, :old + i,
                :old + i + 1000, 0, 0, 0, 'scored', 1, 0 FROM {numbers}"""
            ),
            {**values, "count": traces},
        )
        db.execute(
            text(
                f"""{prefix} INSERT INTO spans (trace_id, span_id, parent_span_id, name, kind,
                start_time_ns, duration_ns, status_code, status_message, trace_state, flags,
                attributes, resource_id, scope_id)
            SELECT {hex_id("i / :per", 32)}, {hex_id("i % :per + 1", 16)}, NULL, 'step', 1,
                :old + i / :per, 1000, 0, '', '', 0, :attributes, 1, 1 FROM {numbers}"""
            ),
            {**values, "count": traces * per_trace},
        )
    if dialect == "postgresql":  # the statistics autovacuum keeps on a live database
        with engine.begin() as db:
            db.execute(text("ANALYZE"))


def measure_ingest(
    url: str, rate: float, request_spans: int, until: threading.Event
) -> list[float]:
    """Write one request of fresh spans every 1/``rate`` s until ``until``; latencies in ms."""
    store = open_store(url)
    rng = random.Random(1)
    resource, scope = Resource({"service.name": "bench"}), Scope("bench")
    latencies: list[float] = []
    due = time.perf_counter()
    while not until.is_set():
        now_ns = time.time_ns()
        trace_id = rng.randbytes(16).hex()
        spans = [
            Span(
                trace_id,
                rng.randbytes(8).hex(),
                None,
                "step",
                1,
                now_ns - 1000,
                now_ns,
                {"padding": "x" * 200},
                resource,
                scope,
            )
            for _ in range(request_spans)
        ]
        started = time.perf_counter()
        store.write(spans)
        latencies.append((time.perf_counter() - started) * 1000)
        due += 1 / rate
        time.sleep(max(0.0, due - time.perf_counter()))
    store.close()
    return latencies


def prune(url: str, batch_size: int, result: multiprocessing.Queue) -> None:
    """One pass over the seeded spans, then the reclaim of their pages (another process)."""
    store = open_store(url)
    held: list[float] = []

    @contextmanager
    def timed_transaction() -> Iterator[Connection]:
        """The store's write transaction, timed from holding the write lock to the commit."""
        with store.write_transaction() as connection:
            started = time.perf_counter()
            yield connection
        held.append((time.perf_counter() - started) * 1000)

    config = RetentionConfig(spans="7d", batch_size=batch_size)
    started = time.perf_counter()
    report = Pruner(timed_transaction, config).run()
    pruned = time.perf_counter()
    reclaimed = reclaim_space(store.engine, timed_transaction)
    result.put(
        (
            report.removed["spans"],
            pruned - started,
            time.perf_counter() - pruned,
            reclaimed,
            sorted(held),
        )
    )
    store.close()


def summary(name: str, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{name}: {len(ordered)} writes, p50 {statistics.median(ordered):.1f} ms, "
        f"p99 {p99:.1f} ms, max {ordered[-1]:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--per-trace", type=int, default=10)
    parser.add_argument("--attribute-bytes", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=RetentionConfig().batch_size)
    parser.add_argument("--rate", type=float, default=20.0, help="ingest requests per second")
    parser.add_argument("--request-spans", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20.0, help="baseline duration")
    parser.add_argument("--db", help="an empty PostgreSQL database instead of a SQLite file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "retention.db"
        url = args.db or f"sqlite:///{path}"
        store = open_store(url)
        started = time.perf_counter()
        seed(store.engine, args.spans, args.per_trace, args.attribute_bytes)
        store.close()
        size = path.stat().st_size if path.exists() else 0
        print(
            f"seeded {args.spans:,} expired spans in {time.perf_counter() - started:.1f} s"
            + (f" ({size / 1e6:.0f} MB)" if size else "")
        )

        stop = threading.Event()
        threading.Timer(args.seconds, stop.set).start()
        print(
            summary("ingest alone", measure_ingest(url, args.rate, args.request_spans, stop)),
            flush=True,
        )

        spawn = multiprocessing.get_context("spawn")  # a fork would copy the writer's locks
        result: multiprocessing.Queue = spawn.Queue()
        pruner = spawn.Process(target=prune, args=(url, args.batch_size, result))
        stop = threading.Event()
        latencies: list[float] = []

        def write() -> None:
            latencies.extend(measure_ingest(url, args.rate, args.request_spans, stop))

        writer = threading.Thread(target=write)
        writer.start()
        pruner.start()
        removed, prune_seconds, reclaim_seconds, reclaimed, held = result.get()
        pruner.join()
        stop.set()
        writer.join()
        print(summary("ingest during the prune", latencies))
        print(
            f"pruned {removed:,} spans in {prune_seconds:.1f} s ({removed / prune_seconds:,.0f} "
            f"spans/s, batches of {args.batch_size})"
        )
        if size:
            print(
                f"{reclaimed / 1e6:.0f} MB returned to the file system in "
                f"{reclaim_seconds:.1f} s; file {path.stat().st_size / 1e6:.0f} MB "
                f"(was {size / 1e6:.0f} MB)"
            )
        print(
            f"pruner's write transactions: {len(held)}, p50 {statistics.median(held):.1f} ms, "
            f"p99 {held[int(len(held) * 0.99)]:.1f} ms, max {held[-1]:.1f} ms"
        )


if __name__ == "__main__":
    main()
