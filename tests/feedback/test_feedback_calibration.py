"""Calibration arithmetic against direct computations on the same pairs.

Every figure is recomputed here from its textbook definition (ranks by counting, kappa from the
four cells, a t-interval), not by calling the module again.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats

from tests.support.feedback_support import kappa_of, pearson, ranks
from tracescore.monitor.agreement import Pair, agreement, human_passes


def _pairs(seed: int, n: int) -> list[Pair]:
    """A judge that tracks people with noise, rounded to two decimals (so ties occur)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        truth = rng.random()
        score = min(1.0, max(0.0, round(truth + rng.gauss(0, 0.2), 2)))
        pairs.append(Pair(score=score, value=round(truth, 2), label=None))
    return pairs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_figures_match_a_direct_computation(seed: int) -> None:
    pairs = _pairs(seed, 120)
    result = agreement(pairs, 0.5)

    scores = [p.score for p in pairs]
    values = [p.value for p in pairs if p.value is not None]
    errors = [abs(s - v) for s, v in zip(scores, values, strict=True)]
    assert result.n == result.n_values == result.n_verdicts == 120
    assert result.mae == pytest.approx(sum(errors) / len(errors), abs=1e-12)
    assert result.spearman == pytest.approx(pearson(ranks(scores), ranks(values)), abs=1e-12)

    cells = {(j, h): 0 for j in (True, False) for h in (True, False)}
    for score, value in zip(scores, values, strict=True):
        cells[(score >= 0.5, value >= 0.5)] += 1
    assert result.kappa == pytest.approx(kappa_of(cells), abs=1e-12)
    assert result.accuracy == pytest.approx((cells[(True, True)] + cells[(False, False)]) / 120)
    assert result.confusion == {
        "judge_pass_human_pass": cells[(True, True)],
        "judge_pass_human_fail": cells[(True, False)],
        "judge_fail_human_pass": cells[(False, True)],
        "judge_fail_human_fail": cells[(False, False)],
    }

    # The intervals hold their figure and have the textbook width.
    assert (
        result.mae_ci is not None and result.kappa_ci is not None and result.spearman_ci is not None
    )
    sd = float(np.std(errors, ddof=1))
    half = stats.t.ppf(0.975, 119) * sd / math.sqrt(120)
    assert result.mae_ci.low == pytest.approx(max(0.0, result.mae - half))
    assert result.mae_ci.high == pytest.approx(result.mae + half)
    assert result.kappa is not None and result.spearman is not None
    assert result.kappa_ci.low < result.kappa < result.kappa_ci.high
    assert result.spearman_ci.low < result.spearman < result.spearman_ci.high < 1


def test_a_judge_that_ignores_the_run_has_kappa_near_zero_however_often_it_agrees() -> None:
    """95 % of runs pass for people; a judge passing everything agrees on 95 % and knows nothing."""
    pairs = [Pair(0.9, None, "pass")] * 95 + [Pair(0.9, None, "fail")] * 5
    result = agreement(pairs, 0.5)
    assert result.accuracy == pytest.approx(0.95)
    assert result.kappa == pytest.approx(0.0, abs=1e-12)
    # Where both gave one verdict only, chance agreement is total and kappa is undefined.
    assert agreement([Pair(0.9, None, "pass")] * 20, 0.5).kappa is None


def test_labels_and_values_give_verdicts_and_small_samples_get_no_interval() -> None:
    assert human_passes(None, "Thumbs_Up", 0.5) is True
    assert human_passes(0.9, "fail", 0.5) is False  # the words win over the number
    assert human_passes(0.49, "meh", 0.5) is False  # an unknown word: the value decides
    assert human_passes(None, "meh", 0.5) is None

    pairs = [
        Pair(0.8, None, "pass"),
        Pair(0.3, 0.2, None),
        Pair(0.6, None, "fail"),
        Pair(0.1, 0.4, "bad"),
        Pair(0.7, None, "meh"),
    ]
    result = agreement(pairs, 0.5, min_ci_samples=10)
    assert (result.n, result.n_values, result.n_verdicts) == (5, 2, 4)
    assert result.mae == pytest.approx((0.1 + 0.3) / 2)
    assert result.spearman is None  # two points have no rank correlation worth the name
    assert result.confusion == {
        "judge_pass_human_pass": 1,
        "judge_pass_human_fail": 1,
        "judge_fail_human_pass": 0,
        "judge_fail_human_fail": 2,
    }
    assert result.kappa == pytest.approx(
        kappa_of({(True, True): 1, (True, False): 1, (False, True): 0, (False, False): 2})
    )
    assert result.mae_ci is None and result.kappa_ci is None and result.spearman_ci is None


def test_nothing_to_compare_gives_no_figures() -> None:
    result = agreement([], 0.5)
    assert result.n == 0 and result.mae is None and result.kappa is None and result.spearman is None
    constant = agreement([Pair(0.5, v / 10, None) for v in range(12)], 0.5)
    assert constant.spearman is None and constant.mae is not None
