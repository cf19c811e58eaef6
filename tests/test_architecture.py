"""The import contracts in ``pyproject.toml`` (``[tool.importlinter]``) have teeth.

``scripts/check`` runs import-linter on the package itself (so the suite, which ``scripts/test``
starts after the check, does not run it again); here it runs on a copy of the package given an
import the contracts forbid, and must refuse it: a contract edited into holding for anything
would pass the check silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    linter = shutil.which("lint-imports")
    assert linter, "import-linter is a test dependency (pyproject.toml, extra 'test')"
    return subprocess.run(
        [linter, "--no-cache"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """The package's modules and the contracts, in a folder of their own."""
    shutil.copytree(
        REPO / "tracescore",
        tmp_path / "tracescore",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"),
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_copy_keeps_the_contracts(package_copy: Path) -> None:
    checked = _lint_imports(package_copy)
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    assert "0 broken" in checked.stdout


def test_an_import_upwards_breaks_the_layers(package_copy: Path) -> None:
    """A module of the store importing the command line: a layer reaching the one at the top."""
    (package_copy / "tracescore" / "store" / "upwards.py").write_text("import tracescore.cli\n")
    checked = _lint_imports(package_copy)
    assert checked.returncode != 0
    assert "Parts import only the parts below them (docs/architecture.md) BROKEN" in checked.stdout
    assert "tracescore.store.upwards -> tracescore.cli" in checked.stdout


def test_a_cycle_between_siblings_breaks_the_acyclic_contract(package_copy: Path) -> None:
    """Two modules of one package importing each other, each otherwise allowed by the layers."""
    store = package_copy / "tracescore" / "store"
    (store / "cycle_a.py").write_text("import tracescore.store.cycle_b\n")
    (store / "cycle_b.py").write_text("import tracescore.store.cycle_a\n")
    checked = _lint_imports(package_copy)
    assert checked.returncode != 0
    assert "No import cycle between the modules of any package BROKEN" in checked.stdout


def test_sql_outside_the_store_breaks_the_forbidden_contract(package_copy: Path) -> None:
    """A web module building its own query: SQLAlchemy belongs to the tables' owners in store/."""
    web = package_copy / "tracescore" / "web"
    (web / "own_query.py").write_text("from sqlalchemy import select\n")
    checked = _lint_imports(package_copy)
    assert checked.returncode != 0
    assert (
        "SQL stays in store/: SQLAlchemy, SQLModel and Alembic are imported nowhere else BROKEN"
        in checked.stdout
    )
    assert "tracescore.web.own_query -> sqlalchemy" in checked.stdout


def test_every_part_but_the_store_is_bound_by_the_forbidden_contract() -> None:
    """A new top-level module or package must join the contract's sources, or it could hold SQL."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    forbidden = next(c for c in contracts if c["type"] == "forbidden")
    parts = {
        f"tracescore.{path.stem}"
        for path in (REPO / "tracescore").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    assert set(forbidden["source_modules"]) == parts - {"tracescore.store"}


def test_a_cycle_closed_by_a_type_checking_import_breaks_the_acyclic_contract(
    package_copy: Path,
) -> None:
    """An import under ``if TYPE_CHECKING:`` never runs, but it ties the modules all the same:
    two such modules importing each other are a cycle like any other."""
    web = package_copy / "tracescore" / "web"
    (web / "typed_a.py").write_text("import tracescore.web.typed_b\n")
    (web / "typed_b.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import tracescore.web.typed_a\n"
    )
    checked = _lint_imports(package_copy)
    assert checked.returncode != 0
    assert "No import cycle between the modules of any package BROKEN" in checked.stdout
    assert "- .typed_b -> .typed_a (1 import)" in checked.stdout
