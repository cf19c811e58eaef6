"""What bringing a database's schema up costs at start, per database: the test suite creates
hundreds, and every replica checks its database when it starts.

Four ways, each on a fresh database per run (median and minimum in milliseconds):

- ``create_all``: the models' tables, as start did before migrations;
- ``upgrade, empty``: what start does now on an empty database (``create_all``, stamp head);
- ``replay revisions``: every revision applied one after another (the path the fast one skips);
- ``upgrade, at head``: a restart on an up-to-date database (reads the revision, does nothing).

    python benchmarks/schema_create.py --runs 20 [--pg postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import psycopg
from alembic import command
from sqlalchemy import Engine

from tracescore.store import migrate
from tracescore.store.engine import create_tables, make_engine


def _replay(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), "head")


def _create_all(engine: Engine) -> None:
    create_tables(engine, migrate.store_metadata())


WAYS: dict[str, tuple[Callable[[Engine], object] | None, Callable[[Engine], object]]] = {
    "create_all": (None, _create_all),
    "upgrade, empty": (None, migrate.upgrade),
    "replay revisions": (None, _replay),
    "upgrade, at head": (migrate.upgrade, migrate.upgrade),
}
"""Name: (preparation, untimed; the timed step)."""


@contextmanager
def sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as directory:
        yield f"sqlite:///{Path(directory) / 'bench.db'}"


def pg_database(admin_url: str) -> Callable[[], AbstractContextManager[str]]:
    @contextmanager
    def database() -> Iterator[str]:
        name = f"tracescore_bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{admin_url.rpartition('/')[0]}/{name}"
        finally:
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return database


def measure(database: Callable[[], AbstractContextManager[str]], runs: int) -> None:
    for name, (prepare, step) in WAYS.items():
        times = []
        for _ in range(runs):
            with database() as url:
                engine = make_engine(url)
                if prepare is not None:
                    prepare(engine)
                started = time.perf_counter()
                step(engine)
                times.append((time.perf_counter() - started) * 1000)
                engine.dispose()
        print(f"  {name:18} median {statistics.median(times):6.1f} ms   min {min(times):6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--pg", help="PostgreSQL admin URL; each run gets a database of its own")
    args = parser.parse_args()
    migrate.store_metadata()  # module imports are not part of any way's cost
    print(f"SQLite ({args.runs} runs each):")
    measure(sqlite_database, args.runs)
    if args.pg:
        print(f"PostgreSQL ({args.runs} runs each):")
        measure(pg_database(args.pg), args.runs)


if __name__ == "__main__":
    main()
