"""What a binding's ``limits`` cost per judged run: one reservation (admission under the
binding's lock) and its settlement, on a real database.

Each of ``--workers`` threads admits and settles runs of one binding as fast as it can for
``--seconds``, with ``per_minute`` and ``usd_per_day`` set high enough never to refuse; it
prints admissions per second and the latency of an admission (p50, p99). A judge call takes
hundreds of milliseconds and a provider allows some thousands a minute, so this only has to be
far from either.

    python benchmarks/judge_limits.py                                  # a temporary SQLite file
    python benchmarks/judge_limits.py --pg --workers 8                # a fresh PostgreSQL database
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.databases import fresh_pg_database
from tracescore.pipeline.config import LimitsConfig
from tracescore.pipeline.limits import BindingLimiter
from tracescore.store import open_store


def _run(db_url: str, workers: int, seconds: float) -> None:
    store = open_store(db_url)
    limiter = BindingLimiter(
        store.engine, "bench", LimitsConfig(per_minute=10**9, usd_per_day=10.0**9)
    )
    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def work() -> None:
        mine = []
        while time.monotonic() < deadline:
            started = time.perf_counter()
            admission = asyncio.run(limiter.admit())
            mine.append(time.perf_counter() - started)
            limiter.settle(admission, 0.001)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies.sort()
    print(
        f"{store.dialect}, {workers} workers: {len(latencies) / seconds:,.0f} runs admitted and "
        f"settled/s; admission p50 {statistics.median(latencies) * 1000:.1f} ms, "
        f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms"
    )
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--pg", action="store_true", help="a fresh database on the test server")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    if args.pg:
        with fresh_pg_database() as url:
            _run(url, args.workers, args.seconds)
    elif args.db:
        _run(args.db, args.workers, args.seconds)
    else:
        with tempfile.TemporaryDirectory() as directory:
            _run(f"sqlite:///{directory}/bench.db", args.workers, args.seconds)


if __name__ == "__main__":
    main()
