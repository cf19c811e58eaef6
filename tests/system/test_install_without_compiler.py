"""The package installs without a C compiler and its code scorers score exactly as compiled.

A build with ``CC=/bin/false`` (``tests/support/nocompiler_install.py``: a fresh venv, offline) skips
the optional Cython extensions; that install must then run the pure-Python loops, say so, and
give every code scorer's results on the parity corpus and the benchmark's 10k-character cases
exactly as this (compiled, editable) install does: scores, step results and errors, float for
float.
"""

from __future__ import annotations

import json
import subprocess
import time
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import httpx
import pytest
import setuptools

from benchmarks.scorers import long_cases
from tests.support import code_scores
from tests.support.nocompiler_install import Install, install_without_compiler
from tests.support.parity_support import REGISTRY_NAME, load_cases, mastra_options, mastra_run
from tests.support.server_process import ServerProcess, free_port
from tracescore.compiled import EXTENSIONS, describe, extensions_built, implementation

CODE_SCORERS = {
    "completeness",
    "content-similarity",
    "keyword-coverage",
    "textual-difference",
    "tone",
    "tool-call-accuracy",
}
PURE_PYTHON_LINE = "code scorers: pure Python (built without a working C compiler)"


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Install:
    return install_without_compiler(tmp_path_factory.mktemp("nocompiler"))


def prepared_cases() -> list[dict[str, Any]]:
    """The code scorers' parity cases and one 10k-character case each, as the harness runs them."""
    cases = [
        case
        for name in ("sample.jsonl", "code_extra.jsonl", "nlp_extra.jsonl")
        for case in load_cases(name)
        if case["scorer"] in CODE_SCORERS
    ]
    return [
        {
            "id": case["id"],
            "scorer": REGISTRY_NAME.get(case["scorer"], case["scorer"]),
            "options": mastra_options(case),
            "run": mastra_run(case),
        }
        for case in [*cases, *long_cases(1)]
    ]


def test_this_install_runs_the_compiled_loops() -> None:
    """The fast-path tests compare the compiled loops with the pure-Python ones only if the
    extensions were built here: with optional extensions, a failed build no longer fails."""
    from tracescore.scorers.code import _dice, content_similarity, tone, tone_fast

    assert extensions_built() and implementation() == "compiled"
    assert describe().startswith("code scorers: compiled")
    assert content_similarity.compare_two_strings is _dice.compare_two_strings
    assert tone.comparative is tone_fast.comparative
    assert tone.sentence_comparatives is tone_fast.sentence_comparatives


def test_the_build_skipped_the_extensions(install: Install) -> None:
    for name in EXTENSIONS:
        assert f'building extension "tracescore.scorers.code.{name}" failed' in install.log
        assert not [
            path
            for suffix in EXTENSION_SUFFIXES
            for path in install.package.glob(f"scorers/code/{name}{suffix}")
        ]
    assert (install.package / "scorers" / "code" / "dice.py").is_file()


def test_the_build_used_the_suites_own_packages(install: Install) -> None:
    """The build ran with the setuptools the suite was installed with, also from inside a
    virtual environment (where a plain ``--system-site-packages`` venv saw the base
    interpreter's, whose older setuptools refused the project's ``ext-modules`` table)."""
    found = subprocess.run(
        [str(install.python), "-I", "-c", "import setuptools; print(setuptools.__file__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert Path(found).resolve().parent.parent == Path(setuptools.__file__).resolve().parent.parent


def test_code_scores_equal_the_compiled_install(install: Install, tmp_path: Path) -> None:
    cases = prepared_cases()
    counts = {
        scorer: sum(1 for case in cases if case["scorer"] == scorer)
        for scorer in ("tone", "content-similarity")
    }
    assert len(cases) > 200 and counts["tone"] > 30 and counts["content-similarity"] > 35, counts
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps(cases), encoding="utf-8")
    # -I: neither the working directory nor PYTHONPATH can put the checkout's package first.
    ran = subprocess.run(
        [str(install.python), "-I", str(Path(code_scores.__file__)), str(cases_file)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(ran.stdout)
    assert report["implementation"] == "pure Python"
    assert report["functions"] == [
        "tracescore.scorers.code.dice",
        "tracescore.scorers.code.tone_vader",
        "tracescore.scorers.code.tone_vader",
    ]
    outside = [path for path in report["modules"] if not path.startswith(str(install.package))]
    assert outside == [], "modules not from the no-compiler install"
    compiled = code_scores.results(cases)
    assert len(report["results"]) == len(compiled)
    for theirs, ours in zip(report["results"], compiled, strict=True):
        assert theirs == ours, theirs["id"]


def test_the_commands_say_pure_python(install: Install, tmp_path: Path) -> None:
    """``tracescore scorers`` shows it; ``tracescore serve`` logs it once at start."""
    listed = subprocess.run(
        [str(install.python), "-I", "-m", "tracescore.cli", "scorers"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert PURE_PYTHON_LINE in " ".join(listed.stdout.split())

    http_port, grpc_port, db_url = free_port(), free_port(), f"sqlite:///{tmp_path / 'serve.db'}"
    with open(tmp_path / "server.log", "wb") as log:
        process = subprocess.Popen(
            [
                str(install.python),
                "-I",
                "-m",
                "tracescore.cli",
                "serve",
                "--db",
                db_url,
                "--http-port",
                str(http_port),
                "--grpc-port",
                str(grpc_port),
            ],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    with ServerProcess(process, http_port, grpc_port, db_url, tmp_path) as server:
        deadline = time.monotonic() + 60
        while not _healthy(server) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _healthy(server), server.output()
    assert server.output().count(PURE_PYTHON_LINE) == 1, server.output()


def _healthy(server: ServerProcess) -> bool:
    try:
        return httpx.get(f"{server.base_url}/healthz", timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False
