"""Trace-wide reads in processes of their own, away from the process that acknowledges ingest.

A trace page and ``/api/v1/traces/{id}`` and ``…/runs`` load a trace (as much of it as the read
limit allows, :mod:`tracescore.store.trace_cut`), rebuild its runs and turn them into HTML or
JSON: for a 20,000-span trace, tens of seconds of pure Python and tens of MB. Run in the service's threads, that work holds the GIL the event loop needs to
answer ``/v1/traces``, so every acknowledgement waited on it (up to 8 s measured). Here it runs
in ``server.read_processes`` processes (spawned at the first read of a big trace), each with its own
connection to the store; the service's process only awaits the finished bytes (cheap to pass
back, whatever the trace holds). The processes are ended (killed: they hold nothing to save,
and a process left to exit by itself first spends seconds freeing a huge trace's objects, still
holding them beside its successor) once no read has come for :data:`READER_IDLE` seconds, and
after :data:`TASKS_PER_PROCESS` reads once none is running, so the memory one huge trace took is
returned to the system: a 20,000-span trace's runs added 315 MB that stayed with the process
before (docs/benchmarks.md). A reader process runs without the
cyclic garbage collector: a rebuild makes millions of objects that reference counting frees,
and the collector's passes over them were most of a 20,000-span trace's time (11 s of 15);
what cycles a read leaves go with the process.

``…/runs`` comes in pages: the runs of the last trace read are kept (one trace) while a client
follows ``next_cursor``, so a page costs its JSON, not another rebuild. They are kept as their
JSON documents, each made as its run is built (:func:`~tracescore.extract.iter_runs`), never
as run objects all at once: a 20,000-span trace's runs are 27 MB of JSON and were 220 MB of
objects.

With ``read_processes: 0``, or a store only this process can open (an in-memory SQLite), the
same functions run in a thread instead, as they do for traces of fewer than
:data:`PROCESS_SPANS` spans.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import HTTPException
from fastapi.concurrency import run_in_threadpool

from tracescore.config import Config
from tracescore.conversations.reads import conversations_of_trace
from tracescore.cursors import decode_cursor, encode_cursor
from tracescore.extract import iter_runs, run_document
from tracescore.extract.declared import claim_order
from tracescore.extract.linked import read_with_steps
from tracescore.pipeline.recomputed_steps import StepsRecompute
from tracescore.store import SpanStore, open_store
from tracescore.store.call_links import StoredLinks
from tracescore.times import with_utc_text
from tracescore.web.cache import ExpiringCache
from tracescore.web.overview_render import overview_html
from tracescore.web.rendering import render
from tracescore.web.trace_json import SEEN, RunsPage, log_json, span_json
from tracescore.web.trace_view import trace_page

TASKS_PER_PROCESS = 50
"""Reads a reader process serves before it is replaced by a fresh one."""
READER_IDLE = 10.0
"""Seconds without a read after which the reader processes end, returning what a huge trace
took (a client paging through its runs asks again within a second, and keeps them)."""
PAGE_PROCESS_AFTER = 3
"""Overview renders within :data:`PAGE_PROCESS_WITHIN` seconds that start the overview's own
process; until then it is rendered in a thread. One viewer now and then costs less than a
process (~70 MB and a second of start-up), but a tab left open re-fetches the page each time
the live version moves, and each render in a thread held the GIL the acks need for tens of ms:
200 tabs behind the old threshold (20 renders, about 40 s of them) kept acks' p99 above twice
idle until it was reached."""
PAGE_PROCESS_WITHIN = 30.0
READER_NICENESS = 5
"""How much lower than its service a reader process is scheduled (``nice``): a rendering page
gives way to ingest's acknowledgements, yet still gets CPU when the machine has some."""
PROCESS_SPANS = 1_000
"""Traces with this many spans or more are read in a reader process (a 1,000-span trace's runs
take about a second to rebuild on a busy 2-core machine); smaller ones in a thread."""


@dataclass(frozen=True, slots=True)
class _RunJson:
    """A run as ``…/runs`` filters and pages it: its kind, span id and primary flag, and its
    JSON document (``select_runs``' for it), which a page joins as it is."""

    kind: str
    span_id: str
    primary: bool
    document: bytes


@dataclass(frozen=True, slots=True)
class _TraceRuns:
    """A trace's runs as ``…/runs`` pages them, and why they are those of part of the trace
    (``Trace.cut``), or None."""

    runs: list[_RunJson]
    cut: str | None


