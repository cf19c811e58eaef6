"""Shared fixtures: real databases (SQLite files and a real PostgreSQL server).

What tests share besides fixtures lives in ``tests/support/``; no test module imports another
(``tests/test_test_tree.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.databases import fresh_pg_database
from tests.support.markers import mark_by_need
from tests.support.ordering import heaviest_files_first

# The browser tests' fixtures (headless Chromium and a strict context), served to every module
# here rather than imported into each, where the fixture parameters shadowed the imports.
pytest_plugins = ["tests.support.browser_support"]

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database URL (SQLAlchemy form) on the real server, already at the
    schema head (a clone of a per-worker template, tests/support/databases.py): tests that
    create or migrate the schema themselves take ``empty_pg_url`` or ``empty_db_url``."""
    with fresh_pg_database(migrated=True) as url:
        yield url


@pytest.fixture
def empty_pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database URL: for tests of creating the schema."""
    with fresh_pg_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A real SQLite database file in a fresh temporary directory."""
    return f"sqlite:///{tmp_path / 'tracescore.db'}"


def _database(backend: str, tmp_path: Path, *, migrated: bool) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'tracescore.db'}"
    else:
        with fresh_pg_database(migrated=migrated) as url:
            yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Run a store test on both SQLite and PostgreSQL (the PostgreSQL one at the schema head)."""
    yield from _database(request.param, tmp_path, migrated=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Empty databases on SQLite and PostgreSQL: for tests of creating or migrating the
    schema, which a migrated clone would hide."""
    yield from _database(request.param, tmp_path, migrated=False)


@pytest.fixture(autouse=True, scope="module")
def _fresh_judges() -> Iterator[None]:
    """Each test module starts with no judge and an empty in-process verdict cache.

    Judges and their cache live for the process (``tracescore.judge.judges``), and modules run
    scripted judge servers that answer the same prompt differently: a verdict cached by one
    module served another that a parallel run happened to put after it on the same worker.
    """
    from tracescore.judge.judges import use_verdict_store

    use_verdict_store(None)
    yield


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that start a real ``tracescore serve`` get the ``e2e`` marker, and those that use a
    PostgreSQL server the ``postgres`` one (tests/support/markers.py); then the files that
    start the most services and browsers go first (tests/support/ordering.py)."""
    mark_by_need(items)
    heaviest_files_first(items)
