"""Process composition: the FastAPI app (OTLP/HTTP + read API), the OTLP/gRPC server and
background tasks, all in one asyncio event loop.

Other stages plug in without editing this module::

    service = Service(config)
    service.app.include_router(monitoring_router(service.store))
    service.add_background(lambda: pipeline_workers(service.store, config))
    service.run()

Background tasks start with the servers; on shutdown they are cancelled (then awaited) before
the gRPC server stops and the store closes. A task that dies is logged at once.

It runs past 400 lines because composing the processes' parts and their start and stop order
is one job; each part it composes lives in its own package.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from datetime import timedelta

import uvicorn
from fastapi import Depends, FastAPI, Request, Response
from fastapi.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from tracescore import helper_processes, metrics
from tracescore.apidocs import docs_router
from tracescore.assemble.promoter import promote_interval, promote_periodically
from tracescore.auth import ApiKeys, FailedAttempts, PasswordKeys, with_environment_keys
from tracescore.background import BackgroundFactory
from tracescore.config import Config, ServerConfig
from tracescore.conversations.api import conversations_router
from tracescore.feedback.api import feedback_router
from tracescore.feedback.scan import feedback_scan_task
from tracescore.ingest.api import ingest_router
from tracescore.ingest.grpc import start_grpc_server
from tracescore.ingest.http import LANGFUSE_TRACES_PATH, OTLP_PATHS, langfuse_router, otlp_router
from tracescore.ingest.http_bodies import BodyLimits, BodyReaders
from tracescore.ingest.intake import RETRY_AFTER_SECONDS, Intake
from tracescore.insights.api import insights_router
from tracescore.insights.task import PassRequests, insights_task
from tracescore.monitor.api import create_monitor_router
from tracescore.monitor.tasks import monitoring_task
from tracescore.owners import owner_id
from tracescore.pipeline.feedback_triggers import verdict_triggers
from tracescore.pipeline.recomputed_steps import StepsRecompute
from tracescore.restapi import (
    API_DESCRIPTION,
    API_TAGS,
    PROBLEM_RESPONSES,
    VERSIONS,
    install_problem_details,
    problem,
)
from tracescore.retention.task import retention_task
from tracescore.store import SpanStore, open_store
from tracescore.store.outage import DatabaseError, database_unavailable
from tracescore.store.sessions import Sessions
from tracescore.store.text import REPLACEMENT
from tracescore.version import __version__
from tracescore.web import web_router
from tracescore.web.auth import DashboardKeys
from tracescore.web.compare_api import compare_router
from tracescore.web.connections import grpc_connection_options, with_header_deadline
from tracescore.web.gate import LOGIN_PATH, BodyGate, HeadAsGet
from tracescore.web.live import LivePoll, LiveVersions
from tracescore.web.pages_app import PagesApart, pages_app
from tracescore.web.readers import ReadProcesses
from tracescore.web.sources import sources_router
from tracescore.web.traces_api import traces_router

log = logging.getLogger(__name__)


def create_app(config: Config, store: SpanStore, intake: Intake | None = None) -> FastAPI:
    """The HTTP app: OTLP receiver, ``/healthz`` and the trace read API.

    Other stages add their routers with ``app.include_router(...)``. Without ``intake`` a new
    one is made from ``config.server``; the :class:`Service` passes the one it shares with gRPC.
    """
    intake = intake or _intake(config, store)
    # FastAPI's own docs routes are open and load their scripts from a CDN: see apidocs.py.
    app = FastAPI(
        title="tracescore",
        version=__version__,
        description=API_DESCRIPTION,
        openapi_tags=API_TAGS,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.store = store
    app.state.intake = intake
    server = config.server
    attempts = FailedAttempts(server.auth_failures, server.auth_failure_window)
    app.state.api_keys = keys = ApiKeys(server.api_keys, attempts)
    dashboard = DashboardKeys(
        server.api_keys,
        Sessions(store.engine),
        timedelta(seconds=server.session_lifetime),
        attempts,
    )
    guarded = [Depends(keys.require)]
    app.state.body_readers = readers = BodyReaders(body_limits(config.server))
    app.include_router(otlp_router(intake, readers), dependencies=guarded)
    # The Langfuse SDKs authenticate with Basic auth only: their secret key is the API key.
    app.include_router(
        langfuse_router(intake, readers),
        dependencies=[Depends(PasswordKeys(server.api_keys, attempts).require)],
    )

    @app.get("/healthz", tags=["health"], summary="Liveness (and, with a key, what answered)")
    async def healthz(request: Request) -> dict[str, object]:
        """Liveness for anyone (load balancers probe without secrets); what the process is
        and does only for a valid key: a stranger learns nothing about the deployment."""
        if keys.refusal(request) is not None:
            return {"status": "ok"}
        return {
            "status": "ok",
            "database": store.dialect,
            "in_flight": intake.in_flight,
            "pid": os.getpid(),  # which process answered, when several share the port
        }

    app.state.reads = reads = ReadProcesses(config, store)
    fill_steps = StepsRecompute(config).fill_from(store)
    app.state.insights = requests = PassRequests(store) if config.insights.enabled else None
    for version in VERSIONS:  # /api/v1, then the deprecated /api aliases
        for api in (
            traces_router(store, reads, version),
            conversations_router(store.engine, version),
            ingest_router(store, version),
            create_monitor_router(
                store.engine,
                config.monitor,
                version,
                fill_steps,
                [b.name for b in config.scorers],
                [rule.name for rule in config.alerts.rules],
            ),
            feedback_router(config, store, version),
            sources_router(store.engine, version),
            insights_router(store.engine, version, requests),
            compare_router(store.engine, version),
        ):
            app.include_router(api, dependencies=guarded, responses=PROBLEM_RESPONSES)
    if config.server.docs:
        app.include_router(docs_router(app, dashboard))

    install_problem_details(app)
    outage = _ReadOutage().answer
    app.add_exception_handler(DatabaseError, outage)
    # pages redirect to a login form rather than answer 401
    versions = LiveVersions(store)
    pages = pages_app(
        web_router(config, store, dashboard, reads, versions, requests), {DatabaseError: outage}
    )
    app.add_middleware(
        PagesApart, pages=pages, live=LivePoll(versions, dashboard, {DatabaseError: outage})
    )
    app.add_middleware(_NulAsStored)
    app.add_middleware(
        BodyGate,
        keys=dashboard,
        max_bytes=server.max_api_body_bytes,
        timeout=server.body_timeout,
        open_paths=[LOGIN_PATH],
        own_paths=[*OTLP_PATHS, LANGFUSE_TRACES_PATH],
    )
    app.add_middleware(HeadAsGet)

    return app


class _NulAsStored:
    """Reads a NUL in a request's path or query (``?agent=a%00b``) as U+FFFD, the character
    stored text has in its place (:mod:`tracescore.store.text`): a filter for an agent named
    with a NUL then finds it, and PostgreSQL, which refuses a NUL in a bound parameter too, no
    longer fails the read with a 500. A bytes search per request when there is none."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query: bytes = scope["query_string"]
            path: str = scope["path"]
            if b"%00" in query or "\x00" in path:
                scope = {
                    **scope,
                    "query_string": query.replace(b"%00", _REPLACEMENT_QUOTED),
                    "path": path.replace("\x00", REPLACEMENT),
                }
        await self.app(scope, receive, send)


