"""Grouping failed runs by what they have in common, with no number of groups given.

Each run's text (:meth:`FailedRun.document`) becomes a vector: TF-IDF weights by default
(:func:`~tracescore.insights.vectors.tfidf`: sublinear term frequencies, terms in at least two runs),
or an embedding from ``insights.embedding_model`` through litellm. Hierarchical clustering
(average linkage on cosine distances, cut at ``distance_threshold``) finds the groups among at
most ``cluster_sample`` evenly spread runs, since its memory grows with the square of the runs
it sees; every other run joins the group whose centroid is nearest, if near enough. Groups
smaller than ``min_group_size`` are dropped: their runs failed in ways of their own.

Chosen on ``benchmarks/insights.py --compare``'s planted failure modes by adjusted Rand index
against the planted labels, on these vectors: over 2,800 runs, average linkage 0.94, complete
0.88, DBSCAN 0.92 at its best radius (and 0.0 one step above it), HDBSCAN 0.18, single linkage
0.0 (it chains every mode together through the noise); over 1,500 runs, complete 0.83, average
0.81, DBSCAN 0.80 at best. Average linkage was kept for its steadiness across sizes and
because its cut is a distance one can reason about. Every step is deterministic: the same runs
in the same order and the same settings give the same groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from tracescore.insights.config import InsightsConfig
from tracescore.insights.vectors import dict_rows, l2_rows, silhouette, tfidf

TERMS_KEPT = 20
"""Terms of a group's centroid stored with it: what a later pass matches it by."""
NAME_TERMS = 4
"""Distinctive terms a group is named by when no judge names it."""
ASSIGN_CHUNK = 2_000
"""Runs scored against the centroids at once (a dense runs × groups block)."""
MAX_FEATURES = 50_000
"""Vocabulary cap: the TF-IDF matrix's width, whatever the runs say."""
CUTS = np.round(np.arange(0.1, 1.25, 0.05), 2)
"""The cosine distances a pass tries as its cut (:func:`_silhouette_cut`)."""
SILHOUETTE_SAMPLE = 500
"""Runs each cut's silhouette is averaged over (the same ones for every cut): a sixteenth of the
work of the whole sample, for a choice between cuts that are far apart."""
DISTANCE_ROWS = 250
"""Rows of the sample's distances computed at once (a dense block of that many rows)."""
SIGNATURE_SHARE = 0.05
"""Least share of a group's runs a signature feature must have to describe the group."""
SIGNATURE_KEPT = 16
"""Signature features kept per group."""
WHO = "scorer:"
"""The signature features that say which scorer flagged a run, not how it failed."""

Embed = Callable[[Sequence[str]], NDArray[np.float32]]
"""Texts to one row vector each (an embedding model)."""


@dataclass(frozen=True, slots=True)
class Group:
    """One group of a pass: its runs (indices into the pass's runs) and its terms."""

    members: list[int]
    terms: dict[str, float]
    """Its heaviest terms and their mean TF-IDF weight over its runs (its centroid, in words)."""
    distinctive: list[str]
    """The terms that set it apart from the other failed runs, most distinctive first."""
    signature: dict[str, float]
    """Its signature: the share of its runs with each feature (``tool_error:timeout``: 0.97)."""


def _tfidf(documents: Sequence[str]) -> tuple[sparse.csr_matrix, NDArray[np.str_]]:
    """L2-normalised TF-IDF rows and the vocabulary (:func:`~tracescore.insights.vectors.tfidf`:
    terms in at least two runs and at most half of them); an empty vocabulary (runs with no
    term in common) gives zero columns."""
    return tfidf(documents, min_df=2, max_df=0.5, max_features=MAX_FEATURES)


def _dense(matrix: Any) -> NDArray[np.float64]:
    return np.asarray(matrix.toarray() if sparse.issparse(matrix) else matrix, dtype=np.float64)


def _distances(sample: Any) -> NDArray[np.float32]:
    """The cosine distances of the sample's (L2-normalised) rows, in float32: the largest array
    of a pass (``cluster_sample`` squared), filled :data:`DISTANCE_ROWS` rows at a time (the
    sparse product of the whole sample with itself was twice its size again)."""
    count = sample.shape[0]
    distances = np.empty((count, count), dtype=np.float32)
    for start in range(0, count, DISTANCE_ROWS):
        block = sample[start : start + DISTANCE_ROWS] @ sample.T
        distances[start : start + DISTANCE_ROWS] = (
            block.toarray() if sparse.issparse(block) else block
        )
    np.clip(distances, -1.0, 1.0, out=distances)
    np.subtract(1.0, distances, out=distances)
    np.fill_diagonal(distances, 0.0)
    return distances


