"""Per-binding rate limits and daily USD budgets, shared through the database.

The counts come from the ``scores`` table itself, so every instance on one database sees the
same spend and rate without another coordination service. Querying on every run would double
the database load of scoring, so each limiter refreshes its counts at most every
``refresh_seconds`` and adds what this instance scored since; several instances can overshoot a
limit by at most what they score within one refresh interval.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Literal

from tracescore.pipeline.config import LimitsConfig
from tracescore.store import Database
from tracescore.store.scores import binding_spend

Verdict = Literal["ok", "skipped_rate", "skipped_budget"]


class BindingLimiter:
    def __init__(
        self, engine: Database, binding: str, limits: LimitsConfig, refresh_seconds: float = 2.0
    ) -> None:
        self._engine = engine
        self._binding = binding
        self._limits = limits
        self._refresh_seconds = refresh_seconds
        self._lock = threading.Lock()
        self._refreshed_at = float("-inf")
        self._minute_count = 0
        self._day_cost = 0.0
        self._day: str = ""

    @property
    def active(self) -> bool:
        return self._limits.per_minute is not None or self._limits.usd_per_day is not None

    def _refresh(self, now: datetime) -> None:
        day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        spend = binding_spend(self._engine, self._binding, now, day_start)
        self._minute_count, self._day_cost = spend.minute_count, spend.day_cost
        self._day = day_start.date().isoformat()
        self._refreshed_at = time.monotonic()

    def admit(self, now: datetime | None = None) -> Verdict:
        """Whether one more run may be scored now; admitted runs count towards the rate."""
        if not self.active:
            return "ok"
        now = now or datetime.now(UTC)
        with self._lock:
            stale = time.monotonic() - self._refreshed_at >= self._refresh_seconds
            if stale or now.date().isoformat() != self._day:
                self._refresh(now)
            budget = self._limits.usd_per_day
            if budget is not None and self._day_cost >= budget:
                return "skipped_budget"
            rate = self._limits.per_minute
            if rate is not None and self._minute_count >= rate:
                return "skipped_rate"
            self._minute_count += 1
            return "ok"

    def spent(self, cost_usd: float) -> None:
        """Record what a scored run cost, until the next refresh reads it from the database."""
        with self._lock:
            self._day_cost += cost_usd