_REPLACEMENT_QUOTED = urllib.parse.quote(REPLACEMENT).encode()


class _ReadOutage:
    """Answers a request whose database access failed because the database is unavailable
    (down, restarting, unreachable) with 503 and ``Retry-After``, as ingest does, instead of a
    500 with a traceback per request: a client or browser can tell "try again" from a bug.

    Logged once per outage: the first refused request after ``_QUIET_SECONDS`` without one.
    Any other database error (a bug, a bad query) is re-raised: a 500 with its traceback."""

    _QUIET_SECONDS = 30.0

    def __init__(self) -> None:
        self._last = -self._QUIET_SECONDS

    async def answer(self, request: Request, exc: Exception) -> Response:
        if not database_unavailable(exc):
            raise exc
        now = time.monotonic()
        if now - self._last >= self._QUIET_SECONDS:
            log.warning(
                "reads answer 503 while the database is unavailable (%s: %s)",
                type(exc).__name__,
                str(exc).splitlines()[0] if str(exc) else "",
            )
        self._last = now
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS), "Cache-Control": "no-store"}
        message = "the database is unavailable; retry later"
        if request.url.path.startswith("/api/"):
            return problem(503, message, headers=headers)
        return PlainTextResponse(message, 503, headers=headers)


def body_limits(server: ServerConfig) -> BodyLimits:
    """How OTLP/HTTP bodies must arrive; the bytes held while receiving are capped at what the
    admission slots may hold anyway, so slow clients add no new worst case for memory."""
    return BodyLimits(
        max_bytes=server.max_body_bytes,
        timeout=server.body_timeout,
        min_rate=server.min_body_rate,
        readers=server.body_readers,
        readers_per_client=server.body_readers_per_client,
        buffered_bytes=server.max_pending_requests * server.max_body_bytes,
    )


