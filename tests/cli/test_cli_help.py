"""Every command's ``--help`` as a newcomer reads it: defaults shown, no reST markup, prose
paragraphs reflowed (no line cut short in mid-sentence), and ``tracescore --version``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from tracescore.cli import app
from tracescore.config import Config
from tracescore.version import __version__

WIDTH = 100


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    # Typer ships its own copy of click: groups are told apart by their sub-commands.
    yield path, command
    if hasattr(command, "commands"):
        for name, child in command.commands.items():
            yield from _commands(child, (*path, name))


COMMANDS = dict(_commands(typer.main.get_command(app)))


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(
        app, [*path, "--help"], env={"COLUMNS": str(WIDTH), "TERMINAL_WIDTH": str(WIDTH)}
    )
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(p) or "tracescore")
def test_help_is_clean(path: tuple[str, ...]) -> None:
    text = _help(path)
    assert "``" not in text
    # The prose before the first box: a line followed by more prose of its paragraph is filled.
    prose = text.split("╭", 1)[0].splitlines()
    for line, following in itertools.pairwise(prose):
        if line.strip() and following.strip() and not line.lstrip().startswith("Usage:"):
            assert len(line.rstrip()) > WIDTH // 2, f"ragged line break after {line.strip()!r}"


@pytest.mark.parametrize(
    "path",
    [p for p, c in COMMANDS.items() if not hasattr(c, "commands")],
    ids=lambda p: " ".join(p),
)
def test_every_option_shows_its_default(path: tuple[str, ...]) -> None:
    options = [
        p
        for p in COMMANDS[path].params
        if p.param_type_name == "option" and not (p.required or p.is_flag or p.multiple)
    ]
    text = " ".join(_help(path).split())
    missing = [o.opts[0] for o in options if "[default:" not in _described(text, o.opts[0])]
    assert not missing


def _described(text: str, flag: str) -> str:
    """The help row of ``flag`` in whitespace-collapsed help ``text``."""
    row = text.split(f"│ {flag} ", 1)[1].split("│ --", 1)[0]
    return row.replace(" │ │ ", " ")  # the box's edges where the row wraps


def test_serve_shows_the_config_defaults() -> None:
    text = " ".join(_help(("serve",)).split())
    server = Config().server
    for flag, value in (
        ("--host", server.host),
        ("--http-port", server.http_port),
        ("--grpc-port", server.grpc_port),
        ("--processes", server.processes),
        ("--unpackers", server.unpackers),
        ("--idle-timeout", Config().assembly.idle_timeout),
        ("--db", Config().store.url),
    ):
        shown = _described(text, flag).split("[default: ", 1)[1]
        assert shown.lstrip("(").startswith(f"{value}, or the config's"), flag


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"tracescore {__version__}\n"
