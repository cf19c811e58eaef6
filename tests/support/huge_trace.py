"""One huge agent trace in a real database, and the memory each read path that loads it takes,
measured in a process of its own.

Shared by ``benchmarks/trace_reads.py --paths`` (the figures in docs/benchmarks.md) and
``tests/web/test_huge_trace_memory.py`` (a budget that fails if it regresses). A process of its
own, because a process's memory is what the budget is about and an earlier read in the same one
would hide or inflate it: a parent imports everything once, then forks a child per path (an
import costs seconds of CPU; a fork, milliseconds). The child opens the store, reads the trace's
summary, then takes its resident set as the base, resets its kernel-kept peak (``VmHWM``, by
writing 5 to ``/proc/self/clear_refs``), runs the path once, and reports the peak and the
resident set once the path's results are dropped (and collected) as growth over the base.

    python -m tests.support.huge_trace URL TRACE_ID PATH...  # per path: {"base": …, "peak": …, "after": …, "cut": …}
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import subprocess
import sys
import traceback
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from tests.support.web_traces import wide_trace_json
from tracescore.config import Config
from tracescore.ingest.decode import decode_traces_json
from tracescore.offline.rescore import Backfill
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.config import ScorerBinding, WorkersConfig
from tracescore.pipeline.rescore import BindingRescore
from tracescore.pipeline.rescore_config import RescoreOnChange
from tracescore.pipeline.scoring import Scoring
from tracescore.pipeline.scoring_worker import ScoringWorker
from tracescore.store import open_store
from tracescore.store.trace_queue import TraceClaim
from tracescore.web.readers import TraceReads
from tracescore.web.router import LIVE_POLL_MS
from tracescore.web.trace_json import RunsPage

ROOT = Path(__file__).resolve().parents[2]
PART = 2_000
PATHS = ("runs", "page", "worker", "worker_all", "rescore", "backfill")
"""``runs``: every page of ``/api/v1/traces/{id}/runs?limit=200`` as a reader process serves
them; ``page``: the trace page; ``worker``: a scoring worker's batch of that one trace (load,
extract, the default code scorers); ``worker_all``: the same with bindings on its LLM and tool
runs too (every run of the trace then held and scored); ``rescore``: ``rescore_on_change`` finding the agent run to
re-score; ``backfill``: ``tracescore score``'s look at the trace (its runs still to score)."""


def store_wide_trace(url: str, spans: int, text: int = 0) -> str:
    """Stores one agent trace of ``spans`` chat and tool children (plus the agent) at ``url``,
    each ``text`` characters longer (:func:`~tests.support.web_traces.wide_trace_json`), in
    parts of 2,000 as an exporter sends them, and returns its id."""
    store = open_store(url)
    trace_id = uuid.uuid4().hex
    try:
        for first in range(0, spans, PART):
            part = wide_trace_json(trace_id, min(PART, spans - first), first, text)
            store.write(decode_traces_json(part).spans)
    finally:
        store.close()
    return trace_id


