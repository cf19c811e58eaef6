"""The test tree's own rules: no test module imports another, services are marked ``e2e`` and
PostgreSQL databases ``postgres``, the heaviest files are collected first.

What tests share lives in ``tests/support/`` (fixtures served by a folder's ``conftest.py``):
a test module imported by another runs its tests' module-level setup twice, and its private
helpers become an interface nobody meant to keep.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.databases import fresh_pg_database
from tests.support.markers import POSTGRES, starts_a_service
from tests.support.paths import REPO, TESTS
from tests.support.server_process import start_server
from tests.support.throwaway_pg import ThrowawayPostgres


def _test_modules() -> list[Path]:
    return sorted(path for path in TESTS.rglob("test_*.py") if "fixtures" not in path.parts)


def _imported_test_modules(path: Path) -> list[str]:
    """Test modules ``path`` imports (``tests.….test_x``, or ``test_x`` from a package)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found += [
            name
            for name in names
            if name.split(".")[0] == "tests" and name.split(".")[-1].startswith("test_")
        ]
    return found


def test_no_test_module_imports_another() -> None:
    offenders = {
        str(path.relative_to(REPO)): imported
        for path in _test_modules()
        if (imported := _imported_test_modules(path))
    }
    assert offenders == {}, "move what they share to tests/support/"


def test_the_rule_sees_an_import_of_a_test_module(tmp_path: Path) -> None:
    module = tmp_path / "test_example.py"
    module.write_text(
        "from tests.web.test_web_pages import agent_trace_json\n"
        "from tests.support.web_traces import visible_text\n"
        "import tests.store.test_store\n"
        "from tests.ingest import test_decode\n"
    )
    assert _imported_test_modules(module) == [
        "tests.web.test_web_pages",
        "tests.store.test_store",
        "tests.ingest.test_decode",
    ]


def test_helpers_live_in_support_and_test_modules_in_folders_mirroring_the_package() -> None:
    package = {path.name for path in (REPO / "tracescore").iterdir() if path.is_dir()}
    folders = {path.parent.name for path in _test_modules() if path.parent != TESTS}
    assert folders - package <= {"cli", "service", "system"}, folders - package
    strays = [
        path.name
        for path in TESTS.glob("*.py")
        if not path.name.startswith("test_") and path.name not in {"__init__.py", "conftest.py"}
    ]
    assert strays == [], "helpers go in tests/support/"


def _serves_through_a_helper(tmp_path: Path) -> None:
    with start_server(tmp_path):
        pass


def _helper_of_a_helper(tmp_path: Path) -> None:
    _serves_through_a_helper(tmp_path)


def _runs_the_command_itself() -> None:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "tracescore.cli", "serve", "--db", "sqlite://"])


def _serves_nothing(tmp_path: Path) -> None:
    (tmp_path / "serve").mkdir()


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (start_server, True),
        (_serves_through_a_helper, True),
        (_helper_of_a_helper, True),
        (_runs_the_command_itself, True),
        (_serves_nothing, False),
    ],
)
def test_a_test_that_starts_a_service_is_seen_however_deep(
    function: object, expected: bool
) -> None:
    assert starts_a_service([function]) is expected


def test_the_e2e_and_postgres_markers_are_registered_and_this_test_carries_neither(
    request: pytest.FixtureRequest,
) -> None:
    for marker in ("e2e", "postgres"):
        assert any(line.startswith(f"{marker}:") for line in request.config.getini("markers"))
        assert request.node.get_closest_marker(marker) is None


def _makes_a_database() -> None:
    with fresh_pg_database():
        pass


def _through_a_helper() -> None:
    _makes_a_database()


def _restarts_its_own_cluster() -> None:
    with ThrowawayPostgres():
        pass


def _reads_the_server_url() -> str:
    return os.environ["TRACESCORE_TEST_PG_URL"]


def _opens_sqlite(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'postgresql.db'}"


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (fresh_pg_database, True),
        (_makes_a_database, True),
        (_through_a_helper, True),
        (_restarts_its_own_cluster, True),
        (_reads_the_server_url, True),
        (_opens_sqlite, False),
    ],
)
def test_a_test_that_uses_postgresql_is_seen_however_deep(function: object, expected: bool) -> None:
    assert POSTGRES.reached_by([function]) is expected


def test_a_database_parametrized_test_is_marked_postgres_for_postgresql_only(
    request: pytest.FixtureRequest, db_url: str
) -> None:
    marked = request.node.get_closest_marker("postgres") is not None
    assert marked is db_url.startswith("postgresql"), db_url


def test_a_test_on_pg_url_is_marked_postgres(request: pytest.FixtureRequest, pg_url: str) -> None:
    assert request.node.get_closest_marker("postgres") is not None, pg_url


HANGS_WITH_THE_GIL = """
import ctypes

def test_blocks_where_no_signal_reaches() -> None:
    mutex = ctypes.create_string_buffer(64)  # a zeroed pthread mutex, taken twice
    libc = ctypes.PyDLL(None)  # PyDLL keeps the GIL through the call
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)
"""


def test_a_test_that_hangs_with_the_gil_held_ends_its_process_and_the_run_ends(
    tmp_path: Path,
) -> None:
    """The suite's own settings (pyproject's faulthandler options and scripts/test's pytest
    options, with only the delays cut): a hang that pytest-timeout's signal cannot reach is
    ended by the C-level watchdog, its stacks printed, and the run ends rather than waits."""
    runner = (REPO / "scripts" / "test").read_text()
    assert "--dist loadfile" in runner and "--max-worker-restart 0" in runner
    (tmp_path / "test_hang.py").write_text(HANGS_WITH_THE_GIL)
    (tmp_path / "test_other.py").write_text("def test_passes() -> None:\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadfile", "--max-worker-restart", "0",
         "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"),
         "-o", "timeout=1", "-o", "faulthandler_timeout=3", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**os.environ, "COLUMNS": "400"},
    )  # fmt: skip
    assert "node down: Not properly terminated" in done.stdout, done.stdout + done.stderr[-3000:]
    assert "::test_blocks_where_no_signal_reaches - worker 'gw" in done.stdout
    assert "test_blocks_where_no_signal_reaches" in done.stderr  # the watchdog's stack dump
    assert "1 failed, 1 passed" in done.stdout


ORDERED_CONFTEST = """
from tests.support.ordering import heaviest_files_first

def pytest_collection_modifyitems(items):
    heaviest_files_first(items)
"""


def test_the_files_that_start_the_most_processes_are_collected_first(tmp_path: Path) -> None:
    """``--dist loadfile`` hands out whole files in collection order: those with the most
    tests that start a service or a browser go first, the others after them as collected."""
    light = "def test_a() -> None:\n    pass\n"
    heavy = "import pytest\n\n@pytest.mark.browser\ndef test_{0}() -> None:\n    pass\n"
    (tmp_path / "conftest.py").write_text(ORDERED_CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers = browser\n")
    (tmp_path / "test_1_light.py").write_text(light)
    (tmp_path / "test_2_one.py").write_text(heavy.format("b") + light)
    (tmp_path / "test_3_two.py").write_text(heavy.format("b") + heavy.format("c"))
    (tmp_path / "test_4_light.py").write_text(light)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
         "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path),
         str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    files = [line.split("::")[0] for line in done.stdout.splitlines() if "::" in line]
    assert files == [
        "test_3_two.py",
        "test_3_two.py",
        "test_2_one.py",
        "test_2_one.py",
        "test_1_light.py",
        "test_4_light.py",
    ], done.stdout + done.stderr[-2000:]