def _intake(config: Config, store: SpanStore) -> Intake:
    server = config.server
    return Intake(
        store,
        server.max_pending_requests,
        max_attribute_chars=server.max_attribute_chars,
        max_journal_bytes=server.max_journal_bytes,
        unpackers=server.unpackers,
        shutdown_timeout=server.shutdown_timeout,
    )


def _loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) only listens where this machine can connect."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: whatever it resolves to, assume the network can reach it


def shared_port_socket(host: str, port: int) -> socket.socket:
    """A listening-to-be TCP socket that sibling processes may bind too (SO_REUSEPORT): the
    kernel then spreads incoming connections over the processes."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s failed", task.get_name(), exc_info=task.exception())


def _exit_if_stuck(seconds: float) -> None:
    """End this process ``seconds`` from now if its shutdown has not: kill the helpers still
    running, then exit with status 1.

    A shutdown waits for its threads, and a thread in a database call that never returns (a
    SQLite file another process keeps locked, a PostgreSQL server that stopped answering
    without closing the connection) would hold the process, and the helpers it waits for, for
    good. Nothing is lost by ending them: acknowledged requests are in the journal, claimed
    traces are retaken once their leases expire.
    """

    def end() -> None:
        log.error(
            "the service did not finish stopping within %g s (a database call that does not "
            "return?); ending its helper processes and exiting; requests not stored yet wait in "
            "the journal for the next start",
            seconds,
        )
        helper_processes.kill_all()
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stderr.flush()
        os._exit(1)

    timer = threading.Timer(seconds, end)
    timer.daemon = True
    timer.start()


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: :class:`Service` owns shutdown, so it can stop
    gRPC and background tasks before the process exits (uvicorn would re-raise the signal).

    Its shutdown first ends the waits for request bodies (``BodyReaders.close``): uvicorn waits
    for every running request, and a stalled upload would otherwise hold the exit until its
    ``body_timeout``."""

    def __init__(self, config: uvicorn.Config, readers: BodyReaders) -> None:
        super().__init__(config)
        self.readers = readers

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.readers.close()
        await super().shutdown(sockets)


