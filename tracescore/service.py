"""Process composition: the FastAPI app (OTLP/HTTP + read API), the OTLP/gRPC server and
background tasks, all in one asyncio event loop.

Other stages plug in without editing this module, as :func:`tracescore.supervisor.build_service`
adds the scoring pipeline::

    service = Service(config)
    service.add_background(pipeline_task(config.scoring(), service.store))
    service.run()

Background tasks start with the servers; on shutdown they are cancelled (then awaited) before
the gRPC server stops and the store closes. A task that dies is logged at once.

What requests pass before their routes is :mod:`tracescore.web.gate`; how uvicorn serves, on a
port shared by sibling processes, and the watchdog of a shutdown that hangs are
:mod:`tracescore.web.serving`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import threading
from dataclasses import dataclass
from datetime import timedelta

from fastapi import Depends, FastAPI, Request

from tracescore import helper_processes, metrics
from tracescore.apidocs import docs_router
from tracescore.assemble.promoter import promote_interval, promote_periodically
from tracescore.assemble.queue_vacuum import vacuum_queue_periodically
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
from tracescore.ingest.intake import Intake
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
)
from tracescore.retention.task import retention_task
from tracescore.store import SpanStore, open_store
from tracescore.store.outage import DatabaseError
from tracescore.store.sessions import Sessions
from tracescore.version import __version__
from tracescore.web import web_router
from tracescore.web.auth import DashboardKeys
from tracescore.web.compare_api import compare_router
from tracescore.web.connections import grpc_connection_options
from tracescore.web.gate import LOGIN_PATH, BodyGate, HeadAsGet, NulAsStored
from tracescore.web.live import LivePoll, LiveVersions
from tracescore.web.outage import ReadOutage
from tracescore.web.pages_app import PagesApart, pages_app
from tracescore.web.readers import ReadProcesses
from tracescore.web.serving import HttpServer, exit_if_stuck, log_failure, loopback
from tracescore.web.sources import sources_router
from tracescore.web.traces_api import traces_router

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AppParts:
    """The HTTP app and the parts of it that the rest of the process uses too."""

    app: FastAPI
    api_keys: ApiKeys
    """The keys the app checks: the gRPC server checks the same ones (and counts failed
    attempts with them)."""
    body_readers: BodyReaders
    """The waits for OTLP/HTTP bodies, ended first when the HTTP server shuts down."""
    reads: ReadProcesses
    """The reader processes, closed when the service stops."""
    insight_requests: PassRequests | None
    """The dashboard's requests for an insights pass (None with ``insights.enabled`` off),
    answered by the insights task."""


def create_app(config: Config, store: SpanStore, intake: Intake | None = None) -> FastAPI:
    """The HTTP app: OTLP receiver, ``/healthz``, the read API and the dashboard.

    Other stages add their routers with ``app.include_router(...)``. Without ``intake`` a new
    one is made from ``config.server``; the :class:`Service` composes with :func:`compose_app`,
    passing the one it shares with gRPC.
    """
    return compose_app(config, store, intake).app


def compose_app(config: Config, store: SpanStore, intake: Intake | None = None) -> AppParts:
    """The HTTP app of :func:`create_app`, and the parts of it the servers and shutdown use
    (a caller that starts no server needs only :attr:`AppParts.reads`, to close it)."""
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
    server = config.server
    attempts = FailedAttempts(server.auth_failures, server.auth_failure_window)
    keys = ApiKeys(server.api_keys, attempts)
    dashboard = DashboardKeys(
        server.api_keys,
        Sessions(store.engine),
        timedelta(seconds=server.session_lifetime),
        attempts,
    )
    guarded = [Depends(keys.require)]
    readers = BodyReaders(body_limits(config.server))
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

    reads = ReadProcesses(config, store)
    fill_steps = StepsRecompute(config).fill_from(store)
    requests = PassRequests(store) if config.insights.enabled else None
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
    outage = ReadOutage().answer
    app.add_exception_handler(DatabaseError, outage)
    # pages redirect to a login form rather than answer 401
    versions = LiveVersions(store)
    pages = pages_app(
        web_router(config, store, dashboard, reads, versions, requests), {DatabaseError: outage}
    )
    app.add_middleware(
        PagesApart, pages=pages, live=LivePoll(versions, dashboard, {DatabaseError: outage})
    )
    app.add_middleware(NulAsStored)
    app.add_middleware(
        BodyGate,
        keys=dashboard,
        max_bytes=server.max_api_body_bytes,
        timeout=server.body_timeout,
        open_paths=[LOGIN_PATH],
        own_paths=[*OTLP_PATHS, LANGFUSE_TRACES_PATH],
    )
    app.add_middleware(HeadAsGet)

    return AppParts(app, keys, readers, reads, requests)


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
        self.parts = compose_app(config, self.store, self.intake)
        self.app = self.parts.app
        self._background: list[BackgroundFactory] = []
        self._uvicorn: HttpServer | None = None
        self._stopping = False
        self._owns_process = False
        """Whether :meth:`run` runs it in the main thread, as its process's service, which a
        stuck shutdown may then end (never a process that only runs it in a thread)."""
        interval = promote_interval(config.assembly.idle_timeout)
        self.add_background(lambda: promote_periodically(self.store, interval))
        if self.store.dialect == "postgresql":
            self.add_background(lambda: vacuum_queue_periodically(self.store))
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
                self.parts.insight_requests,
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
            exit_if_stuck(self.config.server.shutdown_timeout + helper_processes.EXIT_GRACE_SECONDS)

    async def serve(self) -> None:
        """Start the servers and background tasks, serve until stopped, then stop them in
        order: the intake winds down, the tasks end, gRPC stops, the reader processes, the
        intake and the store close."""
        server = self.config.server
        if not self.parts.api_keys.enabled and not loopback(server.host):
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
            interceptors=self.parts.api_keys.grpc_interceptors(),
            reuse_port=server.processes > 1,
            options=grpc_connection_options(server.header_timeout, server.grpc_idle_timeout),
        )
        self._uvicorn = HttpServer(self.app, server, self.parts.body_readers)
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
            task.add_done_callback(log_failure)
        try:
            await self._uvicorn.serve()
        finally:
            # Requests still being answered were journaled by now: the unpackers may finish
            # this collector's entries, their deadline running while the rest winds down.
            self.intake.wind_down()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await grpc_server.stop(grace=5)
            self.parts.reads.close()
            self.intake.close()
            self.store.close()

    def run(self) -> None:
        """Serve until SIGTERM or SIGINT (in the main thread) or :meth:`stop`."""
        self._owns_process = threading.current_thread() is threading.main_thread()
        asyncio.run(self.serve())
