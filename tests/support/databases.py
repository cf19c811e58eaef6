"""Throwaway databases on the real PostgreSQL server, for tests, benchmarks and the fixtures."""

from __future__ import annotations

import atexit
import functools
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

PG_ADMIN_URL = os.environ.get("TRACESCORE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _server_url(database: str) -> str:
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    return f"{base}/{database}"


def _sqlalchemy_url(database: str) -> str:
    return _server_url(database).replace("postgresql://", "postgresql+psycopg://", 1)


def _drop(name: str) -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@functools.cache
def _migrated_template() -> str:
    """A database at this release's schema head, built once per process (per xdist worker) and
    dropped at its exit: cloning it (~0.5 s) replaces building the schema in each test (1-2 s
    of alembic and DDL). Only this process connects to it, and only while building it, as
    PostgreSQL clones a template no one is connected to."""
    from tracescore.store import make_engine, migrate

    name = f"tracescore_template_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    atexit.register(_drop, name)
    engine = make_engine(_sqlalchemy_url(name))
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()
    return name


@contextmanager
def fresh_pg_database(*, migrated: bool = False) -> Iterator[str]:
    """Create a database on the real PostgreSQL server; drop it on exit.

    Empty by default (for tests of creating or migrating the schema); with ``migrated``, a
    clone of a database already at the schema head, which ``open_store`` then finds current.
    Never skips: the test command starts a server where none runs, so a connection failure here
    is a real failure.
    """
    name = f"tracescore_test_{uuid.uuid4().hex[:12]}"
    template = f' TEMPLATE "{_migrated_template()}"' if migrated else ""
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"{template}')
    try:
        yield _sqlalchemy_url(name)
    finally:
        _drop(name)
