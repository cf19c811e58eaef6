"""Run the collector as one process, or as several sharing its ports (``server.processes``).

A Python process decodes OTLP on one core (the GIL), so ingest scales across cores by running
whole service processes side by side: the kernel spreads connections over them (SO_REUSEPORT),
and the database already keeps their work apart (trace leases for scoring, a leader lease for
alert rules). The parent only starts, watches and stops them.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import tempfile
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Any

from prometheus_client.multiprocess import mark_process_dead

from tracescore.config import Config

if TYPE_CHECKING:
    from tracescore.service import Service

log = logging.getLogger(__name__)


def build_service(config: Config) -> Service:
    """The full service of ``config``: collector, read API, monitoring and the scoring pipeline."""
    # Imported here, not at the top: the parent of several service processes only watches
    # them, and would otherwise hold a service's worth of modules (~100 MB) for nothing.
    from tracescore.service import Service

    service = Service(config)
    if config.workers.process_count:
        from tracescore.pipeline.scoring_processes import scoring_processes_task

        service.add_background(scoring_processes_task(config.scoring(), service.store))
    else:
        from tracescore.pipeline.scoring_task import pipeline_task  # loads the scorers

        service.add_background(pipeline_task(config.scoring(), service.store))
    return service


def _stop_with_parent() -> None:
    """Stop this service process (as SIGTERM does: gracefully, within its shutdown_timeout)
    once its parent is gone, however it ended.

    The parent forwards SIGTERM and Ctrl-C, but nothing of it runs when it is killed with
    SIGKILL (or by an init system that signals the main process only): its service processes
    would go on serving the ports, with their unpackers, beside the next start. The parent's
    sentinel (a pipe multiprocessing gives a spawned child) becomes ready when it ends.
    """
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch(sentinel: int) -> None:
        multiprocessing.connection.wait([sentinel])
        log.warning("the parent process %s ended; stopping this service process", parent.pid)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(
        target=watch, args=(parent.sentinel,), name="parent watch", daemon=True
    ).start()


def _run_child(config_data: dict[str, Any]) -> None:
    # The parent handles Ctrl-C and forwards SIGTERM; a child ignores the terminal's SIGINT so
    # that one keypress does not kill the children before the parent's graceful stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _stop_with_parent()
    build_service(Config.model_validate(config_data)).run()


def serve_processes(config: Config) -> int:
    """Run ``config.server.processes`` service processes until SIGTERM/SIGINT; returns an exit
    code (0 when they were stopped, else the first failing child's)."""
    context = multiprocessing.get_context("spawn")  # no fork of a process holding connections
    data = config.model_dump(mode="json")
    children = [
        context.Process(target=_run_child, args=(data,), name=f"tracescore-{index}")
        for index in range(config.server.processes)
    ]
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True
        for child in children:
            if child.is_alive():
                child.terminate()  # SIGTERM: each service shuts down gracefully

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with tempfile.TemporaryDirectory(prefix="tracescore-metrics-") as metrics:
        # Inherited by the children (and read by prometheus-client as they import it): any
        # process answering /metrics then reports the sum over all of them.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics
        for child in children:
            child.start()
        for child in children:
            child.join()
            mark_process_dead(child.pid, metrics)  # its live gauges no longer count
            if child.exitcode and not stopping:
                stop()  # one replica failed: do not keep a half-sized service running
                return child.exitcode if child.exitcode > 0 else 1
    return 0


def startup_failure(exc: Exception) -> tuple[int, str] | None:
    """The exit code and message for a configuration the service cannot start with, or None
    for an exception that is a bug."""
    from tracescore.pipeline.bindings import BindingError
    from tracescore.store.migrations import SchemaError
    from tracescore.store.opening import CannotOpenDatabase, InvalidDatabaseUrl

    if isinstance(exc, SchemaError):
        return 1, str(exc)
    if isinstance(exc, (InvalidDatabaseUrl, ValueError)):
        return 2, f"invalid database URL: {exc}"
    if isinstance(exc, CannotOpenDatabase):
        return 1, " ".join(f"cannot open the database: {exc.orig}".split())
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return 1, f"cannot write{where}: {exc.strerror or exc}"
    if isinstance(exc, BindingError):
        return 2, f"invalid configuration: {exc}"
    return None


def _check(config_data: dict[str, Any]) -> tuple[int, str]:
    from tracescore.pipeline.bindings import compile_bindings
    from tracescore.store import open_store

    config = Config.model_validate(config_data)
    try:
        store = open_store(config.store.url, migrate=config.store.migrate)
        store_url = repr(store.engine.url)
        store.close()
        compile_bindings(config.scorers, dict(config.judges), engine=None)
    except Exception as exc:
        failure = startup_failure(exc)
        if failure is None:
            raise
        return failure
    return 0, store_url


def check_in_child(config: Config) -> tuple[int, str]:
    """Open the store (creating its tables) and compile the bindings in a throwaway process:
    (0, the store's URL), or an exit code and message as :func:`startup_failure` gives."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as child:
        return child.submit(_check, config.model_dump(mode="json")).result()
