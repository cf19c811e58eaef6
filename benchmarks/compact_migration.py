"""How long revisions ``0020_compact_scores`` (with 0021 and 0023, which leave scores alone) and
``0024_score_series`` take on a database of ``--scores`` code scores.

Brings an empty database to the revision before (``0018_compact_storage``), fills it with
score rows as that revision's release wrote them (the default code scorers' rows of the
capacity benchmark's agent trace under distinct ids, a trace's worth at a time: hex ids as text,
times as datetimes, the recompute marker for code scores and ``consistency``'s whole steps),
then times the upgrade to ``0023_compact_spans_traces`` and from there to the head (0024, and
0025, which leaves scores alone), and prints the scores table's size before and after (SQLite
after a ``VACUUM``, which gives the freed pages back; PostgreSQL's ``pg_total_relation_size`` of
the scores table after ``VACUUM FULL``).

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
from typing import Any

import sqlalchemy as sa
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
from tracescore.store.scores import score_id

BEFORE = "0018_compact_storage"
COMPACT = "0023_compact_spans_traces"
CHUNK = 20_000
EARLIER = sa.table(
    "scores",
    *(
        sa.column(name, sa.String())
        for name in (
            "id",
            "trace_id",
            "span_id",
            "binding",
            "scorer_id",
            "scorer_version",
            "status",
            "label",
            "reason",
            "error",
            "judge_model",
            "run_kind",
            "service",
            "agent",
            "model",
        )
    ),
    *(sa.column(name, sa.Float()) for name in ("score", "cost_usd", "latency_ms")),
    *(sa.column(name, sa.Integer()) for name in ("input_tokens", "output_tokens")),
    sa.column("steps", sa.JSON()),
    *(sa.column(name, sa.DateTime(timezone=True)) for name in ("created_at", "updated_at")),
)
"""``scores`` as revision 0018 left it: hex text, JSON steps, datetimes."""


def templates() -> list[dict[str, Any]]:
    """The default bindings' rows on one benchmark trace, steps as revision 0018's writer kept
    them (the marker for code scores, ``consistency``'s whole)."""
    spans, trace_id = agent_spans(time.time_ns())
    trace = Trace(trace_id, spans=decode_traces(export_body(spans), json=False).spans)
    (run,) = [run for run in extract_runs(trace) if run.primary]
    rows = []
    for binding in compile_bindings(Config().scorers, {}, None):
        result = binding.scorer.run_sync(ScorerRun.of(run))
        row: dict[str, Any] = dict(score_row(binding, run, status=result.status, result=result))
        if binding.scorer.id == "consistency":
            row["steps"] = steps_json(result)
        rows.append({column.name: row.get(column.name) for column in EARLIER.columns})
    return rows


def fill(engine: Engine, count: int) -> None:
    """``count`` score rows from :func:`templates`, a trace's worth at a time, in chunks."""
    shapes = templates()
    now = datetime.now(UTC)
    made = 0
    while made < count:
        rows: list[dict[str, Any]] = []
        for index in range(made, min(count, made + CHUNK)):
            template = shapes[index % len(shapes)]
            trace_id = f"{index // len(shapes):032x}"
            row = template.copy()
            row["trace_id"] = trace_id
            row["id"] = score_id(trace_id, row["span_id"], row["binding"], row["scorer_version"])
            row["created_at"] = row["updated_at"] = now
            rows.append(row)
        with engine.begin() as connection:
            connection.execute(EARLIER.insert(), rows)
        made += len(rows)


def size(engine: Engine) -> int:
    """The database's bytes once the freed space is given back."""
    if engine.dialect.name == "sqlite":
        with engine.connect() as connection:
            connection.exec_driver_sql("VACUUM")
            # In WAL mode the vacuumed pages reach the file only at a checkpoint.
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
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
        took = {}
        for target in (COMPACT, "head"):
            began = time.perf_counter()
            with engine.begin() as connection:
                command.upgrade(migrate.alembic_config(connection), target)
            took[target] = time.perf_counter() - began
        after = size(engine)
        engine.dispose()
    print(f"{engine.dialect.name}: {args.scores:,} code scores written in {filled:.1f} s")
    for target, seconds in took.items():
        print(f"  upgrade to {target}: {seconds:.1f} s ({args.scores / seconds:,.0f} scores/s)")
    print(
        f"  scores: {before / 1e6:,.1f} MB before, {after / 1e6:,.1f} MB after "
        f"({before / args.scores:,.0f} -> {after / args.scores:,.0f} bytes a score)"
    )


if __name__ == "__main__":
    main()
