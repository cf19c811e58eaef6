"""Alert rules on simulated score streams: false positives, detection delay, evaluation cost.

Writes a synthetic stream into a real database (a temporary SQLite file, or ``--db``), then
replays evaluations with an injected clock:

1. false positives: a stable noisy stream, ``--windows`` disjoint windows per segment, each
   evaluated once against its baseline (``--baseline`` days): how often the regression rule fires;
2. detection: the same rule on a stream where one segment drops by ``--drop`` at known times,
   evaluated every ``--interval``: delay to fire after the drop and to resolve after recovery;
3. cost: one evaluation round over the whole table, with and without the baseline part cache.

    python benchmarks/alerts.py                      # SQLite, 1,000 windows of 1 h, 7 d baseline
    python benchmarks/alerts.py --window 10 --interval 10 --per-minute 4 --min-delta 0.08
    python benchmarks/alerts.py --db postgresql://postgres@127.0.0.1/bench
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

from tests.support.score_streams import Drop, insert_rows, stream
from tracescore.monitor.config import RegressionRule
from tracescore.monitor.rules import BaselineCache, evaluate_rule
from tracescore.store import open_store

START = datetime(2026, 1, 1, tzinfo=UTC)


def rule(args: argparse.Namespace, baseline: timedelta) -> RegressionRule:
    return RegressionRule(
        name="bench",
        type="regression",
        scorer="answer-relevancy",
        window=args.window * 60,
        baseline=baseline.total_seconds(),
        segment_by=["agent"],
        min_delta=args.min_delta,
        alpha=args.alpha,
        min_samples=30,
    )


def false_positives(url: str, args: argparse.Namespace) -> None:
    store = open_store(url)
    agents = [f"agent-{n}" for n in range(args.agents)]
    window = timedelta(minutes=args.window)
    baseline = timedelta(days=args.baseline)
    origin = START + baseline
    started = time.perf_counter()
    rows = insert_rows(
        store.engine,
        stream(
            random.Random(1),
            START,
            origin + args.windows * window,
            per_minute=args.per_minute,
            agents=agents,
            scorer_id="answer-relevancy",
        ),
    )
    print(f"stable stream: {rows:,} rows written in {time.perf_counter() - started:.1f} s")
    checked = rule(args, baseline)
    cache = BaselineCache(checked)
    fired = significant = verdicts = 0
    durations = []
    with store.engine.connect() as connection:
        for index in range(1, args.windows + 1):
            began = time.perf_counter()
            found = evaluate_rule(connection, checked, origin + index * window, cache=cache)
            durations.append(time.perf_counter() - began)
            verdicts += len(found)
            fired += sum(v.firing for v in found)
            significant += sum(v.details["p_value"] < checked.alpha for v in found)
        now = origin + args.windows * window
        began = time.perf_counter()
        evaluate_rule(connection, checked, now)
        uncached = time.perf_counter() - began
    store.close()
    print(
        f"false positives: {fired}/{verdicts} segment-windows = {fired / verdicts:.2%} "
        f"(p < alpha alone: {significant / verdicts:.2%}; alpha = {checked.alpha})"
    )
    print(
        f"evaluation of one rule ({args.agents} segments, {args.window} min window, {args.baseline} d "
        f"baseline of {baseline.total_seconds() / 60 * args.per_minute * args.agents:,.0f} rows): "
        f"cached median "
        f"{statistics.median(durations) * 1000:.1f} ms, p95 "
        f"{sorted(durations)[int(len(durations) * 0.95)] * 1000:.1f} ms; uncached {uncached * 1000:.1f} ms"
    )


def detection(url: str, args: argparse.Namespace) -> None:
    store = open_store(url)
    baseline = timedelta(days=1)
    interval = timedelta(minutes=args.interval)
    origin = START + baseline
    incidents = [origin + timedelta(hours=12 * n + 6) for n in range(args.incidents)]
    rows = []
    end = origin + timedelta(hours=12 * args.incidents + 6)
    for index, since in enumerate(incidents):
        drop = Drop(since, args.drop, since + timedelta(hours=2))
        segment_start = START if index == 0 else incidents[index - 1] + timedelta(hours=6)
        segment_end = since + timedelta(hours=6) if index + 1 < len(incidents) else end
        rows += stream(
            random.Random(100 + index),
            segment_start,
            segment_end,
            per_minute=args.per_minute,
            agents=["stable", "degraded"],
            drops={"degraded": [drop]},
            scorer_id="answer-relevancy",
        )
    insert_rows(store.engine, rows)
    checked = rule(args, baseline)
    cache = BaselineCache(checked)
    fire_delays, resolve_delays, stable_fired = [], [], 0
    with store.engine.connect() as connection:
        for since in incidents:
            recovered = since + timedelta(hours=2)
            now, fired_at, resolved_at = since - timedelta(hours=1), None, None
            while now < since + timedelta(hours=5) and resolved_at is None:
                now += interval
                found = evaluate_rule(connection, checked, now, cache=cache)
                verdicts = {v.segment["agent"]: v.firing for v in found}
                stable_fired += verdicts.get("stable", False)
                if verdicts.get("degraded") and fired_at is None:
                    fired_at = now
                if fired_at is not None and now > recovered and not verdicts.get("degraded", True):
                    resolved_at = now
            if fired_at is not None:
                fire_delays.append((fired_at - since).total_seconds() / 60)
            if resolved_at is not None:
                resolve_delays.append((resolved_at - recovered).total_seconds() / 60)
    store.close()
    first_full = sum(delay <= max(args.window, args.interval) for delay in fire_delays)
    print(
        f"detection of a {args.drop} drop ({args.window} min window, 1 d baseline, "
        f"evaluated every {args.interval} min, "
        f"{args.per_minute}/min per segment): fired in {len(fire_delays)}/{len(incidents)} incidents, "
        f"minutes after the drop: median {statistics.median(fire_delays):.0f}, max {max(fire_delays):.0f} "
        f"(at the first evaluation whose window is all degraded: {first_full}/{len(incidents)}); "
        f"resolved after recovery in {len(resolve_delays)}/{len(incidents)}, minutes: median "
        f"{statistics.median(resolve_delays):.0f}, max {max(resolve_delays):.0f}; "
        f"stable segment fired {stable_fired} times"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--windows", type=int, default=1000)
    parser.add_argument("--agents", type=int, default=2)
    parser.add_argument("--per-minute", type=int, default=1)
    parser.add_argument("--incidents", type=int, default=20)
    parser.add_argument("--interval", type=int, default=5, help="minutes between evaluations")
    parser.add_argument("--drop", type=float, default=0.15)
    parser.add_argument("--window", type=int, default=60, help="minutes")
    parser.add_argument("--baseline", type=int, default=7, help="days (false-positive run)")
    parser.add_argument("--min-delta", type=float, default=0.1)
    parser.add_argument("--alpha", type=float, default=0.01)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        for name, experiment in (("fp", false_positives), ("detect", detection)):
            url = args.db or f"sqlite:///{directory}/{name}.db"
            if args.db:  # one database: start each experiment from an empty scores table
                from sqlalchemy import delete

                from tracescore.store.scores import ScoreRow

                store = open_store(url)
                with store.engine.begin() as connection:
                    connection.execute(delete(ScoreRow.__table__))
                store.close()
            experiment(url, args)


if __name__ == "__main__":
    main()
