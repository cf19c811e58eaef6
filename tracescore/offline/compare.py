"""Agreement between two versions of a binding's scorer on the runs both scored.

Before switching a binding to a new scorer version (a new prompt, a new judge model), the
question is whether the new scores tell the same story: paired on the same runs, how far apart
the means are, how well the scores correlate, and how often both give the same pass/fail label.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from tracescore.store import Database
from tracescore.store.scores import version_scores


@dataclass(frozen=True)
class Agreement:
    binding: str
    version_a: str
    version_b: str
    n_a: int
    """Runs scored ``ok`` by version A (paired or not)."""
    n_b: int
    n_paired: int
    mean_a: float | None
    mean_b: float | None
    mean_difference: float | None
    """Mean of (B - A) over the paired runs."""
    pearson: float | None
    """None with fewer than two pairs or when either side is constant."""
    label_agreement: float | None
    """Share of paired runs given the same pass/fail label (None when no labels)."""
    n_labelled: int


def compare_versions(
    engine: Database, binding: str, version_a: str, version_b: str, threshold: float | None = None
) -> Agreement:
    """Pair the ``ok`` scores of two versions by run. Labels are the stored ones, or with
    ``threshold``, ``score >= threshold`` on both sides."""
    rows = version_scores(engine, binding, [version_a, version_b])
    sides: dict[str, dict[tuple[str, str], tuple[float, str | None]]] = {
        version_a: {},
        version_b: {},
    }
    for row in rows:
        label = row.label
        if threshold is not None:
            label = "pass" if row.score >= threshold else "fail"
        sides[row.scorer_version][(row.trace_id, row.span_id)] = (row.score, label)
    a, b = sides[version_a], sides[version_b]
    paired = [(a[key], b[key]) for key in a.keys() & b.keys()]
    xs = [x for (x, _), _ in paired]
    ys = [y for _, (y, _) in paired]
    labelled = [(la, lb) for (_, la), (_, lb) in paired if la is not None and lb is not None]
    return Agreement(
        binding=binding,
        version_a=version_a,
        version_b=version_b,
        n_a=len(a),
        n_b=len(b),
        n_paired=len(paired),
        mean_a=statistics.fmean(xs) if xs else None,
        mean_b=statistics.fmean(ys) if ys else None,
        mean_difference=statistics.fmean(y - x for x, y in zip(xs, ys, strict=True))
        if xs
        else None,
        pearson=_pearson(xs, ys),
        label_agreement=sum(la == lb for la, lb in labelled) / len(labelled) if labelled else None,
        n_labelled=len(labelled),
    )


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:  # one side is constant
        return None
