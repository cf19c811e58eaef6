"""A fresh ``tracescore serve`` (no keys, everything open) listens on loopback only: its
dashboard and API are not reachable from the network until someone asks for it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.server_process import free_port, start_server
from tracescore.config import Config, parse_config


def test_the_default_host_is_loopback() -> None:
    assert Config().server.host == "127.0.0.1"
    assert parse_config("server: {http_port: 4318}\n").server.host == "127.0.0.1"
    assert parse_config("server: {host: 0.0.0.0}\n").server.host == "0.0.0.0"  # still possible


def _outward_address() -> str:
    """This machine's address on the network (the source of a route to a public address).
    A UDP connect sends nothing; it only asks the kernel for a route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.123", 9))  # TEST-NET-1: any non-loopback route will do
        except OSError:
            pytest.fail("this machine has no network route; cannot tell loopback from the rest")
        return probe.getsockname()[0]


def _reachable(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return False
    return True


def test_serve_without_host_is_not_reachable_from_the_network(tmp_path: Path) -> None:
    outward = _outward_address()
    assert not outward.startswith("127.")
    http_port, grpc_port = free_port(), free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tracescore.cli", "serve", "--http-port", str(http_port),
         "--grpc-port", str(grpc_port)],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                assert httpx.get(f"http://127.0.0.1:{http_port}/healthz", timeout=1).status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and process.poll() is None, "serve did not start"
                time.sleep(0.05)
        assert _reachable("127.0.0.1", grpc_port)
        assert not _reachable(outward, http_port)
        assert not _reachable(outward, grpc_port)
    finally:
        process.terminate()
        assert process.wait(15) == 0


def test_serve_on_every_interface_without_keys_warns(tmp_path: Path) -> None:
    with start_server(tmp_path / "open", args=["--host", "0.0.0.0"]) as server:
        pass
    assert "listening on 0.0.0.0 with no API keys" in server.output()
    with start_server(tmp_path / "keyed", args=["--host", "0.0.0.0"],
                      env={"TRACESCORE_API_KEYS": "bind-test-key"}) as server:  # fmt: skip
        pass
    assert "with no API keys" not in server.output()
    with start_server(tmp_path / "loopback") as server:
        pass
    assert "with no API keys" not in server.output()
