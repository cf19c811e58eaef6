"""Grouping failed runs by what they have in common, with no number of groups given.

Each run's text (:meth:`FailedRun.document`) becomes a vector: TF-IDF weights by default
(scikit-learn's ``TfidfVectorizer``, sublinear term frequencies, terms in at least two runs),
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize

from tracescore.insights.config import InsightsConfig

TERMS_KEPT = 20
"""Terms of a group's centroid stored with it: what a later pass matches it by."""
NAME_TERMS = 4
"""Distinctive terms a group is named by when no judge names it."""
ASSIGN_CHUNK = 2_000
"""Runs scored against the centroids at once (a dense runs × groups block)."""
MAX_FEATURES = 50_000
"""Vocabulary cap: the TF-IDF matrix's width, whatever the runs say."""

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


def _tfidf(documents: Sequence[str]) -> tuple[sparse.csr_matrix, NDArray[np.str_]]:
    """L2-normalised TF-IDF rows and the vocabulary; an empty vocabulary (runs with no term in
    common) gives zero columns."""
    vectorizer = TfidfVectorizer(
        sublinear_tf=True,
        min_df=2,
        max_df=0.5,
        stop_words="english",
        max_features=MAX_FEATURES,
        dtype=np.float32,
        token_pattern=r"(?u)\b[^\W\d]\w+\b",
    )
    try:
        matrix = vectorizer.fit_transform(documents)
    except ValueError:  # no term left after pruning
        return sparse.csr_matrix((len(documents), 0), dtype=np.float32), np.array([], dtype=str)
    return sparse.csr_matrix(matrix), vectorizer.get_feature_names_out()


def _dense(matrix: Any) -> NDArray[np.float64]:
    return np.asarray(matrix.toarray() if sparse.issparse(matrix) else matrix, dtype=np.float64)


def _clustered(
    vectors: sparse.csr_matrix | NDArray[np.float32], config: InsightsConfig
) -> NDArray[np.intp]:
    """A group number per row (-1: none): agglomerative clustering of an even sample, the rest
    assigned to the nearest centroid within the threshold. Products stay sparse until they
    are as small as the sample's distances or a chunk's scores: a TF-IDF row is as wide as
    the vocabulary (tens of thousands of terms)."""
    count = vectors.shape[0]
    labels = np.full(count, -1, dtype=np.intp)
    if count < 2:
        return labels
    picked = np.unique(np.linspace(0, count - 1, min(count, config.cluster_sample)).astype(np.intp))
    sample: Any = vectors[picked]
    distances = 1.0 - np.clip(_dense(sample @ sample.T), -1.0, 1.0)
    np.fill_diagonal(distances, 0.0)
    clustering = AgglomerativeClustering(
        n_clusters=None,
        metric="precomputed",
        linkage="average",
        distance_threshold=config.distance_threshold,
    ).fit(distances)
    found: NDArray[np.intp] = clustering.labels_
    labels[picked] = found
    if len(picked) == count:
        return labels
    # Each group's centroid: the mean of its sample rows, as an (indicator / size) product.
    indicator = sparse.csr_matrix(
        (1.0 / np.bincount(found)[found], (found, np.arange(len(found)))),
        shape=(int(found.max()) + 1, len(found)),
    )
    centroids: Any = normalize(indicator @ sample)
    rest = np.setdiff1d(np.arange(count), picked)
    for start in range(0, len(rest), ASSIGN_CHUNK):
        rows = rest[start : start + ASSIGN_CHUNK]
        scores = _dense(vectors[rows] @ centroids.T)
        nearest = scores.argmax(axis=1)
        near_enough = 1.0 - scores[np.arange(len(rows)), nearest] <= config.distance_threshold
        labels[rows[near_enough]] = nearest[near_enough]
    return labels


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


def _weighted(
    requests: sparse.csr_matrix | NDArray[np.float32],
    failures: sparse.csr_matrix | NDArray[np.float32],
    weight: float,
) -> sparse.csr_matrix | NDArray[np.float32]:
    """One row per run: its failure's vector beside its request's scaled by ``weight``, so the
    cosine of two runs is mostly how alike they failed and partly how alike their requests are."""
    if sparse.issparse(requests) or sparse.issparse(failures):
        joined = sparse.hstack([sparse.csr_matrix(requests) * weight, failures], format="csr")
    else:
        joined = np.hstack([np.asarray(requests) * weight, np.asarray(failures)])
    return normalize(joined)


def group_documents(
    requests: Sequence[str],
    failures: Sequence[str],
    config: InsightsConfig,
    embed: Embed | None = None,
) -> list[Group]:
    """The groups of the runs whose requests and failure texts (:meth:`FailedRun.failure`)
    are given, at least ``min_group_size`` runs each, largest first."""
    if len(requests) < config.min_group_size:
        return []  # not one group's worth (a window with no failed run at all included)
    asked, asked_terms = _tfidf(requests)
    failed, failed_terms = _tfidf(failures)
    # Named by the terms of both texts alike (the city a tool fails for is in the request),
    # grouped with the request weighed down.
    tfidf = sparse.csr_matrix(_weighted(asked, failed, 1.0))
    vocabulary = np.concatenate([asked_terms, failed_terms])
    vectors = (
        _weighted(normalize(embed(requests)), normalize(embed(failures)), config.request_weight)
        if embed is not None
        else _weighted(asked, failed, config.request_weight)
    )
    labels = _clustered(vectors, config)
    groups = []
    for label in np.unique(labels[labels >= 0]):
        members = [int(i) for i in np.flatnonzero(labels == label)]
        if len(members) < config.min_group_size:
            continue
        terms, distinctive = _described(tfidf, vocabulary, members)
        groups.append(Group(members, terms, distinctive))
    groups.sort(key=lambda group: (-len(group.members), group.members[0]))
    return groups
