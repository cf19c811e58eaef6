"""A custom scorer (bound as ``tests.support.counting_scorer:counting``) that leaves evidence of each call.

Stored scores are upserted, so counting rows cannot show that a scorer ran twice; this scorer
appends ``start`` and ``done`` lines with the run and the process id to the file named by
``TRACESCORE_TEST_CALL_LOG`` (appends of one short line are atomic across processes).
With ``TRACESCORE_TEST_HANG_AFTER=n`` the process completes n calls and then hangs in every
later one, without blocking its event loop: a worker that is stuck holding leases, for
crash tests to ``kill -9``.
"""

from __future__ import annotations

import asyncio
import itertools
import os

from tracescore.scorers.base import create_scorer
from tracescore.scorers.steps import StepContext

CALL_LOG_ENV = "TRACESCORE_TEST_CALL_LOG"
HANG_AFTER_ENV = "TRACESCORE_TEST_HANG_AFTER"

_calls = itertools.count(1)


def _record(event: str, ctx: StepContext) -> None:
    with open(os.environ[CALL_LOG_ENV], "a", encoding="utf-8") as log:
        log.write(f"{event} {ctx.run.trace_id} {ctx.run.span_id} {os.getpid()}\n")


async def _score(ctx: StepContext) -> float:
    if ctx.run.trace_id is None:  # the worker's warm-up call at start, not a stored run
        return 1.0
    _record("start", ctx)
    hang_after = os.environ.get(HANG_AFTER_ENV)
    if hang_after is not None and next(_calls) > int(hang_after):
        await asyncio.Event().wait()
    _record("done", ctx)
    return 1.0


counting = create_scorer(id="counting", description="records every call").generate_score(_score)
