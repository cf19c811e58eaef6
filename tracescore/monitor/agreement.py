"""How well a judge's scores agree with people's verdicts on the same runs: pure arithmetic.

Two kinds of agreement, because feedback comes in two kinds:

* on the scale (feedback with a value): mean absolute error, and Spearman's rank correlation
  (does the judge order runs as people do, whatever its offset);
* on the verdict (pass/fail, from a label or a value at the threshold): Cohen's kappa, which
  discounts the agreement two raters reach by chance (a judge that passes 95 % of runs agrees
  with people on 95 %-pass traffic most of the time without looking), and the confusion matrix.

Intervals: a t-interval for the MAE; for Spearman, Fisher's z with Bonett and Wright's standard
error; for kappa, the large-sample normal interval. They are left out below
``min_ci_samples`` pairs, where they would be too wide to read or simply wrong.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

PASS_LABELS = frozenset(
    {
        "pass",
        "passed",
        "good",
        "correct",
        "yes",
        "true",
        "up",
        "thumbs_up",
        "thumbs-up",
        "positive",
        "1",
        "👍",
    }
)
FAIL_LABELS = frozenset(
    {
        "fail",
        "failed",
        "bad",
        "incorrect",
        "no",
        "false",
        "down",
        "thumbs_down",
        "thumbs-down",
        "negative",
        "0",
        "👎",
    }
)


def human_passes(value: float | None, label: str | None, threshold: float) -> bool | None:
    """A person's verdict as pass/fail: the label if it is a known word, else the value at the
    threshold, else unknown (None: the pair counts for the scale figures only)."""
    if label is not None:
        word = label.strip().lower()
        if word in PASS_LABELS:
            return True
        if word in FAIL_LABELS:
            return False
    if value is not None:
        return value >= threshold
    return None


@dataclass(frozen=True, slots=True)
class Pair:
    """One run's judge score next to a person's verdict."""

    score: float
    value: float | None
    label: str | None


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float

    def to_dict(self) -> list[float]:
        return [self.low, self.high]


@dataclass(frozen=True)
class Agreement:
    """Agreement figures over a set of pairs; None where the pairs cannot give one."""

    n: int
    """Pairs in all."""
    threshold: float
    n_values: int = 0
    """Pairs whose feedback has a value (MAE and Spearman are over these)."""
    mae: float | None = None
    mae_ci: Interval | None = None
    spearman: float | None = None
    spearman_p: float | None = None
    spearman_ci: Interval | None = None
    n_verdicts: int = 0
    """Pairs whose feedback gives a pass/fail verdict (kappa and the matrix are over these)."""
    accuracy: float | None = None
    """Share of verdicts the judge and the person agree on."""
    kappa: float | None = None
    kappa_ci: Interval | None = None
    confusion: dict[str, int] = field(default_factory=dict)
    """``judge_pass_human_pass``, ``judge_pass_human_fail``, ``judge_fail_human_pass``,
    ``judge_fail_human_fail``."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "threshold": self.threshold,
            "n_values": self.n_values,
            "mae": self.mae,
            "mae_ci": _interval(self.mae_ci),
            "spearman": self.spearman,
            "spearman_p": self.spearman_p,
            "spearman_ci": _interval(self.spearman_ci),
            "n_verdicts": self.n_verdicts,
            "accuracy": self.accuracy,
            "kappa": self.kappa,
            "kappa_ci": _interval(self.kappa_ci),
            "confusion": self.confusion,
        }


def _interval(value: Interval | None) -> list[float] | None:
    return None if value is None else value.to_dict()


def _normal_quantile(confidence: float) -> float:
    """The two-sided normal quantile of a confidence level (1.96 at 95 %), as a Python float:
    figures go into JSON columns, which take no numpy scalars."""
    # scipy.stats is imported where it is used: at the top it cost every service process
    # ~60 MB and half a second at start, for figures most of them never compute.
    from scipy import stats

    return float(stats.norm.ppf(0.5 + confidence / 2))


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _mae(errors: np.ndarray, confidence: float, min_ci: int) -> tuple[float, Interval | None]:
    mae = float(errors.mean())
    if len(errors) < max(min_ci, 2):
        return mae, None
    from scipy import stats

    t = float(stats.t.ppf(0.5 + confidence / 2, len(errors) - 1))
    half = t * float(errors.std(ddof=1)) / math.sqrt(len(errors))
    return mae, Interval(max(0.0, mae - half), mae + half)


