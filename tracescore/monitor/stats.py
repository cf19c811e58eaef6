"""Statistics for alerts and summaries: Welch's t-test from aggregates, SQL-compatible percentiles.

The regression test runs on per-window count, mean and variance, which SQL aggregates cheaply
over an index range; that rules out rank tests such as Mann–Whitney, which need every value.
Welch's t-test does not assume equal variances (a degraded window is often noisier) and, by the
central limit theorem, holds for bounded scores at the sample sizes rules require.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Moments:
    """Count, sum and sum of squares of a group of scores: what SQL aggregates return.

    Sums add up, so the moments of a long window are the sum of its parts' (the alert
    evaluator caches a baseline's hourly parts); mean and standard deviation derive from them.
    """

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    def __add__(self, other: Moments) -> Moments:
        return Moments(self.n + other.n, self.total + other.total, self.squares + other.squares)

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan

    @property
    def std(self) -> float:
        """Sample standard deviation (n - 1 denominator)."""
        if self.n < 2:
            return 0.0 if self.n == 1 else math.nan
        variance = (self.squares - self.n * self.mean * self.mean) / (self.n - 1)
        return math.sqrt(max(variance, 0.0))

    def to_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "mean": self.mean, "std": self.std}


def welch_p_value(
    current: Moments, baseline: Moments, direction: Literal["decrease", "increase"]
) -> float:
    """One-sided p-value that ``current``'s mean is below (``decrease``) or above its baseline's."""
    from scipy import stats

    alternative = "less" if direction == "decrease" else "greater"
    if current.std == 0.0 and baseline.std == 0.0:
        # Two constant samples: the difference is certain, or there is none.
        worse = (
            current.mean < baseline.mean
            if direction == "decrease"
            else current.mean > baseline.mean
        )
        return 0.0 if worse else 1.0
    result = stats.ttest_ind_from_stats(
        current.mean, current.std, current.n,
        baseline.mean, baseline.std, baseline.n,
        equal_var=False, alternative=alternative,
    )
    return float(result.pvalue)


def percentile_cont(sorted_values: Sequence[float], fraction: float) -> float:
    """PostgreSQL's ``percentile_cont``: linear interpolation between the closest ranks.

    Used where the database has no percentile aggregate (SQLite), with the same result.
    """
    if not sorted_values:
        return math.nan
    position = fraction * (len(sorted_values) - 1)
    lower = math.floor(position)
    upper = math.ceil(position)
    first, second = sorted_values[lower], sorted_values[upper]
    return first + (second - first) * (position - lower)
