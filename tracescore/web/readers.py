"""Trace-wide reads in processes of their own, away from the process that acknowledges ingest.

A trace page and ``/api/v1/traces/{id}`` and ``…/runs`` load every span of a trace, rebuild its
runs and turn them into HTML or JSON: for a 20,000-span trace, tens of seconds of pure Python
and tens of MB. Run in the service's threads, that work holds the GIL the event loop needs to
answer ``/v1/traces``, so every acknowledgement waited on it (up to 8 s measured). Here it runs
in ``server.read_processes`` processes (spawned at the first read of a big trace), each with its own
connection to the store; the service's process only awaits the finished bytes (cheap to pass
back, whatever the trace holds). A process is replaced after :data:`TASKS_PER_PROCESS` reads,
so the memory one huge trace took is returned to the system.

With ``read_processes: 0``, or a store only this process can open (an in-memory SQLite), the
same functions run in a thread instead, as they do for traces of fewer than
:data:`PROCESS_SPANS` spans.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import orjson
from fastapi.concurrency import run_in_threadpool

from tracescore.config import Config
from tracescore.conversations.reads import conversations_of_trace
from tracescore.extract import extract_runs, select_runs
from tracescore.extract.declared import claim_order
from tracescore.store import SpanStore, open_store
from tracescore.web.rendering import render
from tracescore.web.trace_view import trace_page
from tracescore.web.traces_api import log_json, span_json

TASKS_PER_PROCESS = 50
"""Reads a reader process serves before it is replaced by a fresh one."""
PROCESS_SPANS = 1_000
"""Traces with this many spans or more are read in a reader process (a 1,000-span trace's runs
take about a second to rebuild on a busy 2-core machine); smaller ones in a thread."""


class TraceReads:
    """The trace-wide reads of one store and configuration, as plain functions of a trace id."""

    def __init__(self, config: Config, store: SpanStore) -> None:
        self.store = store
        self.conventions = claim_order(config.conventions)
        self.conversation_attributes = config.conversations.id_attributes

    def trace_json(self, trace_id: str) -> bytes | None:
        """``/api/v1/traces/{id}``'s document, or None if the trace has no spans stored."""
        trace = self.store.load_trace(trace_id)
        if trace is None:
            return None
        summary = self.store.trace_summary(trace_id)
        return orjson.dumps({
            "trace_id": trace.trace_id,
            "summary": summary.to_dict() if summary else None,
            "spans": [span_json(s) for s in trace.spans],
            "logs": [log_json(r) for r in trace.logs],
        })  # fmt: skip

    def runs_json(self, trace_id: str, primary: bool, kinds: list[str]) -> bytes | None:
        """``/api/v1/traces/{id}/runs``'s document, or None if the trace has no spans stored."""
        trace = self.store.load_trace(trace_id)
        if trace is None:
            return None
        runs = extract_runs(
            trace, self.conventions, conversation_attributes=self.conversation_attributes
        )
        return orjson.dumps(select_runs(runs, primary=primary, kinds=kinds))

    def trace_page(self, trace_id: str, context: dict[str, Any]) -> str | None:
        """The trace page's HTML, or None if neither spans nor scores are stored for it."""
        data = trace_page(self.store, trace_id, self.conventions)
        if data is None:
            return None
        with self.store.engine.connect() as connection:
            conversations = conversations_of_trace(connection, trace_id)
        return render("trace.html", current="trace.html", **context, **data,
                      conversations=conversations)  # fmt: skip


_reads: TraceReads | None = None
"""A reader process's own :class:`TraceReads` (set by :func:`_start`)."""


def _start(config: Config, url: str) -> None:
    """A reader process's set-up. It ignores the terminal's Ctrl-C (its service ends it) and
    exits when its service has gone, however that ended (a SIGKILL runs nothing of the
    service): it holds nothing to save."""
    global _reads
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None and parent.sentinel is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), name="parent watch",
                         daemon=True).start()  # fmt: skip
    _reads = TraceReads(config, open_store(url, create=False))


def _exit_with(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(0)


def _call(method: str, *args: Any) -> Any:
    assert _reads is not None, "a reader process starts with _start"
    return getattr(_reads, method)(*args)


class ReadProcesses:
    """Runs :class:`TraceReads` methods in reader processes (or a thread: see the module)."""

    def __init__(self, config: Config, store: SpanStore) -> None:
        self._config = config
        self._url = store.engine.url.render_as_string(hide_password=False)  # the store served
        self._local = TraceReads(config, store)
        in_memory = store.dialect == "sqlite" and store.engine.url.database in (None, "", ":memory:")
        self._count = 0 if in_memory else config.server.read_processes
        self._pool: ProcessPoolExecutor | None = None

    def _processes(self) -> ProcessPoolExecutor:
        """Started on first use: a service that reads no big trace spawns none."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self._count, mp_context=multiprocessing.get_context("spawn"),
                initializer=_start, initargs=(self._config, self._url), max_tasks_per_child=TASKS_PER_PROCESS,
            )  # fmt: skip
        return self._pool

    async def trace_json(self, trace_id: str) -> bytes | None:
        return await self._run("trace_json", trace_id)

    async def runs_json(self, trace_id: str, primary: bool, kinds: list[str]) -> bytes | None:
        return await self._run("runs_json", trace_id, primary, kinds)

    async def trace_page(self, trace_id: str, context: dict[str, Any]) -> str | None:
        return await self._run("trace_page", trace_id, context)

    async def _run(self, method: str, trace_id: str, *args: Any) -> Any:
        """The :class:`TraceReads` ``method`` for ``trace_id``: in a reader process if the
        trace has :data:`PROCESS_SPANS` spans or more, else here, in a thread (a small trace
        costs less than passing it to a process, and never waits for one to start)."""
        summary = await run_in_threadpool(self._local.store.trace_summary, trace_id)
        if self._count == 0 or summary is None or summary.span_count < PROCESS_SPANS:
            return await run_in_threadpool(getattr(self._local, method), trace_id, *args)
        return await asyncio.get_running_loop().run_in_executor(
            self._processes(), _call, method, trace_id, *args
        )

    def close(self) -> None:
        """Ends the reader processes at once: a read still running (a huge trace can take a
        minute) would otherwise hold the service's exit, which waits for its pool's processes.
        Its requester has gone with the server anyway."""
        if self._pool is None:
            return
        processes = list((self._pool._processes or {}).values())  # no public way before 3.14
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        self._pool = None
