"""``tracescore demo --serve``: a collector started for the demo, with the demo's config.

The config ships with the package (``demo.yaml`` beside this module): the default code scorers,
a conversation binding on the city guide, and a regression rule on each, so one command shows
the whole path from traces to an alert. The collector is the real ``tracescore serve`` in a
child process, as a user would start it, and stops with the demo.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from urllib.parse import urlsplit

import httpx

DEMO_CONFIG = resources.files("tracescore.offline").joinpath("demo.yaml")
DEMO_DB_URL = "sqlite:///tracescore-demo.db"


class CollectorExited(RuntimeError):
    """The demo's collector ended before it was ready; ``code`` is its exit status (it printed
    why on its own stderr, which it shares with the demo)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"the collector exited with status {code}")
        self.code = code


def demo_config_text() -> str:
    return DEMO_CONFIG.read_text(encoding="utf-8")


@contextmanager
def demo_collector(
    endpoint: str, db_url: str, grpc_port: int, *, timeout: float = 120.0
) -> Iterator[subprocess.Popen[bytes]]:
    """``tracescore serve`` with the demo's config, listening where ``endpoint`` says; yields
    once it answers ``/healthz`` and stops it (SIGTERM) on the way out."""
    where = urlsplit(endpoint)
    with resources.as_file(DEMO_CONFIG) as config_path:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tracescore.cli",
                "serve",
                "--config",
                str(config_path),
                "--db",
                db_url,
                "--host",
                where.hostname or "127.0.0.1",
                "--http-port",
                str(where.port or 4318),
                "--grpc-port",
                str(grpc_port),
            ]
        )
        # SIGTERM to the demo alone (a service manager, `kill`) stops its collector too.
        previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
        try:
            _wait_until_healthy(process, f"{endpoint.rstrip('/')}/healthz", timeout)
            yield process
        finally:
            signal.signal(signal.SIGTERM, previous)
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait()


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _wait_until_healthy(process: subprocess.Popen[bytes], url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise CollectorExited(process.returncode)
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"the collector did not answer {url} within {timeout:g} s")
