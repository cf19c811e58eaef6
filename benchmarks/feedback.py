"""Feedback's costs on a real store: the OTLP feedback scan, a review queue page, a calibration.

1. scan: ``--traces`` agent traces (four spans each, half with a GenAI content log record) are
   written, ``--feedback`` percent of them carrying a human verdict (half as log records, half
   as span events); one look of the feedback scan reads them all: traces scanned per second,
   and the cost of a look that finds nothing new;
2. review queue: ``--scores`` scores of two bindings over seven days, a tenth of them reviewed;
   the time of a queue page;
3. calibration: the report of one binding over the same store, and the threshold learnt from
   its verdicts (``threshold: learn``: what the scoring processes and the API do once per
   ``refresh``).

    python benchmarks/feedback.py                     # SQLite, 20,000 traces, 100,000 scores
    python benchmarks/feedback.py --db postgresql://postgres@127.0.0.1/bench
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

from sqlalchemy import text

from tests.support.score_streams import insert_rows, score_row
from tracescore.config import parse_config
from tracescore.feedback.report import calibration_report
from tracescore.feedback.review import ReviewQueue
from tracescore.feedback.scan import FeedbackScanner
from tracescore.pipeline.learnt_thresholds import PassThreshold, learn_for
from tracescore.spans import LogRecord, Resource, Scope, Span, SpanEvent
from tracescore.store import SpanStore, open_store
from tracescore.store.feedback import Feedback, FeedbackStore

LEARNING = "{name: tone, scorer: tone, threshold: learn}"
"""The second binding, learning its threshold from the same verdicts."""
CONFIG = (
    "scorers: [{name: quality, scorer: completeness, threshold: 0.6}, {name: tone, scorer: tone}]"
)
VERDICT = {
    "tracescore.feedback.source": "human",
    "gen_ai.evaluation.name": "quality",
    "gen_ai.evaluation.score.label": "fail",
}
RESOURCE, SCOPE = Resource({"service.name": "bench"}), Scope("bench")


def _trace(rng: random.Random, feedback: float) -> tuple[list[Span], list[LogRecord], bool]:
    """An agent trace's spans and log records, and whether it carries a verdict."""
    trace_id = f"{rng.getrandbits(128):032x}"
    ids = [f"{rng.getrandbits(64):016x}" for _ in range(4)]
    start = time.time_ns()
    spans = [
        Span(
            trace_id,
            span_id,
            ids[0] if index else None,
            name,
            1,
            start + index,
            start + 10 + index,
            {"gen_ai.operation.name": name, "gen_ai.request.model": "gpt-4o-mini"},
            RESOURCE,
            SCOPE,
        )
        for index, (span_id, name) in enumerate(
            zip(ids, ("invoke_agent", "chat", "execute_tool", "chat"), strict=True)
        )
    ]
    logs = []
    if rng.random() < 0.5:
        logs.append(
            LogRecord(
                start,
                start,
                trace_id,
                ids[1],
                "gen_ai.user.message",
                9,
                "",
                {"content": "Weather in Paris?"},
                {},
                RESOURCE,
                SCOPE,
            )
        )
    draw = rng.random() * 100
    if draw < feedback / 2:
        logs.append(
            LogRecord(
                start,
                start,
                trace_id,
                ids[0],
                "gen_ai.evaluation.result",
                9,
                "",
                None,
                dict(VERDICT),
                RESOURCE,
                SCOPE,
            )
        )
    elif draw < feedback:
        spans[0].events.append(SpanEvent("gen_ai.evaluation.result", start, dict(VERDICT)))
    return spans, logs, draw < feedback