def _silhouette_cut(
    among: NDArray[np.float32], chosen: NDArray[np.intp], tree: NDArray[np.float64], min_size: int
) -> float:
    """The cut of the average-linkage ``tree`` whose groups have the highest silhouette (how
    much nearer each run is to its own group than to the next) over the runs ``chosen``
    (``among``: their distances), runs in groups smaller than ``min_size`` counting as groups
    of their own: a cut that leaves runs ungrouped or that merges two modes both score lower.
    Chosen per pass from the runs themselves, so no constant tuned on one stream of failures
    decides how tight a group is."""
    best, best_cut = -2.0, float(CUTS[-1])
    for cut in CUTS:
        labels = fcluster(tree, cut, criterion="distance")
        sizes = np.bincount(labels)
        small = sizes[labels] < min_size
        labels[small] = labels.max() + 1 + np.arange(int(small.sum()))  # each its own group
        scored = labels[chosen]
        found = len(np.unique(scored))
        if found < 2 or found >= len(scored):
            continue
        score = silhouette(among, scored)
        if score > best:
            best, best_cut = score, float(cut)
    return best_cut


def _clustered(
    vectors: sparse.csr_matrix | NDArray[np.float32], config: InsightsConfig
) -> NDArray[np.intp]:
    """A group number per row (-1: none): average-linkage clustering of an even sample, cut
    where the data says (:func:`_silhouette_cut`, unless ``distance_threshold`` is set), the
    rest assigned to the nearest centroid within the cut. Products stay sparse until they
    are as small as the sample's distances or a chunk's scores: a TF-IDF row is as wide as
    the vocabulary (tens of thousands of terms)."""
    count = vectors.shape[0]
    labels = np.full(count, -1, dtype=np.intp)
    if count < 2:
        return labels
    picked = np.unique(np.linspace(0, count - 1, min(count, config.cluster_sample)).astype(np.intp))
    sample: Any = vectors[picked]
    distances = _distances(sample)
    # The runs each cut's silhouette is scored over, taken out of the distances once; the
    # square freed before the linkage makes its own copies of the condensed distances.
    chosen = np.random.RandomState(0).permutation(len(distances))[:SILHOUETTE_SAMPLE]
    among = distances[np.ix_(chosen, chosen)]
    condensed = squareform(distances, checks=False)
    del distances
    tree = linkage(condensed, method="average")
    del condensed
    cut = config.distance_threshold
    if cut is None:
        cut = _silhouette_cut(among, chosen, tree, config.min_group_size)
    found = fcluster(tree, cut, criterion="distance").astype(np.intp) - 1
    labels[picked] = found
    if len(picked) == count:
        return labels
    # Each group's centroid: the mean of its sample rows, as an (indicator / size) product.
    indicator = sparse.csr_matrix(
        (1.0 / np.bincount(found)[found], (found, np.arange(len(found)))),
        shape=(int(found.max()) + 1, len(found)),
    )
    centroids: Any = l2_rows(indicator @ sample)
    rest = np.setdiff1d(np.arange(count), picked)
    for start in range(0, len(rest), ASSIGN_CHUNK):
        rows = rest[start : start + ASSIGN_CHUNK]
        scores = _dense(vectors[rows] @ centroids.T)
        nearest = scores.argmax(axis=1)
        near_enough = 1.0 - scores[np.arange(len(rows)), nearest] <= cut
        labels[rows[near_enough]] = nearest[near_enough]
    return labels


