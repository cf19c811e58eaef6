"""``tracescore serve``: the collector, its API and dashboard, in one or several processes.

Ports are checked before anything starts, so a taken one is one line naming it.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tracescore.cli.common import NO_CONFIG, fail, read_config, with_overrides

if TYPE_CHECKING:
    from tracescore.config import Config


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


def _configure_logging(level: LogLevel) -> None:
    """tracescore's loggers at ``level``; the libraries' (Alembic's dozen lines per start, the
    servers') only from warnings on, unless ``debug`` asks for everything."""
    import logging

    from tracescore.helper_processes import log_to_stderr

    chosen = getattr(logging, level.value.upper())
    log_to_stderr(chosen if level is LogLevel.debug else max(chosen, logging.WARNING))
    logging.getLogger("tracescore").setLevel(chosen)


def _cannot_listen(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (in use, say), or None: checked before the
    service starts, so a taken port is one line naming it instead of the servers' tracebacks.
    SO_REUSEADDR as the servers set it, so a port left in TIME_WAIT is no false alarm."""
    import socket

    if port == 0:
        return None
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def serve(
    config_file: Path | None = typer.Option(
        None, "--config", help="YAML config file.", show_default=NO_CONFIG
    ),
    db: str | None = typer.Option(
        None,
        "--db",
        help="Database URL: sqlite:///file.db or postgresql://user@host/db.",
        show_default="sqlite:///tracescore.db, or the config's store",
    ),
    host: str | None = typer.Option(
        None,
        "--host",
        help="Interface to listen on (0.0.0.0: every interface).",
        show_default="127.0.0.1, or the config's server.host",
    ),
    http_port: int | None = typer.Option(
        None,
        "--http-port",
        help="OTLP/HTTP, API and dashboard port.",
        show_default="4318, or the config's server.http_port",
    ),
    grpc_port: int | None = typer.Option(
        None,
        "--grpc-port",
        help="OTLP/gRPC port.",
        show_default="4317, or the config's server.grpc_port",
    ),
    idle_timeout: float | None = typer.Option(
        None,
        "--idle-timeout",
        help="Seconds without new spans before a trace is complete.",
        show_default="5.0, or the config's assembly.idle_timeout",
    ),
    processes: int | None = typer.Option(
        None,
        "--processes",
        help="Service processes sharing the ports (one per core).",
        show_default="1, or the config's server.processes",
    ),
    unpackers: int | None = typer.Option(
        None,
        "--unpackers",
        help="Processes per service decoding acknowledged requests into rows.",
        show_default="1, or the config's server.unpackers",
    ),
    scoring_processes: int | None = typer.Option(
        None,
        "--scoring-processes",
        help="Scoring worker processes per service (0: score in the service process).",
        show_default="one per core, at most 4, or the config's workers.processes",
    ),
    log_level: LogLevel = typer.Option(
        "info",
        "--log-level",
        help="tracescore's log messages from this level on; debug also "
        "shows the libraries' (schema migrations, servers).",
    ),
) -> None:
    """Run the collector: OTLP/HTTP, OTLP/gRPC, the REST API and the dashboard, storing spans
    durably."""
    from tracescore.config import ConfigError

    try:
        config = with_overrides(
            read_config(config_file),
            {
                "--db": ("store.url", db),
                "--host": ("server.host", host),
                "--http-port": ("server.http_port", http_port),
                "--grpc-port": ("server.grpc_port", grpc_port),
                "--idle-timeout": ("assembly.idle_timeout", idle_timeout),
                "--processes": ("server.processes", processes),
                "--unpackers": ("server.unpackers", unpackers),
                "--scoring-processes": ("workers.processes", scoring_processes),
            },
        )
    except ConfigError as exc:
        fail(2, str(exc))

    _configure_logging(log_level)
    server = config.server
    for port, what in (
        (server.http_port, "OTLP/HTTP, --http-port"),
        (server.grpc_port, "OTLP/gRPC, --grpc-port"),
    ):
        if problem := _cannot_listen(server.host, port):
            fail(1, f"cannot listen on {server.host}:{port} ({what}): {problem}")
    if server.processes > 1:
        from tracescore.supervisor import check_in_child, serve_processes

        # Checked once, before the processes start, so bad URLs, databases and bindings fail
        # with one clear message and the tables exist; in a child, so that the parent, which
        # only watches the service processes, stays small.
        code, detail = check_in_child(config)
        if code:
            fail(code, detail)
        _announce(config, detail)
        raise typer.Exit(serve_processes(config))

    from tracescore.supervisor import build_service, startup_failure

    try:
        service = build_service(config)
    except Exception as exc:
        failure = startup_failure(exc)
        if failure is None:
            raise
        fail(*failure)
    _announce(config, repr(service.store.engine.url))
    service.run()


def _announce(config: Config, store_url: str) -> None:
    """Where everything is, in one short block: what a newcomer opens or points an exporter at,
    and whether it needs a key to."""
    from tracescore.auth import ApiKeys, with_environment_keys
    from tracescore.compiled import describe
    from tracescore.version import __version__

    server = config.server
    keys = len(ApiKeys(with_environment_keys(config).server.api_keys).keys)
    guarded = (
        f"on ({keys} key{'s' if keys > 1 else ''}): ingest, the API and the dashboard ask for one"
        if keys
        else "off: ingest, the API and the dashboard are open "
        "(server.api_keys or TRACESCORE_API_KEYS)"
    )
    # A URL to open: the wildcard addresses are reachable on loopback too.
    shown = "127.0.0.1" if server.host in ("0.0.0.0", "::", "") else server.host
    base = f"http://{shown}:{server.http_port}"
    typer.echo(
        "\n".join(
            [
                f"tracescore {__version__} collecting, store {store_url}",
                f"  dashboard   {base}/",
                f"  OTLP/HTTP   {base}/v1/traces (and /v1/logs)",
                f"  OTLP/gRPC   {shown}:{server.grpc_port}",
                f"  REST API    {base}/api/"
                + (f" (reference at {base}/api/docs)" if server.docs else ""),
                f"  API keys    {guarded}",
                f"  listening on {server.host}; {server.processes} "
                f"process{'es' if server.processes > 1 else ''}, {server.unpackers} "
                f"unpacker{'s' if server.unpackers > 1 else ''} each; {describe()}",
            ]
        ),
        err=True,
    )
