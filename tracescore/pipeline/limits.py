"""Per-binding rate limits and daily USD budgets, held by every process sharing the database.

Each run a limited binding scores takes a reservation in the database before its judge is
called (:func:`tracescore.store.reservations.reserve`: the run's estimated cost and a slot of
the rate, decided under the binding's lock) and settles it with the real cost afterwards. So
concurrent workers, in one process or many, cannot all pass a budget that none of them has
spent yet: the day's spend overshoots ``usd_per_day`` by at most one run's estimate (the
highest cost of the binding's last 20 runs), and no 60 s window holds more than
``per_minute`` of its runs (a run counts from its admission until a minute after it ends).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from tracescore.pipeline.config import LimitsConfig
from tracescore.store import Database
from tracescore.store.reservations import Limits, Verdict, forget_old, reserve, settle

UNESTIMATED_POLL = 0.5
"""Seconds between a waiting run's tries while the binding's first cost is unknown."""


@dataclass(frozen=True, slots=True)
class Admission:
    """Whether a run may be scored; an admitted one holds ``reservation`` until settled."""

    status: Literal["ok", "skipped_rate", "skipped_budget"]
    reason: str | None = None
    """Why a run is skipped, for its score row."""
    reservation: int | None = None


class BindingLimiter:
    """One binding's limits. ``clock`` is epoch seconds (tests pass a simulated one)."""

    def __init__(
        self,
        engine: Database,
        binding: str,
        limits: LimitsConfig,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._engine = engine
        self._binding = binding
        self._limits = Limits(limits.per_minute, limits.usd_per_day)
        self._clock = clock
        self._pruned_day = -1.0

    @property
    def active(self) -> bool:
        return self._limits.per_minute is not None or self._limits.usd_per_day is not None

    async def admit(self) -> Admission:
        """Reserve one more run now, or say which limit stops it. While the binding has no cost
        to estimate from yet, runs wait for the one judged first (its cost is the estimate)
        rather than being skipped with budget left."""
        if not self.active:
            return Admission("ok")
        while True:
            verdict, reservation = await asyncio.to_thread(self._reserve)
            if verdict != "unestimated":
                return self._admission(verdict, reservation)
            await asyncio.sleep(UNESTIMATED_POLL * random.uniform(0.5, 1.5))

    def _reserve(self) -> tuple[Verdict, int | None]:
        now = self._clock()
        day_start = datetime.fromtimestamp(now, UTC).replace(
            hour=0, minute=0, second=0, microsecond=0
        )
        start = day_start.timestamp()
        if start != self._pruned_day:
            forget_old(self._engine, self._binding, now)
            self._pruned_day = start
        return reserve(self._engine, self._binding, self._limits, now, start)

    def _admission(self, verdict: Verdict, reservation: int | None) -> Admission:
        limits = self._limits
        if verdict == "skipped_rate":
            return Admission(verdict, f"rate limit of {limits.per_minute}/min reached")
        if verdict == "skipped_budget":
            return Admission(verdict, f"daily budget of ${limits.usd_per_day} spent")
        return Admission("ok", reservation=reservation)

    def settle(self, admission: Admission, cost_usd: float | None) -> None:
        """Record what an admitted run cost; None for a run that raised, whose cost is unknown
        (blocking: a transaction)."""
        if admission.reservation is not None:
            settle(self._engine, admission.reservation, cost_usd, self._clock())
