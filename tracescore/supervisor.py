"""Run the collector as one process, or as several sharing its ports (``server.processes``).

A Python process decodes OTLP on one core (the GIL), so ingest scales across cores by running
whole service processes side by side: the kernel spreads connections over them (SO_REUSEPORT),
and the database already keeps their work apart (trace leases for scoring, a leader lease for
alert rules). The parent only starts, watches and stops them.
"""

from __future__ import annotations

import multiprocessing
import signal
from typing import Any

from tracescore.config import Config
from tracescore.service import Service


def build_service(config: Config) -> Service:
    """The full service of ``config``: collector, read API, monitoring and the scoring pipeline."""
    from tracescore.pipeline.runner import pipeline_task  # noqa: PLC0415 - loads the scorers

    service = Service(config)
    service.add_background(pipeline_task(config, service.store))
    return service


def _run_child(config_data: dict[str, Any]) -> None:
    # The parent handles Ctrl-C and forwards SIGTERM; a child ignores the terminal's SIGINT so
    # that one keypress does not kill the children before the parent's graceful stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
    for child in children:
        child.start()
    for child in children:
        child.join()
        if child.exitcode and not stopping:
            stop()  # one replica failed: do not keep a half-sized service running
            return child.exitcode if child.exitcode > 0 else 1
    return 0
