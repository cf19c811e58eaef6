"""What ``tracescore serve`` tells a newcomer at start: one block saying where the dashboard, the
OTLP endpoints and the API are, no library chatter, and one line (exit 1, no traceback) for
the failures a first start meets: a port in use, a database out of reach, a path it cannot
write."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server_process import free_port, start_server


def test_start_block_names_every_endpoint_and_the_libraries_keep_quiet(tmp_path: Path) -> None:
    with start_server(tmp_path) as server:
        output = server.output()
    base = f"http://127.0.0.1:{server.http_port}"
    assert f"dashboard   {base}/\n" in output
    assert f"OTLP/HTTP   {base}/v1/traces" in output
    assert f"OTLP/gRPC   127.0.0.1:{server.grpc_port}\n" in output
    assert f"REST API    {base}/api/" in output
    assert "API keys    off: ingest, the API and the dashboard are open" in output
    assert "alembic" not in output
    # a new database, said in one line, stamped in UTC as every process's log lines are
    assert re.search(
        r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO .*database schema created at",
        output,
        re.M,
    )
    assert "behind" not in output


def test_start_block_says_the_api_keys_are_on(tmp_path: Path) -> None:
    with start_server(tmp_path, env={"TRACESCORE_API_KEYS": "k1,k2"}) as server:
        output = server.output()
    assert "API keys    on (2 keys): ingest, the API and the dashboard ask for one" in output


def test_helper_processes_stamp_their_log_lines_in_utc() -> None:
    """The scoring and unpacking processes wrote their warnings without a time."""
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import logging; from tracescore.helper_processes import log_to_stderr; "
            "log_to_stderr(logging.WARNING); logging.getLogger('tracescore.x').warning('late')",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING tracescore.x: late\n", run.stderr
    )


def _serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracescore.cli", "serve", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line_failure(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "╭" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("flag", "what"), [("--http-port", "OTLP/HTTP"), ("--grpc-port", "OTLP/gRPC")]
)
def test_a_port_in_use_is_one_line_naming_it(tmp_path: Path, flag: str, what: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = {"--http-port": str(free_port()), "--grpc-port": str(free_port()), flag: str(port)}
        result = _serve(
            tmp_path,
            "--db",
            f"sqlite:///{tmp_path / 'x.db'}",
            *(word for item in ports.items() for word in item),
        )
    line = _one_line_failure(result)
    assert line == f"cannot listen on 127.0.0.1:{port} ({what}, {flag}): Address already in use"


def test_an_unreachable_database_is_one_line(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there
    result = _serve(
        tmp_path,
        "--db",
        f"postgresql://nobody@127.0.0.1:{closed}/tracescore",
        "--http-port",
        str(free_port()),
        "--grpc-port",
        str(free_port()),
    )
    line = _one_line_failure(result)
    assert line.startswith("cannot open the database: ") and str(closed) in line


def test_a_path_it_cannot_write_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    result = _serve(
        tmp_path,
        "--db",
        f"sqlite:///{tmp_path / 'a-file' / 'x.db'}",
        "--http-port",
        str(free_port()),
        "--grpc-port",
        str(free_port()),
    )
    line = _one_line_failure(result)
    assert line.startswith("cannot write ") and "a-file" in line
