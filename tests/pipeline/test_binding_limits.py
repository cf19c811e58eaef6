"""A binding's reservations on a real database, on a simulated clock: what a run holds of the
rate and the budget while it runs, after it ends, and after its process died (the flood of
several processes is in test_judge_caps.py)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from tracescore.pipeline.config import LimitsConfig
from tracescore.pipeline.limits import Admission, BindingLimiter
from tracescore.store import open_store
from tracescore.store.reservations import HOLD

NOON = datetime(2026, 12, 4, 12, tzinfo=UTC).timestamp()


def _limiter(db_url: str, now: list[float], **limits: float) -> BindingLimiter:
    store = open_store(db_url)
    return BindingLimiter(store.engine, "judged", LimitsConfig(**limits), clock=lambda: now[0])


def _admit(limiter: BindingLimiter) -> Admission:
    return asyncio.run(limiter.admit())


def test_a_run_holds_its_rate_slot_until_a_minute_after_it_ends(db_url: str) -> None:
    now = [NOON]
    limiter = _limiter(db_url, now, per_minute=2)
    first, second = _admit(limiter), _admit(limiter)
    assert (first.status, second.status) == ("ok", "ok")
    refused = _admit(limiter)
    assert refused.status == "skipped_rate" and refused.reason == "rate limit of 2/min reached"
    now[0] += 90  # the runs are still going: a minute after their start is not enough
    assert _admit(limiter).status == "skipped_rate"
    limiter.settle(first, 0.01)
    limiter.settle(second, 0.01)
    now[0] += 59
    assert _admit(limiter).status == "skipped_rate"
    now[0] += 1.5
    assert [_admit(limiter).status for _ in range(3)] == ["ok", "ok", "skipped_rate"]


def test_the_budget_counts_running_runs_at_their_estimate(db_url: str) -> None:
    now = [NOON]
    limiter = _limiter(db_url, now, usd_per_day=0.25)

    async def flood() -> None:
        first = await limiter.admit()
        # No cost known yet: the next run waits for the first one's instead of guessing.
        waiting = asyncio.create_task(limiter.admit())
        await asyncio.sleep(1.0)
        assert not waiting.done()
        limiter.settle(first, 0.1)
        assert (await waiting).status == "ok"  # 0.1 spent, 0.1 reserved: under 0.25
        third = await limiter.admit()  # 0.2: still under
        assert third.status == "ok"
        refused = await limiter.admit()  # 0.3 counting the running ones at 0.1 each
        assert refused.status == "skipped_budget"
        assert refused.reason == "daily budget of $0.25 spent"

    asyncio.run(flood())
    now[0] += 12 * 3600 + 1  # the next UTC day
    assert _admit(limiter).status == "ok"


def test_a_run_whose_process_died_counts_at_its_estimate_and_frees_its_slot_later(
    db_url: str,
) -> None:
    now = [NOON]
    limiter = _limiter(db_url, now, per_minute=1, usd_per_day=0.35)
    limiter.settle(_admit(limiter), 0.1)
    now[0] += 61
    _admit(limiter)  # never settled: its process was killed
    now[0] += HOLD
    assert _admit(limiter).status == "skipped_rate"  # held for HOLD plus a minute
    now[0] += 61
    # 0.1 spent + 0.1 estimated for the lost run: one more fits, then the budget is spent.
    limiter.settle(_admit(limiter), 0.1)
    now[0] += 121
    last = _admit(limiter)
    assert last.status == "ok"  # 0.3: under the cap, which this run passes by its estimate
    limiter.settle(last, 0.1)
    now[0] += 121
    assert _admit(limiter).status == "skipped_budget"
