"""A private PostgreSQL cluster a test may stop and start at will.

The machine's PostgreSQL (127.0.0.1:5432) is shared by every other test, so a test that restarts
the database gets its own: ``initdb`` into a temporary directory, ``pg_ctl`` on a free port with
the socket in that directory, trust authentication, durability settings relaxed for speed (the
restarts under test are of the server process, not of the machine). As root, the binaries run
as the ``postgres`` user, as PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Self

from tests.support.server_process import free_port


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name) or ""]
    if not found[-1]:
        raise RuntimeError(f"{name} not found (PostgreSQL server binaries are needed)")
    return found[-1]


class ThrowawayPostgres:
    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="tracescore-pg-"))
        self.data = self.directory / "data"
        self.port = free_port()
        self._as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as_postgres:
            shutil.chown(self.directory, "postgres")
        self._run(
            _bin("initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync"
        )

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the cluster's ``postgres`` database."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        subprocess.run([*self._as_postgres, *command], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c full_page_writes=off"
        )
        self._run(
            _bin("pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.directory / "log"),
            "-o",
            options,
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """``fast`` (clients disconnected, clean shutdown) or ``immediate`` (like a crash)."""
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)
