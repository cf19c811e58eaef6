"""Bytes per scored trace on the real libraries' captures, where `pipeline.py --capacity` uses
small synthetic spans: every export of ``tests/fixtures/captures`` sent to a served store, scored
by the default bindings, then the database measured (and, on SQLite, its largest tables and
indexes by ``dbstat``).

    python benchmarks/capture_storage.py                     # a SQLite file in a temp dir
    python benchmarks/capture_storage.py --db postgresql://postgres@127.0.0.1/scratch

To compare two builds, run each from its own checkout with ``PYTHONPATH`` set to it: the
service this starts runs the code ``PYTHONPATH`` names, else the installed package's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import Engine, create_engine, text

from benchmarks.pipeline import _database_bytes
from tests.support.server_process import start_server

CAPTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "captures"
UNSETTLED = {"pending", "ready", "claimed"}


def _states(engine: Engine) -> dict[str, int]:
    with engine.connect() as connection:
        return {
            state: int(count)
            for state, count in connection.execute(
                text("SELECT state, count(*) FROM traces GROUP BY state")
            )
        }


def _largest(engine: Engine) -> str:
    """The SQLite database's largest tables and indexes, or nothing on PostgreSQL."""
    if engine.dialect.name != "sqlite":
        return ""
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 8"
        ).all()
    return ", ".join(f"{name} {size // 1024:,} KB" for name, size in rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help="database URL (default: a SQLite file in a temp dir)")
    args = parser.parse_args()
    exports = sorted(CAPTURES.rglob("*.pb"))
    with (
        tempfile.TemporaryDirectory() as workdir,
        start_server(
            Path(workdir), db_url=args.db, config={"workers": {"poll_interval": 0.05}}
        ) as server,
    ):
        accepted = sum(
            server.http.post(
                "/v1/traces",
                content=export.read_bytes(),
                headers={"Content-Type": "application/x-protobuf"},
            ).status_code
            == 200
            for export in exports
        )
        engine = create_engine(server.db_url)
        deadline = time.monotonic() + 300
        while set(states := _states(engine)) & UNSETTLED and time.monotonic() < deadline:
            time.sleep(1.0)
        with engine.connect() as connection:
            scores = connection.execute(text("SELECT count(*) FROM scores")).scalar_one()
        stored = _database_bytes(engine)
        largest = _largest(engine)
        engine.dispose()
    scored = states.get("scored", 0)
    print(
        f"{len(exports):,} captured exports ({accepted:,} accepted): traces {states}, {scores:,} scores"
    )
    print(
        f"  storage: {stored / max(scored, 1):,.0f} bytes per scored trace ({stored / 1e6:,.1f} MB)"
    )
    if largest:
        print(f"  largest: {largest}")


if __name__ == "__main__":
    main()
