"""One scoring process flooding a limited binding, for the judge-cap tests: run as
``python -m tests.support.judge_flood DB_URL CONFIG TRACE_ID RUNS INTERVAL``.

It builds the service's own scoring worker for ``CONFIG`` (a YAML file) on the database and
scores the primary run of ``TRACE_ID`` with the config's first binding ``RUNS`` times, a new
score started every ``INTERVAL`` seconds without waiting for the earlier ones (0: all at
once), as feedback triggers do. It prints the statuses of the score rows as a JSON list.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tracescore.config import parse_config
from tracescore.extract import extract_runs
from tracescore.pipeline.scoring_task import build_worker
from tracescore.store import open_store


async def _flood(
    db_url: str, config_text: str, trace_id: str, runs: int, interval: float
) -> list[str]:
    store = open_store(db_url, create=False)
    worker = build_worker(parse_config(config_text).scoring(), store)
    trace = store.load_trace(trace_id)
    assert trace is not None, trace_id
    run = next(run for run in extract_runs(trace) if run.primary)
    binding = worker.bindings[0]
    scores = []
    for _ in range(runs):
        scores.append(asyncio.create_task(worker.score(binding, run)))
        await asyncio.sleep(interval)
    rows = await asyncio.gather(*scores)
    store.close()
    return [str(row["status"]) for row in rows]


def main() -> None:
    db_url, config_path, trace_id, runs, interval = sys.argv[1:]
    statuses = asyncio.run(
        _flood(db_url, Path(config_path).read_text(), trace_id, int(runs), float(interval))
    )
    print(json.dumps(statuses))


if __name__ == "__main__":
    main()
