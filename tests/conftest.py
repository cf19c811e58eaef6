"""Shared fixtures: real databases (SQLite files and a real PostgreSQL server) and fixture paths."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

# The browser tests' fixtures (headless Chromium and a strict context), served to every module
# here rather than imported into each, where the fixture parameters shadowed the imports.
pytest_plugins = ["tests.browser_support"]

FIXTURES = Path(__file__).parent / "fixtures"
CAPTURES = FIXTURES / "captures"

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PG_ADMIN_URL = os.environ.get(
    "TRACESCORE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def _server_url(database: str) -> str:
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    return f"{base}/{database}"


@contextmanager
def fresh_pg_database() -> Iterator[str]:
    """Create an empty database on the real PostgreSQL server; drop it on exit.

    Never skips: the test command starts a server where none runs, so a connection failure here
    is a real failure.
    """
    name = f"tracescore_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _server_url(name).replace("postgresql://", "postgresql+psycopg://", 1)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database URL (SQLAlchemy form) on the real server."""
    with fresh_pg_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A real SQLite database file in a fresh temporary directory."""
    return f"sqlite:///{tmp_path / 'tracescore.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Run a store test on both SQLite and PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tracescore.db'}"
    else:
        with fresh_pg_database() as url:
            yield url


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