def _spearman(
    scores: np.ndarray, values: np.ndarray, confidence: float, min_ci: int
) -> tuple[float | None, float | None, Interval | None]:
    """Spearman's rho and its p-value (scipy), and Fisher's z interval with the standard error
    Bonett and Wright give for rank correlations, sqrt((1 + rho^2 / 2) / (n - 3))."""
    import numpy as np

    if len(scores) < 3 or np.ptp(scores) == 0 or np.ptp(values) == 0:
        return None, None, None  # a constant side has no ranks to correlate
    from scipy import stats

    result = stats.spearmanr(scores, values)
    rho, p_value = float(result.statistic), float(result.pvalue)
    if len(scores) < max(min_ci, 4) or abs(rho) >= 1:
        return rho, _finite(p_value), None
    z = math.atanh(rho)
    half = _normal_quantile(confidence) * math.sqrt((1 + rho**2 / 2) / (len(scores) - 3))
    return rho, _finite(p_value), Interval(math.tanh(z - half), math.tanh(z + half))


def _kappa(
    verdicts: Sequence[tuple[bool, bool]], confidence: float, min_ci: int
) -> tuple[float | None, float | None, Interval | None, dict[str, int]]:
    """Accuracy, Cohen's kappa with its large-sample interval, and the confusion matrix."""
    counts = {
        "judge_pass_human_pass": 0,
        "judge_pass_human_fail": 0,
        "judge_fail_human_pass": 0,
        "judge_fail_human_fail": 0,
    }
    for judge, human in verdicts:
        counts[f"judge_{'pass' if judge else 'fail'}_human_{'pass' if human else 'fail'}"] += 1
    n = len(verdicts)
    if n == 0:
        return None, None, None, counts
    observed = (counts["judge_pass_human_pass"] + counts["judge_fail_human_fail"]) / n
    judge_pass = (counts["judge_pass_human_pass"] + counts["judge_pass_human_fail"]) / n
    human_pass = (counts["judge_pass_human_pass"] + counts["judge_fail_human_pass"]) / n
    chance = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
    if chance >= 1:
        return observed, None, None, counts  # both raters gave one verdict only: kappa undefined
    kappa = (observed - chance) / (1 - chance)
    if n < min_ci:
        return observed, kappa, None, counts
    se = math.sqrt(observed * (1 - observed) / (n * (1 - chance) ** 2))
    half = _normal_quantile(confidence) * se
    return observed, kappa, Interval(max(-1.0, kappa - half), min(1.0, kappa + half)), counts


def agreement(
    pairs: Iterable[Pair], threshold: float, *, confidence: float = 0.95, min_ci_samples: int = 10
) -> Agreement:
    """The agreement figures of ``pairs``, verdicts taken at ``threshold`` (score >= passes)."""
    pairs = list(pairs)
    scored = [(pair.score, pair.value) for pair in pairs if pair.value is not None]
    verdicts = [
        (pair.score >= threshold, human)
        for pair in pairs
        if (human := human_passes(pair.value, pair.label, threshold)) is not None
    ]
    mae = mae_ci = rho = p_value = rho_ci = None
    if scored:
        # numpy, like scipy, is imported where it is used: every service process imports this
        # module (the feedback API's calibration report), few compute an agreement.
        import numpy as np

        scores = np.array([score for score, _ in scored], dtype=float)
        values = np.array([value for _, value in scored], dtype=float)
        mae, mae_ci = _mae(np.abs(scores - values), confidence, min_ci_samples)
        rho, p_value, rho_ci = _spearman(scores, values, confidence, min_ci_samples)
    accuracy, kappa, kappa_ci, confusion = _kappa(verdicts, confidence, min_ci_samples)
    return Agreement(
        n=len(pairs),
        threshold=threshold,
        n_values=len(scored),
        mae=mae,
        mae_ci=mae_ci,
        spearman=rho,
        spearman_p=p_value,
        spearman_ci=rho_ci,
        n_verdicts=len(verdicts),
        accuracy=accuracy,
        kappa=kappa,
        kappa_ci=kappa_ci,
        confusion=confusion,
    )
