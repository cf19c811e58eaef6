"""Commands that only read a database never create one: on a missing SQLite path they say which
file they looked for and that it does not exist, and leave neither the file nor its directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracescore.cli import app

READ_ONLY = [
    ["db", "current"],
    ["db", "check"],
    ["db", "prune"],
    ["calibrate", "--binding", "tone"],
    ["export", "--binding", "tone"],
    ["compare", "--binding", "tone", "--versions", "1", "2"],
    ["rescore", "--dry-run"],
    ["insights"],
]


@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
def test_a_missing_database_is_named_not_created(command: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "misspelt-dir" / "scores.db"
    result = CliRunner().invoke(app, [*command, "--db", f"sqlite:///{missing}"])
    assert result.exit_code == 1, result.output
    assert f"no database at {missing}" in result.output
    assert "does not exist" in result.output
    assert not missing.parent.exists()


def test_the_default_database_is_not_created_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["db", "current"])
    assert result.exit_code == 1
    assert f"no database at {tmp_path / 'tracescore.db'} (sqlite:///tracescore.db)" in result.output
    assert list(tmp_path.iterdir()) == []


def test_current_names_the_database_it_read(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'scores.db'}"
    runner = CliRunner()
    assert runner.invoke(app, ["db", "upgrade", "--db", url]).exit_code == 0
    current = runner.invoke(app, ["db", "current", "--db", url])
    assert current.exit_code == 0
    assert current.output.startswith(f"{url}: at revision ")