class TraceReads:
    """The trace-wide reads of one store and configuration, as plain functions of a trace id,
    and the overview page (rendered off the ingest path too: see :mod:`.overview`)."""

    def __init__(self, config: Config, store: SpanStore) -> None:
        self.store = store
        self.bindings = [binding.name for binding in config.scorers]
        self.rules = list(config.alerts.rules)
        self.aggregates = ExpiringCache()
        self.conventions = claim_order(config.conventions)
        self.conversation_attributes = config.conversations.id_attributes
        self.recompute = StepsRecompute(config)
        self._kept: tuple[tuple[str, int, float], _TraceRuns] | None = None

    def trace_json(self, trace_id: str) -> bytes | None:
        """``/api/v1/traces/{id}``'s document, or None if the trace has no spans stored (the
        runs kept for paging let go first, as for the page)."""
        self._kept = None
        trace = self.store.load_trace(trace_id)
        if trace is None:
            return None
        summary = self.store.trace_summary(trace_id)
        return orjson.dumps(
            {
                "trace_id": trace.trace_id,
                "summary": with_utc_text(summary.to_dict(), *SEEN) if summary else None,
                "spans": [span_json(s) for s in trace.spans],
                "logs": [log_json(r) for r in trace.logs],
                "cut": trace.cut,
            }
        )

    def runs_json(
        self, trace_id: str, primary: bool, kinds: Sequence[str], page: RunsPage | None = None
    ) -> bytes | None:
        """``…/runs``'s document, or None if the trace has no spans stored: all the runs kept
        by the filter as an array, or with ``page`` one page of them as ``{items,
        next_cursor, cut}`` (``cut``: why the runs are those of part of the trace, or null).
        ValueError for a cursor that is not one of this trace's."""
        read = self._runs(trace_id)
        if read is None:
            return None
        kept = [
            run
            for run in read.runs
            if (run.primary or not primary) and (not kinds or run.kind in kinds)
        ]
        if page is None:
            return _array(kept)
        start = _resume(kept, page.cursor) if page.cursor else 0
        items = kept[start : start + page.limit]
        end = start + len(items)
        next_cursor = (
            encode_cursor(str(end), items[-1].kind, items[-1].span_id)
            if items and end < len(kept)
            else None
        )
        return (
            b'{"items":'
            + _array(items)
            + b',"next_cursor":'
            + orjson.dumps(next_cursor)
            + b',"cut":'
            + orjson.dumps(read.cut)
            + b"}"
        )

    def _runs(self, trace_id: str) -> _TraceRuns | None:
        """The trace's runs, rebuilt unless they are the ones kept from the last read and the
        trace has not changed since (same span count and last write)."""
        summary = self.store.trace_summary(trace_id)
        key = (trace_id, summary.span_count, summary.last_seen) if summary else None
        if key is not None and self._kept is not None and self._kept[0] == key:
            return self._kept[1]
        trace = self.store.load_trace(trace_id)
        if trace is None:
            return None
        runs = _TraceRuns(
            [
                _RunJson(
                    run.kind, run.span_id, run.primary, _exact(orjson.dumps(run_document(run)))
                )
                for run in read_with_steps(
                    trace,
                    StoredLinks.of(self.store),
                    functools.partial(
                        iter_runs,
                        conventions=self.conventions,
                        conversation_attributes=self.conversation_attributes,
                    ),
                )
            ],
            trace.cut,
        )
        self._kept = (key, runs) if key is not None else None
        return runs

    def overview(self, params: dict[str, str], context: dict[str, Any]) -> tuple[int, str]:
        """The overview's status and HTML, or 422 and why for a view it cannot show (as
        values: an HTTPException does not cross back from a process)."""
        try:
            return 200, overview_html(
                self.store.engine, self.bindings, self.rules, self.aggregates, context, params
            )
        except HTTPException as exc:
            return exc.status_code, str(exc.detail)

    def trace_page(self, trace_id: str, context: dict[str, Any]) -> str | None:
        """The trace page's HTML, or None if neither spans nor scores are stored for it. The
        runs kept for paging are let go first: the page rebuilds its own, and holding both
        of a huge trace at once was most of a read's peak."""
        self._kept = None
        data = trace_page(self.store, trace_id, self.conventions, self.recompute)
        if data is None:
            return None
        with self.store.engine.connect() as connection:
            conversations = conversations_of_trace(connection, trace_id)
        return render(
            "trace.html", current="trace.html", **context, **data, conversations=conversations
        )


