"""The package's parts import only the parts below them, and no modules import each other in a
circle: the contracts in ``pyproject.toml`` (``[tool.importlinter]``), checked on the real
import graph by import-linter."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_import_contracts_hold() -> None:
    linter = shutil.which("lint-imports")
    assert linter, "import-linter is a test dependency (pyproject.toml, extra 'test')"
    checked = subprocess.run(
        [linter, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    assert "0 broken" in checked.stdout
