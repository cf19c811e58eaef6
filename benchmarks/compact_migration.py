"""How long revision ``0018_compact_storage`` takes on a database of ``--scores`` code scores.

Brings an empty database to the revision before (``0017_failure_signatures``), fills it with
score rows as the previous release wrote them (the five default code scorers' rows of the
capacity benchmark's agent trace, with their whole steps, under distinct ids: five a trace),
then times ``migrate.upgrade`` and prints the database's size before and after (SQLite after a
``VACUUM``, which gives the freed pages back; PostgreSQL's ``pg_total_relation_size`` of the
scores table after ``VACUUM FULL``).

    python benchmarks/compact_migration.py                           # 1,000,000 scores, SQLite
    python benchmarks/compact_migration.py --db postgresql://postgres@127.0.0.1/bench
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from alembic import command
from sqlalchemy import Engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.pipeline import agent_spans, export_body
from tracescore.config import Config
from tracescore.extract import extract_runs
from tracescore.ingest.decode import decode_traces
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.score_rows import score_row, steps_json
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.spans import Trace
from tracescore.store import migrate
from tracescore.store.engine import make_engine
from tracescore.store.scores import StoredScore, score_id, upsert_scores

BEFORE = "0017_failure_signatures"
CHUNK = 20_000


def templates() -> list[StoredScore]:
    """The default bindings' rows on one benchmark trace, steps as the previous release kept."""
    spans, trace_id = agent_spans(time.time_ns())
    trace = Trace(trace_id, spans=decode_traces(export_body(spans), json=False).spans)
    (run,) = [run for run in extract_runs(trace) if run.primary]
    rows = []
    for binding in compile_bindings(Config().scorers, {}, None):
        result = binding.scorer.run_sync(ScorerRun.of(run))
        row = score_row(binding, run, status=result.status, result=result)
        row["steps"] = steps_json(result)
        rows.append(row)
    return rows


def fill(engine: Engine, count: int) -> None:
    """``count`` score rows from :func:`templates`, five a trace, in chunks."""
    shapes = templates()
    now = datetime.now(UTC)
    made = 0
    while made < count:
        rows: list[StoredScore] = []
        for index in range(made, min(count, made + CHUNK)):
            template = shapes[index % len(shapes)]
            trace_id = f"{index // len(shapes):032x}"
            row = template.copy()
            row["trace_id"] = trace_id
            row["id"] = score_id(trace_id, row["span_id"], row["binding"], row["scorer_version"])
            row["created_at"] = row["updated_at"] = now
            rows.append(row)
        with engine.begin() as connection:
            upsert_scores(connection, rows)
        made += len(rows)


def size(engine: Engine) -> int:
    """The database's bytes once the freed space is given back."""
    if engine.dialect.name == "sqlite":
        with engine.connect() as connection:
            connection.exec_driver_sql("VACUUM")
        return Path(str(engine.url.database)).stat().st_size
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM FULL scores")
        return int(connection.execute(text("SELECT pg_total_relation_size('scores')")).scalar_one())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scores", type=int, default=1_000_000)
    parser.add_argument("--db", help="an empty database's URL (default: a SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        engine = make_engine(args.db or f"sqlite:///{Path(workdir) / 'scores.db'}")
        with engine.begin() as connection:
            command.upgrade(migrate.alembic_config(connection), BEFORE)
        began = time.perf_counter()
        fill(engine, args.scores)
        filled = time.perf_counter() - began
        before = size(engine)
        began = time.perf_counter()
        applied = migrate.upgrade(engine)
        took = time.perf_counter() - began
        after = size(engine)
        engine.dispose()
    print(f"{engine.dialect.name}: {args.scores:,} code scores written in {filled:.1f} s")
    print(f"  upgrade {', '.join(applied)}: {took:.1f} s ({args.scores / took:,.0f} scores/s)")
    print(
        f"  scores: {before / 1e6:,.1f} MB before, {after / 1e6:,.1f} MB after "
        f"({before / args.scores:,.0f} -> {after / args.scores:,.0f} bytes a score)"
    )


if __name__ == "__main__":
    main()