def measure(url: str, trace_id: str, paths: Sequence[str]) -> dict[str, dict[str, Any]]:
    """What reading ``trace_id`` by each of ``paths`` takes in a process of its own: MiB of
    resident memory before (``base``), added at the peak (``peak``) and still added afterwards
    (``after``), and what the read said of a cut (``cut``: the note its result carried, or
    None), by path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.huge_trace", url, trace_id, *paths],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(paths)} read failed:\n{done.stderr[-3000:]}")
    return {
        path: json.loads(line) for path, line in zip(paths, done.stdout.splitlines(), strict=True)
    }


def _status_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    raise ValueError(key)


_CUT_ON_PAGE = re.compile(r"read the first [^<:]*: \d+\); raise it to read more of this trace")


def _reader(url: str, trace_id: str, path: str) -> Callable[[], tuple[Any, str | None]]:
    """The read ``path`` stands for, set up (store, objects) but not yet run; it
    returns what it kept and the cut its result says was made (None: read whole)."""
    config = Config()
    store = open_store(url, create=False)
    summary = store.trace_summary(trace_id)
    assert summary is not None, "the trace is stored"
    reads = TraceReads(config, store)
    every_kind = [
        *config.scorers,
        ScorerBinding(name="llm-tone", scorer="tone", target="llm"),
        ScorerBinding(name="tool-tone", scorer="tone", target="tool"),
    ]
    # Only the bindings the path uses are compiled (each compile warms the scorers up: 0.3 s
    # of CPU or more, which every child paid twice, the reads of pages included).
    kinds = every_kind if path == "worker_all" else config.scorers
    bindings = compile_bindings(kinds, {}, None) if path not in ("runs", "page") else []
    worker = ScoringWorker(store, Scoring(bindings, WorkersConfig(processes=0)), 60.0)

    def runs() -> tuple[int, str | None]:
        pages, cursor, cut = 0, None, None
        while pages == 0 or cursor:
            body = reads.runs_json(trace_id, False, [], RunsPage(limit=200, cursor=cursor))
            assert body is not None
            page = orjson.loads(body)
            pages, cursor, cut = pages + 1, page["next_cursor"], page["cut"]
        return pages, cut

    def page() -> tuple[int, str | None]:
        html = reads.trace_page(trace_id, {"auth": False, "poll_ms": LIVE_POLL_MS})
        assert html is not None
        said = _CUT_ON_PAGE.search(html)
        return len(html), said.group(0) if said else None

    def scoring() -> tuple[int, str | None]:
        claim = TraceClaim(trace_id, 1, summary.span_count, worker.owner, "token", 0.0)
        batch = worker._prepare([claim])
        assert not batch.failed, batch.failed
        rows = [row for trace in batch.done for row in trace.rows]
        return len(rows), next(
            (row["steps"].get("trace_cut") for row in rows if row["steps"]), None
        )

    def rescore() -> tuple[bool, str | None]:
        task = BindingRescore(worker.scoring, store, bindings[0], RescoreOnChange(), worker.owner)
        agent = f"{trace_id[:12]}0000"
        run = asyncio.run(asyncio.to_thread(task._run, trace_id, agent))
        assert run is not None
        return True, run.trace_cut

    def backfill() -> tuple[int, str | None]:
        pairs = Backfill(store, bindings)._todo(trace_id)[2]
        # the runs that ended before the cut are whole and carry no note: any other says it
        return len(pairs), next((run.trace_cut for _, run in pairs if run.trace_cut), None)

    chosen: dict[str, Callable[[], tuple[Any, str | None]]] = {
        "runs": runs,
        "page": page,
        "worker": scoring,
        "worker_all": scoring,
        "rescore": rescore,
        "backfill": backfill,
    }
    return chosen[path]


def _measured(url: str, trace_id: str, path: str) -> dict[str, Any]:
    """The figures of one read of ``path`` in this process (see the module)."""
    read = _reader(url, trace_id, path)
    if path in ("runs", "page"):
        gc.disable()  # as a reader process runs (tracescore.web.readers)
    base = _status_mb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    result, cut = read()
    peak = _status_mb("VmHWM") - base
    del result
    gc.collect()
    after = _status_mb("VmRSS") - base
    figures = {"base": round(base, 1), "peak": round(peak, 1), "after": round(after, 1)}
    return {**figures, "cut": cut}


def _in_child(url: str, trace_id: str, path: str) -> None:
    """Measures ``path`` in a forked child and prints its figures; fails if the child did."""
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            print(json.dumps(_measured(url, trace_id, path)), flush=True)
        except BaseException:  # noqa: BLE001 - reported by the parent's exit status
            traceback.print_exc()
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the {path} read failed")


def main() -> None:
    url, trace_id, *paths = sys.argv[1:]
    for path in paths:
        _in_child(url, trace_id, path)


if __name__ == "__main__":
    main()