def scan(store: SpanStore, args: argparse.Namespace) -> None:
    rng = random.Random(1)
    sent = 0
    for start in range(0, args.traces, 500):
        batch = [_trace(rng, args.feedback) for _ in range(min(500, args.traces - start))]
        store.write(
            [s for spans, _, _ in batch for s in spans], [r for _, logs, _ in batch for r in logs]
        )
        sent += sum(verdict for _, _, verdict in batch)
    scanner = FeedbackScanner(store, clock=lambda: time.time() + 5)
    started = time.perf_counter()
    recorded = scanner.run_once()
    seconds = time.perf_counter() - started
    assert recorded == sent, f"{recorded} verdicts recorded of {sent} sent"
    idle = []
    for _ in range(5):
        started = time.perf_counter()
        scanner.run_once()
        idle.append(time.perf_counter() - started)
    print(
        f"scan: {args.traces:,} traces ({recorded:,} verdicts) in {seconds:.2f} s = "
        f"{args.traces / seconds:,.0f} traces/s, {seconds / args.traces * 1e6:.0f} µs a trace; "
        f"a look finding nothing new: {statistics.median(idle) * 1000:.1f} ms"
    )


def review_and_calibration(store: SpanStore, args: argparse.Namespace) -> None:
    rng = random.Random(2)
    now = datetime.now(UTC)
    rows = []
    for _ in range(args.scores // 2):
        moment = now - timedelta(seconds=rng.randrange(7 * 86400))
        trace_id = f"{rng.getrandbits(128):032x}"
        for binding in ("quality", "tone"):
            rows.append(
                score_row(
                    moment,
                    round(rng.random(), 3),
                    binding=binding,
                    trace_id=trace_id,
                    span_id="ab" * 8,
                )
            )
    insert_rows(store.engine, rows)
    FeedbackStore(store).record(
        [
            Feedback(
                trace_id=row["trace_id"],
                span_id=row["span_id"],
                name=row["binding"],
                source="api",
                created_at=now,
                value=rng.random(),
                author="bench",
            )
            for row in rows[: len(rows) // 10]
        ]
    )
    if store.dialect == "postgresql":
        # What autovacuum does to tables this size soon after: without statistics the planner
        # joins the calibration pairs from the wrong side (1.4 s instead of 0.3 here).
        with store.engine.begin() as connection:
            connection.execute(text("ANALYZE scores"))
            connection.execute(text("ANALYZE feedback"))
    config = parse_config(CONFIG)
    queue = ReviewQueue.of(config, store.engine)
    pages = []
    for _ in range(5):
        started = time.perf_counter()
        queue.propose(datetime.now(UTC), limit=20)
        pages.append(time.perf_counter() - started)
    print(
        f"review queue: a page of 20 over {args.scores:,} scores in 7 days: "
        f"{statistics.median(pages) * 1000:.0f} ms (median of 5)"
    )
    reports = []
    for _ in range(3):
        started = time.perf_counter()
        with store.engine.connect() as connection:
            report = calibration_report(
                connection, "quality", PassThreshold(0.6, "binding"), config.feedback
            )
        reports.append(time.perf_counter() - started)
    print(
        f"calibration: {report['overall']['n']:,} pairs among {args.scores // 2:,} scores of the "
        f"binding: {statistics.median(reports) * 1000:.0f} ms (median of 3)"
    )
    learning = parse_config(CONFIG.replace("{name: tone, scorer: tone}", LEARNING)).scorers[1]
    learnt = []
    for _ in range(3):
        started = time.perf_counter()
        found = learn_for(store.engine, learning)
        learnt.append(time.perf_counter() - started)
    print(
        f"learnt threshold (threshold: learn, once per refresh): {found.value:.3f}, "
        f"{found.origin}: {statistics.median(learnt) * 1000:.0f} ms (median of 3)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument(
        "--feedback", type=float, default=2.0, help="percent of traces with a verdict"
    )
    parser.add_argument("--scores", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = open_store(args.db or f"sqlite:///{Path(directory) / 'bench.db'}")
        try:
            scan(store, args)
            review_and_calibration(store, args)
        finally:
            store.close()


if __name__ == "__main__":
    main()
