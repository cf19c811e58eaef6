"""Throwaway databases on the real PostgreSQL server, for tests, benchmarks and the fixtures."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

PG_ADMIN_URL = os.environ.get("TRACESCORE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


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
