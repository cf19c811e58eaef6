"""Scoring processes flooding a limited binding, for the judge-cap tests: each run as
``python -m tests.support.judge_flood RUNS INTERVAL SPEED ORIGIN DB_URL CONFIG TRACE_ID ...``
(one or more database, config and trace triples).

For each triple it builds the service's own scoring worker for ``CONFIG`` (a YAML file) on the
database and scores the primary run of ``TRACE_ID`` with the config's first binding ``RUNS``
times, a new score started every ``INTERVAL`` seconds without waiting for the earlier ones (0:
all at once), as feedback triggers do; the triples' floods run at once. It prints the statuses
of each flood's score rows as a JSON list of lists, in the triples' order. One process serves
every database of a test, so a test's databases share its processes' start-ups (most of a
flood's CPU: litellm's import) while each still sees ``PROCESSES`` of them.

The bindings' limiters read a :class:`FastClock`: the wall clock run ``SPEED`` times faster
from ``ORIGIN`` (epoch seconds), the same in every process given the same two, so a
per-minute window passes in a ``SPEED``-th of a minute; the test reads the judge server's
arrival times on that clock too. ``1 0`` is the wall clock itself.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tracescore.batch_gc import freeze_at_exit
from tracescore.config import parse_config
from tracescore.extract import extract_runs
from tracescore.pipeline.limits import BindingLimiter
from tracescore.pipeline.scoring_task import build_worker
from tracescore.store import open_store


@dataclass(frozen=True)
class FastClock:
    """Epoch seconds that pass ``speed`` times faster than the wall clock's from ``origin``:
    the clock a binding's limiter is handed (``BindingLimiter(clock=...)``), so its windows
    are real spans of time, only shorter."""

    origin: float
    speed: float

    def __call__(self) -> float:
        return self.at(time.time())

    def at(self, wall: float) -> float:
        """This clock's reading when the wall clock read ``wall``."""
        return self.origin + (wall - self.origin) * self.speed


WALL = FastClock(0.0, 1.0)
"""The wall clock itself."""


async def _flood(
    db_url: str, config_text: str, trace_id: str, runs: int, interval: float, clock: FastClock
) -> list[str]:
    store = open_store(db_url, create=False)
    trace = store.load_trace(trace_id)
    assert trace is not None, trace_id
    run = next(run for run in extract_runs(trace) if run.primary)
    scoring = build_worker(parse_config(config_text).scoring(), store).scoring
    binding = scoring.bindings[0]
    binding.limiter = BindingLimiter(store.engine, binding.name, binding.config.limits, clock)
    scores = []
    for _ in range(runs):
        scores.append(asyncio.create_task(scoring.score(binding, run)))
        await asyncio.sleep(interval)
    rows = await asyncio.gather(*scores)
    store.close()
    return [str(row["status"]) for row in rows]


async def _floods(
    targets: list[tuple[str, str, str]], runs: int, interval: float, clock: FastClock
) -> list[list[str]]:
    return list(
        await asyncio.gather(
            *(
                _flood(db_url, Path(config).read_text(), trace_id, runs, interval, clock)
                for db_url, config, trace_id in targets
            )
        )
    )


def main() -> None:
    freeze_at_exit()  # as the service's scoring processes do: litellm's exit costs a second else
    runs, interval, speed, origin, *rest = sys.argv[1:]
    targets = [(rest[i], rest[i + 1], rest[i + 2]) for i in range(0, len(rest), 3)]
    clock = FastClock(float(origin), float(speed))
    print(json.dumps(asyncio.run(_floods(targets, int(runs), float(interval), clock))))


if __name__ == "__main__":
    main()
