"""Run the real ``tracescore serve`` as a subprocess on ephemeral ports, for tests.

Reusable by any test file::

    with start_server(tmp_path, db_url=sqlite_url, idle_timeout=0.3) as server:
        httpx.post(f"{server.base_url}/v1/traces", ...)

``start_server`` returns once ``/healthz`` answers (so HTTP and gRPC both listen). ``stop()``
sends SIGTERM and waits for a clean exit; ``kill()`` is ``kill -9`` (crash tests). The server's
output goes to ``<workdir>/server.log``; :meth:`ServerProcess.output` reads it for assertions
and failure messages.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from tracescore.web.auth import COOKIE_NAME


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants, as far as they can be read now."""
    pids = [pid]
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                pids += process_tree(int(child))
    except OSError:  # a thread or process that just ended
        pass
    return pids


PORTS = range(20_000, 32_768)
"""Where test servers' ports are picked: below the kernel's ephemeral range (Linux 32768-60999,
macOS 49152-65535), from which it hands out the local ports of outgoing connections. A port
the OS gave back by ``bind(0)`` was soon the local port of one of the tests' many database
connections, and a server then told to listen on it on 0.0.0.0 found it taken."""


ONE_USE_CONNECTIONS = httpx.Limits(max_keepalive_connections=0)
"""A client's limits that close each connection after its response (see ServerProcess.http)."""


def free_port() -> int:
    """A port nothing is bound to right now on any address (checked on 0.0.0.0)."""
    while True:
        port = random.choice(PORTS)
        with socket.socket() as sock:
            try:
                sock.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    http_port: int
    grpc_port: int
    db_url: str
    workdir: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @functools.cached_property
    def http(self) -> httpx.Client:
        """One HTTP client of this server for all of a test's requests, closed when the server
        stops: ``httpx.get`` and ``httpx.post`` build a client, and with it an SSL context
        loading the CA bundle, each call (~25 ms of CPU), which a test sending a hundred traces
        or polling an endpoint paid every time. A connection per request still, as those had:
        one kept alive is closed by the server after ``server.keep_alive_timeout``, and a
        request sent on it just then fails (httpx does not send it again)."""
        return httpx.Client(base_url=self.base_url, timeout=30, limits=ONE_USE_CONNECTIONS)

    def _close_http(self) -> None:
        if "http" in self.__dict__:
            self.__dict__.pop("http").close()

    def client_from(self, address: str, **kwargs: Any) -> httpx.Client:
        """An HTTP client of this server whose connections come from ``address`` (Linux routes
        all of 127.0.0.0/8 locally), so a test's client has an address of its own."""
        transport = httpx.HTTPTransport(local_address=address)
        return httpx.Client(base_url=self.base_url, transport=transport, timeout=10, **kwargs)

    def output(self) -> str:
        return (self.workdir / "server.log").read_text(errors="replace")

    def stop(self, timeout: float = 30.0) -> int:
        """Graceful shutdown (SIGTERM); kills the process if it does not exit in ``timeout``.

        The service bounds its own shutdown (``server.shutdown_timeout``, 10 s, plus at most 5 s):
        the default leaves room beyond that for a loaded machine, where one took over 15 s."""
        self._close_http()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(f"server ignored SIGTERM:\n{self.output()}") from None
        return self.process.returncode

    def pids(self) -> list[int]:
        """The service's process and its helper processes (unpackers, scoring workers)."""
        return process_tree(self.process.pid) if self.process.poll() is None else []

    def kill(self) -> None:
        """``kill -9`` of the service and its helper processes: no shutdown code runs, as when
        the host crashes."""
        self._close_http()
        if self.process.poll() is None:
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def start_server(
    workdir: Path,
    *,
    db_url: str | None = None,
    config: Mapping[str, Any] | str | None = None,
    idle_timeout: float | None = 0.3,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
    host: str | None = "127.0.0.1",
    http_port: int | None = None,
    scoring_processes: int | None = 1,
) -> ServerProcess:
    """Start ``tracescore serve`` in ``workdir`` and wait until it is healthy.

    ``config`` (a mapping or YAML text) is written to ``workdir/tracescore.yaml`` and passed
    with ``--config``; ``db_url`` defaults to a SQLite file in ``workdir``. Ports are picked
    fresh on each call, so restarting on the same database gets new ones. ``host=None`` passes
    no ``--host``: the server listens where its config (or the default) says. ``http_port``: a
    port chosen beforehand (one the config must name, say). ``timeout`` only catches a server
    that never comes up: a loaded 2-core machine running test processes side by side took over
    30 s to start one.

    ``scoring_processes``: one scoring process (``--scoring-processes 1``), not the machine's
    default of one per core, unless the config (``workers.processes``) or ``args`` say how many;
    ``None`` leaves the default. Each scoring process costs ~1.3 s of CPU to start (its imports,
    the language model, the scorers' warm-up), and the suite starts over a hundred servers on a
    machine whose cores it keeps busy: a test of several scoring processes asks for them.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    db_url = db_url or f"sqlite:///{workdir / 'tracescore.db'}"
    options: list[str] = [*(["--host", host] if host is not None else [])]
    if idle_timeout is not None:
        options += ["--idle-timeout", str(idle_timeout)]
    if config is not None:
        config_path = workdir / "tracescore.yaml"
        text = config if isinstance(config, str) else yaml.safe_dump(dict(config))
        config_path.write_text(text)
        options += ["--config", str(config_path)]
    if scoring_processes is not None and not _sets_scoring_processes(config, args):
        options += ["--scoring-processes", str(scoring_processes)]
    options += list(args)
    for attempt in range(1, PORT_ATTEMPTS + 1):
        ports = http_port or free_port(), free_port()
        server = _launch(workdir, db_url, ports, options, env)
        try:
            return _healthy(server, timeout)
        except PortTaken:
            # A free port is free when asked, not when the server binds it: another test's
            # server (or client) may take it in between. Fresh ports, unless the caller chose one.
            if http_port is not None or attempt == PORT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")  # the loop returns or raises


def _sets_scoring_processes(config: Mapping[str, Any] | str | None, args: Sequence[str]) -> bool:
    """Whether a test's ``config`` or ``args`` choose the count of scoring processes."""
    if "--scoring-processes" in args:
        return True
    if isinstance(config, str):
        try:
            config = yaml.safe_load(config)
        except yaml.YAMLError:
            return False  # a test of a broken config: the server refuses it whatever the count
    if not isinstance(config, Mapping):
        return False
    workers = config.get("workers")
    return isinstance(workers, Mapping) and "processes" in workers


