"""Dashboard page times over a day of scores: overview (cold, warm, filtered, split), alerts, live,
a trace page and ``/api/v1/scores``.

Writes ``--scores`` synthetic rows spread over the last 24 hours (``--bindings`` bindings,
judged ones with a cost, 3 % errors, seven agents) into a real database (a temporary SQLite
file, or ``--db``), then times the pages through the real app (in process, FastAPI's test
client): the overview with its aggregates computed (cold) and from the shared cache (warm),
a filtered overview, the overview split by agent, the alerts page and the live poll; then one
agent trace of the capacity benchmark with its spans and the default bindings' scores, stored as
the scoring worker stores them, and the times of its trace page, of ``/api/v1/scores`` (a page
of 100, whole and filtered) and of its scores with their steps (``?trace_id=…&steps=true``).

    python benchmarks/dashboard.py                        # SQLite, 100,000 scores
    python benchmarks/dashboard.py --db postgresql://postgres@127.0.0.1/bench
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi.testclient import TestClient

from benchmarks.pipeline import agent_spans, export_body
from tests.support.score_streams import insert_rows, score_row
from tracescore.config import Config, parse_config
from tracescore.extract import extract_runs
from tracescore.ingest.decode import decode_traces
from tracescore.pipeline import score_rows
from tracescore.pipeline.bindings import compile_bindings
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.service import create_app
from tracescore.spans import Trace
from tracescore.store import SpanStore, open_store
from tracescore.store.scores import upsert_scores

BINDINGS = ["faithfulness", "answer-relevancy", "tone", "completeness", "toxicity", "bias"]


def rows(count: int, bindings: int, now: datetime):
    chosen = random.Random(7)
    for index in range(count):
        binding = BINDINGS[index % bindings]
        judged = binding in ("faithfulness", "answer-relevancy", "toxicity", "bias")
        failed = chosen.random() < 0.03
        yield score_row(
            now - timedelta(seconds=chosen.uniform(0, 86_400)),
            None if failed else min(1.0, max(0.0, chosen.gauss(0.75, 0.15))),
            binding=binding,
            scorer_id=binding,
            agent=f"agent-{index % 7}",
            judge_model="gpt-4o-mini" if judged else None,
            cost_usd=0.0004 if judged else 0.0,
            reason="synthetic",
        )


def scored_trace(store: SpanStore) -> str:
    """One benchmark agent trace stored with the default bindings' scores, as the worker
    stores them; its id."""
    spans, trace_id = agent_spans(time.time_ns())
    decoded = decode_traces(export_body(spans), json=False).spans
    store.write(decoded, [])
    (run,) = [run for run in extract_runs(Trace(trace_id, spans=decoded)) if run.primary]
    found = []
    for binding in compile_bindings(Config().scorers, {}, None):
        result = binding.scorer.run_sync(ScorerRun.of(run))
        found.append(score_rows.score_row(binding, run, status=result.status, result=result))
    with store.engine.begin() as connection:
        upsert_scores(connection, found)
    return trace_id


FILTERED_API = {
    "one agent": "agent=agent-3",
    "one binding": "binding=tone",
    "errors only (3 %)": "status=error",
    "one scorer and agent": "scorer=tone&agent=agent-3",
}
"""Filters of ``/api/v1/scores`` timed beside the unfiltered page: each narrows the rows read
through another index (names, status), and a page of a rare status reads furthest back."""


def timed(client: TestClient, path: str, repeat: int) -> list[float]:
    found = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(path)
        found.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text[:500]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--scores", type=int, default=100_000)
    parser.add_argument("--bindings", type=int, default=5, choices=range(1, len(BINDINGS) + 1))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        store = open_store(args.db or f"sqlite:///{Path(scratch) / 'dashboard.db'}")
        started = time.perf_counter()
        written = insert_rows(store.engine, rows(args.scores, args.bindings, datetime.now(UTC)))
        print(
            f"{written:,} scores over 24 h written in {time.perf_counter() - started:.1f} s "
            f"({store.dialect})"
        )
        trace_id = scored_trace(store)
        # Entered, the client keeps one event loop, as a server does: outside ``with`` each
        # request started a loop and worker threads of its own, and each page paid for its
        # threads' first use (thread-local coders, connections), which a served page does not.
        with TestClient(create_app(parse_config("{}"), store)) as client:
            (cold,) = timed(client, "/", 1)
            warm = timed(client, "/", 5)
            filtered = timed(client, "/?scorer=tone&agent=agent-3", 5)
            hour = timed(client, "/?window=1h", 3)
            (split_cold,) = timed(client, "/?split=agent", 1)
            split = timed(client, "/?split=agent", 5)
            alerts = timed(client, "/ui/alerts", 5)
            live = timed(client, "/ui/live", 20)
            trace_page = timed(client, f"/ui/traces/{trace_id}", 10)
            api = timed(client, "/api/v1/scores?limit=100", 10)
            filtered_api = {
                name: timed(client, f"/api/v1/scores?limit=100&{query}", 10)
                for name, query in FILTERED_API.items()
            }
            steps = timed(client, f"/api/v1/scores?trace_id={trace_id}&steps=true", 10)
            print(f"overview (24 h, 96 points per chart), cold: {cold * 1000:,.0f} ms")
            print(f"overview, aggregates cached: median {statistics.median(warm) * 1000:,.0f} ms")
            print(
                "overview filtered by scorer and agent: "
                f"median {statistics.median(filtered) * 1000:,.0f} ms"
            )
            print(f"overview of the last hour: median {statistics.median(hour) * 1000:,.0f} ms")
            print(f"overview split by agent (7 agents), cold: {split_cold * 1000:,.0f} ms")
            print(
                f"overview split by agent, cached: median {statistics.median(split) * 1000:,.0f} ms"
            )
            print(f"/ui/alerts: median {statistics.median(alerts) * 1000:,.0f} ms")
            print(f"/ui/live: median {statistics.median(live) * 1000:,.1f} ms")
            print(
                f"trace page (4 spans, 5 code scores): median {statistics.median(trace_page) * 1000:,.1f} ms"
            )
            print(f"/api/v1/scores, 100 rows: median {statistics.median(api) * 1000:,.1f} ms")
            for name, times in filtered_api.items():
                print(
                    f"/api/v1/scores, 100 rows, {name}: median {statistics.median(times) * 1000:,.1f} ms"
                )
            print(
                "/api/v1/scores?trace_id=…&steps=true (5 code scores): "
                f"median {statistics.median(steps) * 1000:,.1f} ms"
            )
        store.close()


if __name__ == "__main__":
    main()
