"""Install tracescore the way a machine without a C compiler does, offline, in a few seconds.

The checkout under test is copied first: its source files as git knows them (tracked, or new and
not ignored), so the compiled extensions and generated C files of the editable install
(ignored) stay behind and cannot stand in for a build that produced none. The venv sees the
dependencies installed for the running interpreter (a ``.pth`` file adds its site-packages) and
pip builds from the copy with them (``--no-build-isolation --no-index``: no network), with ``CC``
and ``CXX`` set to ``/bin/false``. ``--system-site-packages`` would not do: run from inside a
virtual environment it exposes the base interpreter's packages (an old setuptools, say), not the
ones the suite was installed with.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import REPO

# What building the package reads, as in the Dockerfile's build stage.
PACKAGE_PATHS = ("pyproject.toml", "README.md", "tracescore")


def copy_checkout(target: Path, paths: tuple[str, ...] = ()) -> Path:
    """Copy the checkout's source files under ``paths`` (all of them: ``()``) to ``target``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # tracked files deleted in the working tree are listed too
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@dataclass(frozen=True)
class Install:
    python: Path  # the venv's interpreter
    package: Path  # where the venv's tracescore package was installed
    log: str  # pip's verbose output


def install_without_compiler(workdir: Path) -> Install:
    """A venv in ``workdir`` with tracescore built from a copy of the checkout, no compiler."""
    source = copy_checkout(workdir / "source", PACKAGE_PATHS)
    venv = workdir / "venv"
    # No pip of its own: the running interpreter's (through its site-packages) installs into it.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    _see_site_packages(python, site.getsitepackages())
    env = {
        **os.environ,
        "CC": "/bin/false",
        "CXX": "/bin/false",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    built = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-v",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--no-cache-dir",
            "--ignore-installed",
            str(source),
        ],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return Install(python, _purelib(python) / "tracescore", built.stdout + built.stderr)


def _purelib(python: Path) -> Path:
    """Where ``python`` installs pure-Python packages (its venv's site-packages)."""
    return Path(
        subprocess.run(
            [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )


def _see_site_packages(python: Path, directories: list[str]) -> None:
    """Let the venv of ``python`` import what is installed in ``directories`` (after its own
    packages), their ``.pth`` files included, as ``site.addsitedir`` processes them."""
    lines = [f"import site; site.addsitedir({directory!r})" for directory in directories]
    (_purelib(python) / "_outer_site_packages.pth").write_text(
        "\n".join(lines) + "\n", encoding="utf-8"
    )
