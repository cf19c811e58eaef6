"""How a service process serves its HTTP app and ends: uvicorn configured from
``server``, sibling processes sharing the port, and a watchdog that ends a shutdown that
hangs.

:class:`~tracescore.service.Service` composes these; they are here so that the composition
reads as the order of starting and stopping, not as sockets and timers.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import sys
import threading
from collections.abc import Iterator

import uvicorn
from starlette.types import ASGIApp

from tracescore import helper_processes
from tracescore.config import ServerConfig
from tracescore.ingest.http_bodies import BodyReaders
from tracescore.web.connections import with_header_deadline

log = logging.getLogger(__name__)


def loopback(host: str) -> bool:
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


class HttpServer(uvicorn.Server):
    """uvicorn without its own signal handling: the service owns shutdown, so it can stop
    gRPC and background tasks before the process exits (uvicorn would re-raise the signal).

    Its shutdown first ends the waits for request bodies (``BodyReaders.close``): uvicorn waits
    for every running request, and a stalled upload would otherwise hold the exit until its
    ``body_timeout``."""

    def __init__(self, app: ASGIApp, server: ServerConfig, readers: BodyReaders) -> None:
        super().__init__(
            uvicorn.Config(
                app,
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
            )
        )
        self.readers = readers
        self._shared_port = server.processes > 1

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve until :attr:`should_exit`; on a port shared with sibling processes when
        ``server.processes`` is more than one."""
        if sockets is None and self._shared_port:
            sockets = [shared_port_socket(self.config.host, self.config.port)]
        await super().serve(sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.readers.close()
        await super().shutdown(sockets)


def log_failure(task: asyncio.Task[None]) -> None:
    """A done callback for a background task: its failure logged at once, not at shutdown."""
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s failed", task.get_name(), exc_info=task.exception())


def exit_if_stuck(seconds: float) -> None:
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