class Service:
    """One tracescore process: OTLP/HTTP + read API (uvicorn), OTLP/gRPC, background tasks."""

    def __init__(self, config: Config, store: SpanStore | None = None) -> None:
        self.config = config = with_environment_keys(config)
        self.store = store or open_store(
            config.store.url,
            config.assembly.readiness(),
            migrate=config.store.migrate,
            read_limit=config.assembly.read_limit(),
        )
        self.store.queue.on_promoted = metrics.traces_ready.inc
        self.intake = _intake(config, self.store)
        self.app = create_app(config, self.store, self.intake)
        self._background: list[BackgroundFactory] = []
        self._uvicorn: _Server | None = None
        self._stopping = False
        self._owns_process = False
        """Whether :meth:`run` runs it in the main thread, as its process's service, which a
        stuck shutdown may then end (never a process that only runs it in a thread)."""
        interval = promote_interval(config.assembly.idle_timeout)
        self.add_background(lambda: promote_periodically(self.store, interval))
        self.add_background(monitoring_task(self.store.engine, config.alerts, config.monitor))
        # Unique per process (never monitor.instance_id, which sibling processes share): the
        # lease's holder may always renew it, so two holders of one name could both prune.
        self.add_background(retention_task(self.store, config.retention, owner_id()))
        if config.feedback.scan:
            self.add_background(
                feedback_scan_task(
                    self.store, config.feedback.scan_interval, verdict_triggers(config.scorers)
                )
            )
        namer = config.insights.judge
        self.add_background(
            insights_task(
                self.store,
                config.insights,
                config.conventions,
                owner_id(),
                config.judges[namer] if namer is not None else None,
                self.app.state.insights,
            )
        )

    def add_background(self, factory: BackgroundFactory) -> None:
        """Run ``factory()`` as a task in the service's event loop while it serves."""
        self._background.append(factory)

    def stop(self) -> None:
        """Ask a running service to shut down gracefully (what SIGTERM and SIGINT do).

        The process (of :meth:`run`) then ends within ``server.shutdown_timeout`` plus the
        helpers' exit grace (:data:`~tracescore.helper_processes.EXIT_GRACE_SECONDS`) whatever the
        database does: a helper still running by then is past its own deadline too."""
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._stopping:
            return
        self._stopping = True
        helper_processes.service_stopping()
        if self._owns_process:
            _exit_if_stuck(
                self.config.server.shutdown_timeout + helper_processes.EXIT_GRACE_SECONDS
            )

    async def serve(self) -> None:
        server = self.config.server
        shared_ports = server.processes > 1
        if not ApiKeys(server.api_keys).enabled and not _loopback(server.host):
            log.warning(
                "listening on %s with no API keys: ingest, the API and the dashboard are open to "
                "anyone who can reach this host; set server.api_keys or TRACESCORE_API_KEYS",
                server.host,
            )
        self.intake.start()
        grpc_server = await start_grpc_server(
            self.intake,
            server.host,
            server.grpc_port,
            server.max_body_bytes,
            interceptors=self.app.state.api_keys.grpc_interceptors(),
            reuse_port=shared_ports,
            options=grpc_connection_options(server.header_timeout, server.grpc_idle_timeout),
        )
        self._uvicorn = _Server(
            uvicorn.Config(
                self.app,
                host=server.host,
                port=server.http_port,
                log_level="warning",
                access_log=False,
                lifespan="auto",
                timeout_keep_alive=server.keep_alive_timeout,
                http=with_header_deadline(server.header_timeout),
                # uvicorn's own default trusts X-Forwarded-For from 127.0.0.1 (or from
                # $FORWARDED_ALLOW_IPS): only the configured proxies may name the client.
                proxy_headers=bool(server.forwarded_allow_ips),
                forwarded_allow_ips=[str(network) for network in server.forwarded_allow_ips],
            ),
            self.app.state.body_readers,
        )
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(
                NotImplementedError, RuntimeError, ValueError
            ):  # not main thread
                loop.add_signal_handler(sig, self.stop)
        # Everything loaded so far (modules, app, caches) lives as long as the process: keep it
        # out of the cyclic GC's traversals, which otherwise tax every allocation-heavy
        # request (OTLP/JSON decoding allocates a dict per attribute).
        gc.freeze()
        tasks = [asyncio.create_task(factory()) for factory in self._background]
        for task in tasks:
            task.add_done_callback(_log_failure)
        try:
            await self._uvicorn.serve(
                sockets=[shared_port_socket(server.host, server.http_port)]
                if shared_ports
                else None
            )
        finally:
            # Requests still being answered were journaled by now: the unpackers may finish
            # this collector's entries, their deadline running while the rest winds down.
            self.intake.wind_down()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await grpc_server.stop(grace=5)
            self.app.state.reads.close()
            self.intake.close()
            self.store.close()

    def run(self) -> None:
        """Serve until SIGTERM or SIGINT (in the main thread) or :meth:`stop`."""
        self._owns_process = threading.current_thread() is threading.main_thread()
        asyncio.run(self.serve())
