"""The README's commands are true on a fresh clone: every option a ``tracescore`` command there
uses exists, every file or directory it names is in the repository (or made by the README
itself), and the offline ones run as shown."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import typer.main
from typer.testing import CliRunner

from tests.support.paths import REPO
from tracescore.cli import app
from tracescore.config import load_config, parse_config
from tracescore.offline.demo_collector import DEMO_CONFIG

README = REPO / "README.md"
MADE_BY_THE_README = {"tracescore.yaml"}  # the YAML block of the judge example, saved by the reader


def _readme_commands() -> list[list[str]]:
    """Every ``tracescore …`` command line of the README: in shell blocks (continuations joined,
    comments dropped, ``&&`` chains split) and in inline code."""
    text = README.read_text(encoding="utf-8")
    lines: list[str] = []
    for block in re.findall(r"```(?:bash|yaml)\n(.*?)```", text, re.DOTALL):
        joined = block.replace("\\\n", " ")
        lines += [
            line.split("#", 1)[1] if line.lstrip().startswith("#") else line.split("  #")[0]
            for line in joined.splitlines()
        ]
    lines += re.findall(r"`(tracescore [^`]+)`", text)
    commands = []
    for line in lines:
        for part in re.split(r"&&|: ", line) if "tracescore " in line else []:
            words = shlex.split(part)
            if words[:1] == ["tracescore"] and len(words) > 1:
                # `db upgrade/current/check` names three commands in prose.
                commands += (
                    [[*words[1:2], name, *words[3:]] for name in words[2].split("/")]
                    if (len(words) > 2 and "/" in words[2] and not (REPO / words[2]).exists())
                    else [words[1:]]
                )
    return commands


def _command(words: list[str]) -> tuple[object, list[str]]:
    command: object = typer.main.get_command(app)
    while hasattr(command, "commands") and words and words[0] in command.commands:
        command, words = command.commands[words[0]], words[1:]
    return command, words


def test_readme_commands_use_real_options_and_files() -> None:
    commands = _readme_commands()
    assert ["demo", "--serve"] in commands and ["serve"] in commands
    for words in commands:
        command, arguments = _command(words)
        assert not hasattr(command, "commands"), words
        flags = {flag for param in command.params for flag in (*param.opts, *param.secondary_opts)}
        for word in arguments:
            if word.startswith("--"):
                assert word.split("=", 1)[0] in flags, (words, word)
            elif word.endswith((".yaml", ".yml", "/")) and word not in MADE_BY_THE_README:
                assert (REPO / word).exists(), (words, word)


def test_readme_ci_example_runs_as_shown() -> None:
    (words,) = [w for w in _readme_commands() if w[0] == "score"]
    result = CliRunner().invoke(app, [*words, "--format", "json"])
    assert result.exit_code == 0, result.output


def test_docs_show_the_demo_config_that_ships() -> None:
    shipped = load_config(Path(str(DEMO_CONFIG)))
    text = (REPO / "docs" / "conversations.md").read_text(encoding="utf-8")
    (block,) = [
        b for b in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL) if "chat-coverage" in b
    ]
    assert parse_config(block) == shipped
