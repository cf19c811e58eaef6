"""Direct computations of agreement figures, for tests to check the calibration module against."""

from __future__ import annotations

import math


def ranks(values: list[float]) -> list[float]:
    """Average ranks (ties share the mean of their positions), 1-based."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    position = 0
    while position < len(order):
        end = position
        while end + 1 < len(order) and values[order[end + 1]] == values[order[position]]:
            end += 1
        for index in order[position : end + 1]:
            ranks[index] = (position + end) / 2 + 1
        position = end + 1
    return ranks


def pearson(a: list[float], b: list[float]) -> float:
    mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
    covariance = sum((x - mean_a) * (y - mean_b) for x, y in zip(a, b, strict=True))
    spread = math.sqrt(sum((x - mean_a) ** 2 for x in a) * sum((y - mean_b) ** 2 for y in b))
    return covariance / spread


def kappa_of(cells: dict[tuple[bool, bool], int]) -> float:
    n = sum(cells.values())
    observed = (cells[(True, True)] + cells[(False, False)]) / n
    judge = (cells[(True, True)] + cells[(True, False)]) / n
    human = (cells[(True, True)] + cells[(False, True)]) / n
    chance = judge * human + (1 - judge) * (1 - human)
    return (observed - chance) / (1 - chance)
