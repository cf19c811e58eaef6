"""Statistics for alerts: Welch's t-test from aggregates (:class:`~tracescore.store.score_aggregates.Moments`).

The regression test runs on per-window count, mean and variance, which SQL aggregates cheaply
over an index range; that rules out rank tests such as Mann–Whitney, which need every value.
Welch's t-test does not assume equal variances (a degraded window is often noisier) and, by the
central limit theorem, holds for bounded scores at the sample sizes rules require.
"""

from __future__ import annotations

from typing import Literal

from tracescore.store.score_aggregates import Moments


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
        current.mean,
        current.std,
        current.n,
        baseline.mean,
        baseline.std,
        baseline.n,
        equal_var=False,
        alternative=alternative,
    )
    return float(result.pvalue)