def _merged_by_signature(
    labels: NDArray[np.intp], signatures: sparse.csr_matrix, similarity: float
) -> NDArray[np.intp]:
    """``labels`` with groups whose signatures agree (cosine of their mean signatures at least
    ``similarity``) made one: a mode its wording split (one group per error text, per rule
    cited, per language) fails the same way in each part. ``signatures`` holds the features
    that say how a run failed, not who noticed: runs that only share the scorer that flagged
    them have nothing in common to merge on."""
    found = np.unique(labels[labels >= 0])
    if len(found) < 2:
        return labels
    members = labels >= 0
    indicator = sparse.csr_matrix(
        (
            np.ones(int(members.sum())),
            (np.searchsorted(found, labels[members]), np.flatnonzero(members)),
        ),
        shape=(len(found), len(labels)),
    )
    centroids = l2_rows(indicator @ signatures)
    alike = _dense(centroids @ centroids.T) >= similarity
    root = list(range(len(found)))

    def top(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for i, j in zip(*np.nonzero(np.triu(alike, 1)), strict=True):
        root[top(int(j))] = top(int(i))
    merged = labels.copy()
    merged[members] = found[[top(int(i)) for i in np.searchsorted(found, labels[members])]]
    return merged


def _described(
    tfidf: sparse.csr_matrix, vocabulary: NDArray[np.str_], members: list[int]
) -> tuple[dict[str, float], list[str]]:
    """A group's heaviest terms (weights) and its distinctive ones: mean weight in the group
    well above the mean over all failed runs. A term of both the requests' and the failures'
    vocabularies counts once, at its heavier place."""
    if tfidf.shape[1] == 0:
        return {}, []
    inside = np.asarray(tfidf[members].mean(axis=0)).ravel()
    overall = np.asarray(tfidf.mean(axis=0)).ravel()
    terms: dict[str, float] = {}
    for i in np.argsort(-inside, kind="stable"):
        if len(terms) == TERMS_KEPT or inside[i] <= 0:
            break
        terms.setdefault(str(vocabulary[i]), round(float(inside[i]), 4))
    lift = inside - overall
    distinctive: list[str] = []
    for i in np.argsort(-lift, kind="stable"):
        if len(distinctive) == NAME_TERMS or lift[i] <= 0:
            break
        if str(vocabulary[i]) not in distinctive:
            distinctive.append(str(vocabulary[i]))
    return terms, distinctive


def _joined(
    blocks: Sequence[tuple[sparse.csr_matrix | NDArray[np.float32], float]],
) -> sparse.csr_matrix | NDArray[np.float32]:
    """One row per run: each block's row scaled by its weight, side by side, the whole row
    L2-normalised, so the cosine of two runs is the weighted mix of how alike each block is.
    The text blocks come normalised; the signature does not: a run with many signs of how it
    failed leans on them, one that only says which scorer flagged it leans on its text."""
    if any(sparse.issparse(block) for block, _ in blocks):
        return l2_rows(
            sparse.hstack([sparse.csr_matrix(b) * w for b, w in blocks if w > 0], format="csr")
        )
    return l2_rows(np.hstack([np.asarray(b) * w for b, w in blocks if w > 0]))


def _signature_shares(
    features: sparse.csr_matrix, names: NDArray[np.str_], members: list[int]
) -> dict[str, float]:
    """The share of a group's runs that have each feature (those of at least
    :data:`SIGNATURE_SHARE`), most common first."""
    present = np.asarray((features[members] != 0).mean(axis=0)).ravel()
    return {
        str(names[i]): round(float(present[i]), 3)
        for i in np.argsort(-present, kind="stable")[:SIGNATURE_KEPT]
        if present[i] >= SIGNATURE_SHARE
    }


def group_documents(
    requests: Sequence[str],
    failures: Sequence[str],
    signatures: Sequence[Mapping[str, float]],
    config: InsightsConfig,
    embed: Embed | None = None,
) -> list[Group]:
    """The groups of the runs whose requests, failure texts (:meth:`FailedRun.failure`) and
    signatures (:meth:`FailedRun.signature`) are given, at least ``min_group_size`` runs each,
    largest first."""
    if len(requests) < config.min_group_size:
        return []  # not one group's worth (a window with no failed run at all included)
    asked, asked_terms = _tfidf(requests)
    failed, failed_terms = _tfidf(failures)
    signed, features = dict_rows(signatures)
    # Named by the terms of both texts alike (the city a tool fails for is in the request),
    # grouped with the request weighed down.
    tfidf = sparse.csr_matrix(_joined([(asked, 1.0), (failed, 1.0)]))
    vocabulary = np.concatenate([asked_terms, failed_terms])
    if embed is not None:
        asked, failed = l2_rows(embed(requests)), l2_rows(embed(failures))
    vectors = _joined(
        [
            (signed, config.signature_weight),
            (failed, config.text_weight),
            (asked, config.request_weight),
        ]
    )
    telling = signed[:, [i for i, name in enumerate(features) if not name.startswith(WHO)]]
    labels = _merged_by_signature(_clustered(vectors, config), telling, config.merge_similarity)
    groups = []
    for label in np.unique(labels[labels >= 0]):
        members = [int(i) for i in np.flatnonzero(labels == label)]
        if len(members) < config.min_group_size:
            continue
        terms, distinctive = _described(tfidf, vocabulary, members)
        groups.append(
            Group(members, terms, distinctive, _signature_shares(signed, features, members))
        )
    groups.sort(key=lambda group: (-len(group.members), group.members[0]))
    return groups
