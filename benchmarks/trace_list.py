"""Reads in last-seen order on a database already holding traces: the trace list (its first
page, a page deep in it through the cursor, one service's) and the feedback scan's keys.

On PostgreSQL ``ix_traces_last_seen`` holds the settled traces only and these reads merge one
read a state (``store/traces.py``); run it on a database before and after its upgrade (or
with each build's code) to compare. Each figure is the median of ``--repeat`` reads.

    python benchmarks/trace_list.py --db postgresql://postgres@127.0.0.1/capacity
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import func, select

from tracescore.store import open_store
from tracescore.store.traces import LAST_TRACE_ID, TRACES, trace_keys


def median_ms(read: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        read()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a database holding traces")
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    store = open_store(args.db)
    try:
        with store.engine.connect() as connection:
            count, oldest = connection.execute(
                select(func.count(), func.min(TRACES.c.last_seen))
            ).one()
        deep = store.list_traces(limit=1, after=None)
        for _ in range(40):  # 40 pages of 50 in
            page = store.list_traces(limit=50, after=(deep[-1].last_seen, deep[-1].trace_id))
            deep = page or deep
        after = (deep[-1].last_seen, deep[-1].trace_id)
        service = deep[-1].service_name

        def scan() -> object:
            with store.engine.connect() as connection:
                return trace_keys(connection, (oldest, ""), (time.time(), LAST_TRACE_ID), 500)

        figures = {
            "first page of 50": median_ms(lambda: store.list_traces(limit=50), args.repeat),
            "a page 2,000 traces in": median_ms(
                lambda: store.list_traces(limit=50, after=after), args.repeat
            ),
            "one service's first page": median_ms(
                lambda: store.list_traces(limit=50, service=service), args.repeat
            ),
            "feedback scan, 500 keys": median_ms(scan, args.repeat),
        }
    finally:
        store.close()
    print(f"{store.engine.dialect.name}, {count:,} traces; median of {args.repeat} reads:")
    for name, ms in figures.items():
        print(f"  {name}: {ms:.2f} ms")


if __name__ == "__main__":
    main()
