"""Which stored group a new pass's group is: the same id from pass to pass, so a group is "new"
the first time it is seen and "growing" when it is larger than at the pass before.

A new group takes the id of the stored group most like it, when like enough
(``insights.match_similarity``): alike by their terms (the cosine of their centroids' term
weights, which survives a window that moved on to other runs) or by their runs (the share of
the smaller group's runs the two have in common, between passes over overlapping windows).
Matching is greedy, most similar pair first, so two new groups never take one id. A group
matched to none gets an id of its own, derived from its runs, so the same runs give the same id.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence


def _cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    dot = sum(weight * b.get(term, 0.0) for term, weight in a.items())
    norms = math.sqrt(sum(w * w for w in a.values())) * math.sqrt(sum(w * w for w in b.values()))
    return dot / norms if norms else 0.0


def _overlap(a: set[tuple[str, str]], b: set[tuple[str, str]]) -> float:
    smaller = min(len(a), len(b))
    return len(a & b) / smaller if smaller else 0.0


def new_id(members: Sequence[tuple[str, str]]) -> str:
    """An id for a group seen for the first time, from its first run's ids."""
    first = min(members)
    return hashlib.sha256(f"{first[0]}/{first[1]}".encode()).hexdigest()[:16]


def match_groups(
    new: Sequence[tuple[Mapping[str, float], set[tuple[str, str]]]],
    known: Sequence[tuple[str, Mapping[str, float], set[tuple[str, str]]]],
    threshold: float,
) -> list[str]:
    """An id for each ``new`` (terms, runs) group: a ``known`` (id, terms, runs) group's when
    one matches, else :func:`new_id`."""
    pairs = sorted(
        (
            (-max(_cosine(terms, old_terms), _overlap(runs, old_runs)), i, j)
            for i, (terms, runs) in enumerate(new)
            for j, (_, old_terms, old_runs) in enumerate(known)
        ),
    )
    ids: dict[int, str] = {}
    taken: set[int] = set()
    for negative, i, j in pairs:
        if -negative < threshold:
            break
        if i in ids or j in taken:
            continue
        ids[i] = known[j][0]
        taken.add(j)
    return [ids.get(i) or new_id(sorted(runs)) for i, (_, runs) in enumerate(new)]
