"""Memory of reading one huge trace: what the service's processes add while the runs of a
``--spans``-span trace are read, and what stays afterwards.

Starts the real ``tracescore serve`` (SQLite in a temporary directory, or ``--db``) at its default
settings, stores one wide agent trace (an agent and ``--spans`` chat and tool children, sent in
parts of 2,000), then reads it as a client does: the first page of
``/api/v1/traces/{id}/runs``, every further page by ``next_cursor``, and the trace's page. The
resident memory of the service and every process it started (reader processes included) is
summed every 50 ms; printed are the sum before the reads, its peak during them (and how much that
adds), and what it is ``--after`` seconds after the last read (and how much of the addition
stayed).

With ``--paths``, each read path that loads a trace is measured alone instead, in a fresh
process (``tests/support/huge_trace.py``): the trace is written straight to the database, then
for each path a process sets itself up, reads the trace once, and reports what the read added to
its resident memory at the peak and after its results were dropped, and whether the read was
cut by the read limit (``assembly.max_trace_spans``, ``assembly.max_trace_bytes``: a trace
larger than them is read in part, so ``--spans 200000`` costs what the limit allows).
``--text N`` makes every child span N characters longer (long prompts: the byte limit).

    python benchmarks/trace_reads.py                 # 20,000 spans
    python benchmarks/trace_reads.py --spans 5000 --after 5
    python benchmarks/trace_reads.py --paths all [--db postgresql://…/empty_db]
    python benchmarks/trace_reads.py --paths all --spans 200000 [--text 2000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from tests.support.huge_trace import PATHS, measure, store_wide_trace
from tests.support.overload import proc_status_mb
from tests.support.server_process import process_tree, start_server
from tests.support.web_traces import wide_trace_json

PART = 2_000


def tree_rss_mb(pid: int) -> float:
    """The resident memory of process ``pid`` and all its descendants, in MiB."""
    total = 0.0
    for member in process_tree(pid):
        try:
            total += proc_status_mb(member, "VmRSS")
        except (OSError, ValueError):  # ended meanwhile
            continue
    return total


class Sampler(threading.Thread):
    """The service tree's RSS every 50 ms, keeping the peak."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak = pid, 0.0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.05):
            self.peak = max(self.peak, tree_rss_mb(self.pid))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--text", type=int, default=0, help="characters more per child span")
    parser.add_argument("--after", type=float, default=15.0, help="seconds idle after the reads")
    parser.add_argument(
        "--paths", help=f"comma-separated, or all: each of {', '.join(PATHS)} in a fresh process"
    )
    args = parser.parse_args()
    if args.paths:
        paths = PATHS if args.paths == "all" else tuple(args.paths.split(","))
        each_path(args.db, args.spans, args.text, paths)
        return

    with (
        tempfile.TemporaryDirectory() as scratch,
        start_server(
            Path(scratch), db_url=args.db, idle_timeout=0.3, scoring_processes=None
        ) as server,
        httpx.Client(base_url=server.base_url, timeout=600) as client,
    ):
        pid = server.process.pid
        trace_id = uuid.uuid4().hex
        for first in range(0, args.spans, PART):
            part = wide_trace_json(trace_id, min(PART, args.spans - first), first, args.text)
            posted = client.post(
                "/v1/traces", content=part, headers={"content-type": "application/json"}
            )
            assert posted.status_code == 200, posted.text[:300]
        while True:  # stored once the unpacker has written every part (its summary says so:
            # the trace's own document would be a read of it before the measured ones)
            listed = client.get("/api/v1/traces", params={"limit": 1}).json()["items"]
            if listed and listed[0]["span_count"] > args.spans:
                break
            time.sleep(0.5)
        time.sleep(3.0)  # the scoring of the trace settles
        before = tree_rss_mb(pid)
        sampler = Sampler(pid)
        sampler.start()
        started = time.perf_counter()
        pages, cursor = 0, None
        while pages == 0 or cursor:
            answer = client.get(
                f"/api/v1/traces/{trace_id}/runs",
                params={"limit": 200, **({"cursor": cursor} if cursor else {})},
            )
            assert answer.status_code == 200, answer.text[:300]
            pages, cursor = pages + 1, answer.json()["next_cursor"]
        runs_read = time.perf_counter() - started
        page = client.get(f"/ui/traces/{trace_id}")
        assert page.status_code == 200, page.text[:300]
        read = time.perf_counter() - started
        time.sleep(args.after)
        sampler.stopping.set()
        sampler.join()
        after = tree_rss_mb(pid)
        print(
            f"{args.spans:,}-span trace: {pages} pages of runs in {runs_read:.1f} s, then its page "
            f"({read - runs_read:.1f} s); service RSS (all processes) {before:.0f} MB before, "
            f"peak {sampler.peak:.0f} MB (+{sampler.peak - before:.0f}), {after:.0f} MB "
            f"{args.after:g} s after ({after - before:+.0f})",
            flush=True,
        )


def each_path(db: str | None, spans: int, text: int, paths: tuple[str, ...]) -> None:
    """The ``--paths`` mode: one trace stored, each path measured in a fresh process."""
    with tempfile.TemporaryDirectory() as scratch:
        url = db or f"sqlite:///{scratch}/huge.db"
        started = time.perf_counter()
        trace_id = store_wide_trace(url, spans, text)
        print(f"stored in {time.perf_counter() - started:.1f} s", flush=True)
        for path in paths:
            figures = measure(url, trace_id, (path,))[path]  # a fresh process each
            print(
                f"{spans:,}-span trace (+{text} characters each), {path}: "
                f"{figures['base']:.0f} MB before, +{figures['peak']:.0f} MB at the peak, "
                f"{figures['after']:+.0f} MB after; {figures['cut'] or 'read whole'}",
                flush=True,
            )


if __name__ == "__main__":
    main()