PORT_ATTEMPTS = 3
"""Starts tried with fresh ports when one was taken between choosing and binding it."""


class PortTaken(RuntimeError):
    """The server exited because a port it was given was taken by then."""


def _launch(
    workdir: Path,
    db_url: str,
    ports: tuple[int, int],
    options: Sequence[str],
    env: Mapping[str, str] | None,
) -> ServerProcess:
    http_port, grpc_port = ports
    command = [
        sys.executable,
        "-m",
        "tracescore.cli",
        "serve",
        "--db",
        db_url,
        "--http-port",
        str(http_port),
        "--grpc-port",
        str(grpc_port),
        *options,
    ]
    log = open(workdir / "server.log", "ab")  # noqa: SIM115 - the child keeps writing to it
    process = subprocess.Popen(
        command,
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    log.close()
    return ServerProcess(process, http_port, grpc_port, db_url, workdir)


def _healthy(server: ServerProcess, timeout: float) -> ServerProcess:
    """``server`` once ``/healthz`` answers; :class:`PortTaken` if it exited for a taken port."""
    deadline = time.monotonic() + timeout
    # One client for all the looks: ``httpx.get`` builds a client, and with it an SSL context
    # loading the CA bundle, each call (~30 ms of CPU), which every 50 ms took a third of a core
    # from the server starting meanwhile.
    with httpx.Client(timeout=1.0) as client:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                output = server.output()
                error = PortTaken if "Address already in use" in output else RuntimeError
                raise error(f"server exited with {server.process.returncode}:\n{output}")
            try:
                if client.get(f"{server.base_url}/healthz").status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    server.kill()
    raise RuntimeError(f"server not healthy after {timeout}s:\n{server.output()}")


class ChunkedUpload:
    """A raw ``Transfer-Encoding: chunked`` POST with no Content-Length, as Node exporters send.

    Written over a plain socket so the test controls every byte and the pacing: a test can send
    part of a body, do something else while the server waits for the rest, then finish.
    """

    def __init__(
        self, port: int, path: str, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        head = [
            f"POST {path} HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            f"Content-Type: {content_type}",
            "Transfer-Encoding: chunked",
        ]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())

    def send(self, data: bytes) -> None:
        if data:
            self.sock.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def finish(self) -> tuple[int, dict[str, str], bytes]:
        """Send the last chunk and return (status, headers, body) of the response."""
        import http.client

        self.sock.sendall(b"0\r\n\r\n")
        response = http.client.HTTPResponse(self.sock)
        response.begin()
        body = response.read()
        self.sock.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def post_chunked(
    port: int, path: str, body: bytes, content_type: str, chunk_size: int = 1024
) -> tuple[int, dict[str, str], bytes]:
    upload = ChunkedUpload(port, path, content_type)
    for start in range(0, len(body), chunk_size):
        upload.send(body[start : start + chunk_size])
    return upload.finish()


def login_session(base_url: str, key: str, address: str | None = None) -> str:
    """A session cookie's value, from signing in through the dashboard's login form (from
    ``address``, a 127.0.0.0/8 address of the test's own, if given)."""
    transport = httpx.HTTPTransport(local_address=address) if address else None
    with httpx.Client(transport=transport, timeout=30) as client:
        response = client.post(f"{base_url}/ui/login", data={"key": key, "next": "/"})
    assert response.status_code == 303, (response.status_code, response.text)
    return response.cookies[COOKIE_NAME]


def signed_in_page(context: Any, base_url: str, key: str) -> Any:
    """A browser page (Playwright ``context``'s) signed in the way the login form signs in:
    with the session cookie."""
    cookie = {"name": COOKIE_NAME, "value": login_session(base_url, key), "url": base_url}
    context.add_cookies([cookie])
    return context.new_page()


def wait_for(
    check: Callable[[], Any], timeout: float, what: str | Callable[[], str], every: float = 0.2
) -> Any:
    """``check()``'s first truthy answer, asked every ``every`` seconds; fails naming ``what``
    after ``timeout`` seconds (what a test waits for on a running service: a score, a row).
    The one wait of the test tree: a callable ``what`` is asked at the failure, to say what was
    last seen instead."""
    deadline = time.monotonic() + timeout
    while True:
        if found := check():
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what() if callable(what) else what} not within {timeout}s")
        time.sleep(every)
