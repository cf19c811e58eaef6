"""A fresh ``tracescore serve`` (no keys, everything open) listens on loopback only: its
dashboard and API are not reachable from the network until someone asks for it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support.server_process import start_server
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
    with start_server(tmp_path, host=None) as server:  # no --host: the default
        assert _reachable("127.0.0.1", server.http_port) and _reachable(
            "127.0.0.1", server.grpc_port
        )
        assert not _reachable(outward, server.http_port)
        assert not _reachable(outward, server.grpc_port)
    assert "with no API keys" not in server.output()


def test_serve_on_every_interface_without_keys_warns(tmp_path: Path) -> None:
    with start_server(tmp_path / "open", host="0.0.0.0") as server:
        pass
    assert "listening on 0.0.0.0 with no API keys" in server.output()
    with start_server(
        tmp_path / "keyed", host="0.0.0.0", env={"TRACESCORE_API_KEYS": "bind-test-key"}
    ) as server:
        pass
    assert "with no API keys" not in server.output()
