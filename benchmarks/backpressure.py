"""Backpressure benchmark: memory of ``tracescore serve`` when ingest outpaces it, for a minute.

1. Calibration: ``--clients`` back-to-back clients for ``--calibrate`` seconds find the
   sustainable rate (acknowledged spans/s with the default config, scorers running).
2. Overload: open-loop load at ``--factor`` (2) times that rate for ``--seconds`` (60): requests
   leave on schedule whether or not the server keeps up, as independent exporters do.

Prints what was acknowledged and refused (503 + Retry-After), requests that got no answer at
all, the server's RSS before, its peak during the overload (sampled, and the kernel's
``VmHWM``), and the scoring backlog left in the database (durable, not in memory).

    python benchmarks/backpressure.py [--seconds 60] [--db postgresql://postgres@127.0.0.1/bench]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.otlp_load import batch_protobuf, fresh_ids
from tests.support.overload import Overload, overload, proc_status_mb
from tests.support.server_process import start_server


def _report(label: str, result: Overload) -> None:
    print(
        f"{label}: {result.sent_spans / result.elapsed:,.0f} spans/s offered, "
        f"{result.acked_per_second:,.0f} acknowledged; responses {dict(result.statuses)}, "
        f"Retry-After {dict(result.retry_after)}, no answer {dict(result.transport_errors)}, "
        f"client-side drops {result.client_dropped}; RSS peak {max(result.rss_samples, default=0):.0f} MiB "
        f"(sampled), VmHWM {result.peak_rss_mb:.0f} MiB",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--calibrate", type=float, default=10.0)
    parser.add_argument("--factor", type=float, default=2.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--spans-per-request", type=int, default=200)
    parser.add_argument("--db", help="database URL (default: a fresh SQLite file)")
    args = parser.parse_args()

    template = batch_protobuf(args.spans_per_request)
    numbers = iter(range(1, 1 << 31))

    def body(_n: int) -> bytes:
        return fresh_ids(template, next(numbers), json=False)

    with tempfile.TemporaryDirectory(prefix="tracescore-backpressure-") as workdir:
        db_url = args.db or f"sqlite:///{Path(workdir) / 'tracescore.db'}"
        with start_server(
            Path(workdir), db_url=db_url, idle_timeout=1.0, scoring_processes=None
        ) as server:
            pid = server.process.pid
            before = proc_status_mb(pid, "VmRSS")
            print(f"server RSS at start: {before:.0f} MiB ({db_url.split(':', 1)[0]})", flush=True)
            calibration = overload(
                server.base_url,
                pid,
                body,
                spans_per_request=args.spans_per_request,
                seconds=args.calibrate,
                concurrency=args.clients,
            )
            _report(f"calibration ({args.clients} back-to-back clients)", calibration)
            rate = args.factor * calibration.acked_per_second
            print(
                f"overload: {rate:,.0f} spans/s ({args.factor:g}x) for {args.seconds:g} s",
                flush=True,
            )
            result = overload(
                server.base_url,
                pid,
                body,
                spans_per_request=args.spans_per_request,
                seconds=args.seconds,
                rate=rate,
            )
            _report("overload", result)
            engine = create_engine(db_url)
            with engine.connect() as connection:
                states = dict(
                    connection.execute(
                        text("SELECT state, count(*) FROM traces GROUP BY state")
                    ).all()
                )
                scores = connection.execute(text("SELECT count(*) FROM scores")).scalar_one()
            engine.dispose()
            print(
                f"scoring backlog in the database after the run: traces by state {states}, {scores} scores"
            )
            half = len(result.rss_samples) // 2
            print(
                f"peak RSS under {args.factor:g}x overload: {max(result.rss_samples):.0f} MiB sampled "
                f"({before:.0f} MiB at start; peak {max(result.rss_samples[:half]):.0f} MiB in the first "
                f"half of the run, {max(result.rss_samples[half:]):.0f} MiB in the second)"
            )


if __name__ == "__main__":
    main()