def _exact(document: bytes) -> bytes:
    """``document`` copied into a buffer of its size: orjson's bytes keep the capacity it wrote
    them in, at least 4 KB, which made 20,000 runs' 27 MB of JSON take 163 MB."""
    return bytes(memoryview(document))


def _array(runs: list[_RunJson]) -> bytes:
    """The runs' documents as a JSON array, byte for byte ``orjson.dumps`` of the list."""
    return b"[" + b",".join(run.document for run in runs) + b"]"


def _resume(runs: list[_RunJson], cursor: str) -> int:
    """Where the page after ``cursor`` starts in ``runs``: after the run it names, looked up
    by kind and span id if the trace has grown since (runs may have moved)."""
    offset, kind, span_id = decode_cursor(cursor, 3)
    if offset.isdigit() and 0 < int(offset) <= len(runs):
        last = runs[int(offset) - 1]
        if (last.kind, last.span_id) == (kind, span_id):
            return int(offset)
    for index, run in enumerate(runs):
        if (run.kind, run.span_id) == (kind, span_id):
            return index + 1
    raise ValueError("cursor: not a next_cursor of this trace's runs (start again without one)")


_reads: TraceReads | None = None
"""A reader process's own :class:`TraceReads` (set by :func:`_start`)."""


def _start(config: Config, url: str, niceness: int) -> None:
    """A reader process's set-up. It ignores the terminal's Ctrl-C (its service ends it) and
    exits when its service has gone, however that ended (a SIGKILL runs nothing of the
    service): it holds nothing to save. It runs at ``niceness`` (its service's plus
    :data:`READER_NICENESS`): where the machine is short of CPU, what a page waits for yields
    to what an exporter waits for. Its service has set that already where it could (see
    :meth:`ReadProcesses._lower`), before the second of imports a new process starts with."""
    global _reads
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpriority(os.PRIO_PROCESS, 0, niceness)
    gc.disable()  # see the module's docstring
    parent = multiprocessing.parent_process()
    if parent is not None and parent.sentinel is not None:
        threading.Thread(
            target=_exit_with, args=(parent.sentinel,), name="parent watch", daemon=True
        ).start()
    _reads = TraceReads(
        config, open_store(url, create=False, read_limit=config.assembly.read_limit())
    )


