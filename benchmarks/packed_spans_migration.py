"""How long revision ``0019_packed_spans`` takes on a database of the release before.

Seeds a SQLite file (or, with ``--db``, an empty PostgreSQL database) at revision
``0018_compact_storage`` with ``--spans`` spans in that release's form (hex ids, attributes
as text): traces of the capacity benchmark's four GenAI spans (``benchmarks/pipeline.py``),
plus their traces rows, written with plain SQL. Then times the upgrade, and prints the
database's size before and after (SQLite: its pages in use; the freed ones go back on
``VACUUM``).

    python benchmarks/packed_spans_migration.py                 # 1,000,000 spans
    python benchmarks/packed_spans_migration.py --db postgresql://postgres@127.0.0.1/bench
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from alembic import command
from sqlalchemy import Engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.pipeline import agent_trace
from benchmarks.sql_numbers import NUMBERS
from tracescore.ingest.decode import decode_traces
from tracescore.store import codec, migrate
from tracescore.store.engine import make_engine

BEFORE = "0018_compact_storage"
_HEX = {
    "sqlite": "printf('%0{width}x', {value})",
    "postgresql": "lpad(to_hex({value}), {width}, '0')",
}


def _attribute_texts() -> list[str]:
    """The typed JSON the release before stored for each of a benchmark trace's spans."""
    body, _ = agent_trace(time.time_ns())
    return [codec.encode(span.attributes) for span in decode_traces(body, json=False).spans]


def seed(engine: Engine, spans: int) -> None:
    dialect = engine.dialect.name
    prefix, numbers = NUMBERS[dialect]
    traces = spans // 4
    attributes = {f"a{n}": value for n, value in enumerate(_attribute_texts())}
    pick = "CASE i % 4 " + " ".join(f"WHEN {n} THEN :a{n}" for n in range(4)) + " END"
    with engine.begin() as db:
        command.upgrade(migrate.alembic_config(db), BEFORE)
        db.execute(
            text("INSERT INTO resources VALUES (:r, :attributes)"),
            {"r": "1" * 32, "attributes": '{"service.name":"bench-agent"}'},
        )
        db.execute(text("INSERT INTO scopes VALUES (:s, '', '', '{}')"), {"s": "2" * 32})
        db.execute(
            text(
                f"""{prefix} INSERT INTO traces (trace_id, service_name, root_name, has_root,
                span_count, log_count, generation, start_time_ns, end_time_ns, first_seen,
                last_seen, pending_since, state, scored_generation, attempts)
            SELECT {_HEX[dialect].format(value="i", width=32)}, 'bench-agent',
                'invoke_agent WeatherBot', 1 = 1, 4, 0, 1, 1700000000000000000 + i,
                1700000000900000000 + i, 0, 0, 0, 'scored', 1, 0 FROM {numbers}"""
            ),
            {"count": traces},
        )
        db.execute(
            text(
                f"""{prefix} INSERT INTO spans (trace_id, span_id, parent_span_id, name, kind,
                start_time_ns, end_time_ns, status_code, status_message, trace_state, flags,
                service_name, attributes, resource_id, scope_id)
            SELECT {_HEX[dialect].format(value="i / 4", width=32)},
                {_HEX[dialect].format(value="i", width=16)},
                CASE WHEN i % 4 = 3 THEN NULL ELSE {_HEX[dialect].format(value="i - i % 4 + 3", width=16)} END,
                'chat gpt-4o-mini', 1, 1700000000000000000 + i, 1700000000300000000 + i, 0, '',
                '', 0, 'bench-agent', {pick}, :r, :s FROM {numbers}"""
            ),
            {"count": traces * 4, "r": "1" * 32, "s": "2" * 32, **attributes},
        )


def size(engine: Engine) -> int:
    with engine.connect() as db:
        if engine.dialect.name == "sqlite":
            used = db.exec_driver_sql("PRAGMA page_count").scalar_one()
            free = db.exec_driver_sql("PRAGMA freelist_count").scalar_one()
            return int((used - free) * db.exec_driver_sql("PRAGMA page_size").scalar_one())
        return int(
            db.execute(
                text(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace "
                    "n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
                    "AND c.relkind = 'r'"
                )
            ).scalar_one()
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--db", help="an empty PostgreSQL database instead of a SQLite file")
    args = parser.parse_args()
    url = args.db or f"sqlite:///{Path(tempfile.mkdtemp()) / 'tracescore.db'}"
    engine = make_engine(url)
    started = time.perf_counter()
    seed(engine, args.spans)
    print(f"seeded {args.spans:,} spans at {BEFORE} in {time.perf_counter() - started:.1f} s")
    before = size(engine)
    started = time.perf_counter()
    with engine.begin() as db:  # this revision alone: later ones time their own work
        command.upgrade(migrate.alembic_config(db), "0019_packed_spans")
    took = time.perf_counter() - started
    after = size(engine)
    print(
        f"0019_packed_spans: {took:.1f} s ({args.spans / took:,.0f} spans/s), "
        f"{engine.dialect.name}; {before / 1e6:,.1f} MB in use before, {after / 1e6:,.1f} MB after"
    )
    engine.dispose()


if __name__ == "__main__":
    main()
