"""Exit 0 when ``pip install -e '.[test]'`` would change nothing, else 1 (scripts/test then runs
it): this checkout is the one installed, from this ``pyproject.toml``, every requirement of the
package and of its ``test`` extra is met, and each compiled loop is newer than its source.

pip builds an editable install (the Cython loops too) in an isolated environment it fills
with fresh setuptools and Cython each time: tens of seconds of every run of the suite where
nothing changed. Any doubt, a package it cannot check among them, means "install".

    python3 scripts/installed.py            # exit status only
    python3 scripts/installed.py --record   # after an install: remember this pyproject.toml
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
STAMP = ROOT / "build" / "installed-pyproject.sha256"
"""The hash of the ``pyproject.toml`` last installed from (``build/`` is not tracked)."""


def _pyproject_hash() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def _met(requirement: Requirement, extra: str = "") -> bool:
    """Whether ``requirement`` (and the requirements of the extras it asks for) is installed
    at a version it allows; one whose marker excludes this machine is met."""
    from packaging.requirements import Requirement

    if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
        return True
    try:
        dist = importlib.metadata.distribution(requirement.name)
    except importlib.metadata.PackageNotFoundError:
        return False
    if not requirement.specifier.contains(dist.version, prereleases=True):
        return False
    for wanted in requirement.extras:
        for text in dist.requires or []:
            needed = Requirement(text)
            of_extra = needed.marker is not None and needed.marker.evaluate({"extra": wanted})
            if of_extra and not _met(needed, wanted):
                return False
    return True


def _requirements(project: dict[str, Any], extras: list[str]) -> list[Requirement]:
    """The project's requirements with those of ``extras``, its own extras expanded."""
    from packaging.requirements import Requirement

    name = project["name"]
    optional = project.get("optional-dependencies", {})
    found = [Requirement(text) for text in project.get("dependencies", [])]
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in optional.get(extra, []):
            requirement = Requirement(text)
            if requirement.name == name:
                pending += requirement.extras
            else:
                found.append(requirement)
    return found


def installed() -> bool:
    """Whether this checkout is installed as ``pip install -e '.[test]'`` would install it."""
    if not STAMP.exists() or STAMP.read_text().strip() != _pyproject_hash():
        return False
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    dist = importlib.metadata.distribution(project["name"])
    origin = json.loads(dist.read_text("direct_url.json") or "{}")
    if origin.get("url") != ROOT.as_uri() or not origin.get("dir_info", {}).get("editable"):
        return False
    if dist.version != project["version"]:
        return False
    for source in (ROOT / "tracescore").rglob("*.pyx"):
        built = list(source.parent.glob(f"{source.stem}.*.so"))
        if not built or min(b.stat().st_mtime for b in built) < source.stat().st_mtime:
            return False
    return all(_met(requirement) for requirement in _requirements(project, ["test"]))


def main() -> int:
    if sys.argv[1:] == ["--record"]:
        STAMP.parent.mkdir(exist_ok=True)
        STAMP.write_text(_pyproject_hash() + "\n")
        return 0
    try:
        return 0 if installed() else 1
    except Exception:  # noqa: BLE001 - any doubt means "install"
        return 1


if __name__ == "__main__":
    sys.exit(main())