def _exit_with(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(0)


def _started() -> None:
    """A first task: done once the process has started (its initializer has run)."""


def _call(method: str, *args: Any) -> Any:
    assert _reads is not None, "a reader process starts with _start"
    return getattr(_reads, method)(*args)


class ReadProcesses:
    """Runs :class:`TraceReads` methods in reader processes (or a thread: see the module)."""

    def __init__(self, config: Config, store: SpanStore) -> None:
        self._config = config
        self._url = store.engine.url.render_as_string(hide_password=False)  # the store served
        self._local = TraceReads(config, store)
        in_memory = store.dialect == "sqlite" and store.engine.url.database in (
            None,
            "",
            ":memory:",
        )
        self._count = 0 if in_memory else config.server.read_processes
        self._niceness = min(os.getpriority(os.PRIO_PROCESS, 0) + READER_NICENESS, 19)
        self._pool: ProcessPoolExecutor | None = None
        self._reading = 0
        """Reads in the reader processes now: they end only once none is."""
        self._served = 0
        """Reads the reader processes have served since they started."""
        self._idle: asyncio.TimerHandle | None = None
        self._pages: ProcessPoolExecutor | None = None
        self._pages_started: Future[None] | None = None
        self._renders: deque[float] = deque(maxlen=PAGE_PROCESS_AFTER)

    def _processes(self) -> ProcessPoolExecutor:
        """Started on first use: a service that reads no big trace spawns none."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self._count,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start,
                initargs=(self._config, self._url, self._niceness),
            )
        return self._pool

    def _page_process(self) -> ProcessPoolExecutor | None:
        """The overview's process once it has started, else None (the overview is rendered in
        a thread meanwhile). Started once :data:`PAGE_PROCESS_AFTER` renders came within
        :data:`PAGE_PROCESS_WITHIN` seconds, and kept (not replaced after
        :data:`TASKS_PER_PROCESS`: it renders about once a second while tabs are open, and
        holds no more than the page)."""
        self._renders.append(now := time.monotonic())
        frequent = len(self._renders) == PAGE_PROCESS_AFTER
        if self._pages is None and frequent and now - self._renders[0] <= PAGE_PROCESS_WITHIN:
            self._pages = ProcessPoolExecutor(
                1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start,
                initargs=(self._config, self._url, self._niceness),
            )
            self._pages_started = self._pages.submit(_started)
            self._lower(self._pages)
        started = self._pages_started is not None and self._pages_started.done()
        return self._pages if started else None

    async def overview(self, params: dict[str, str], context: dict[str, Any]) -> tuple[int, str]:
        """:meth:`TraceReads.overview`, in the overview's process (a thread without one)."""
        process = self._page_process() if self._count else None
        if process is None:
            return await run_in_threadpool(self._local.overview, params, context)
        shown: tuple[int, str] = await self._in(process, "overview", params, context)
        return shown

    # Each returns what its TraceReads method does: _run passes a method by name, to a process.
    async def trace_json(self, trace_id: str) -> bytes | None:
        body: bytes | None = await self._run("trace_json", trace_id)
        return body

    async def runs_json(
        self, trace_id: str, primary: bool, kinds: Sequence[str], page: RunsPage | None = None
    ) -> bytes | None:
        body: bytes | None = await self._run("runs_json", trace_id, primary, kinds, page)
        return body

    async def trace_page(self, trace_id: str, context: dict[str, Any]) -> str | None:
        page: str | None = await self._run("trace_page", trace_id, context)
        return page

    async def _run(self, method: str, trace_id: str, *args: Any) -> Any:
        """The :class:`TraceReads` ``method`` for ``trace_id``: in a reader process if the
        trace has :data:`PROCESS_SPANS` spans or more, else here, in a thread (a small trace
        costs less than passing it to a process, and never waits for one to start)."""
        summary = await run_in_threadpool(self._local.store.trace_summary, trace_id)
        if self._count == 0 or summary is None or summary.span_count < PROCESS_SPANS:
            return await run_in_threadpool(getattr(self._local, method), trace_id, *args)
        self._reading += 1
        try:
            return await self._in(self._processes(), method, trace_id, *args)
        finally:
            self._reading, self._served = self._reading - 1, self._served + 1
            if self._idle is not None:
                self._idle.cancel()
            if self._served >= TASKS_PER_PROCESS * self._count:
                self._end_if_idle()
            else:
                loop = asyncio.get_running_loop()
                self._idle = loop.call_later(READER_IDLE, self._end_if_idle)

    def _end_if_idle(self) -> None:
        """Ends the reader processes if no read is running (the next read starts new ones)."""
        if self._reading == 0 and self._pool is not None:
            _end(self._pool)
            self._pool, self._served = None, 0

    async def _in(self, pool: ProcessPoolExecutor, method: str, *args: Any) -> Any:
        """``method`` of the :class:`TraceReads` of one of ``pool``'s processes."""
        answer = asyncio.get_running_loop().run_in_executor(pool, _call, method, *args)
        self._lower(pool)
        return await answer

    def _lower(self, pool: ProcessPoolExecutor) -> None:
        """Lowers the priority of ``pool``'s processes from here as soon as they exist (a
        submit starts any missing one): a new process spends about a second of CPU importing
        before its own set-up runs, and on a 2-core machine that second, at the service's
        priority, showed in the acks (p99 2.6x idle in the round a page process started)."""
        for process in list((pool._processes or {}).values()):  # no public way before 3.14
            if process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.setpriority(os.PRIO_PROCESS, process.pid, self._niceness)

    def close(self) -> None:
        """Ends the reader processes at once: a read still running (a huge trace can take a
        minute) would otherwise hold the service's exit, which waits for its pool's processes.
        Its requester has gone with the server anyway."""
        for pool in (self._pool, self._pages):
            if pool is not None:
                _end(pool)
        self._pool = self._pages = None
        if self._idle is not None:
            self._idle.cancel()


def _end(pool: ProcessPoolExecutor) -> None:
    """Ends ``pool``'s processes now, whatever they run: a reader holds nothing to save, and
    one left to exit by itself spent seconds freeing the objects of a huge trace first."""
    processes = list((pool._processes or {}).values())  # no public way before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
