"""The vectors a pass groups by, made with NumPy and SciPy's sparse matrices alone.

A pass used scikit-learn's ``TfidfVectorizer``, ``DictVectorizer``, ``normalize`` and
``silhouette_score``: importing scikit-learn loads SciPy's statistics and more, some 50 MB of
the pass's helper process and two seconds of its start, for four small computations. These
give the same numbers (tests/insights/test_vectors.py compares them with scikit-learn's), and
a text's terms are read once per distinct text: agents repeat their requests, answers and
errors word for word, and tokenising was most of the vectorising.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from tracescore.insights.stop_words import ENGLISH_STOP_WORDS

TOKEN = re.compile(r"(?u)\b[^\W\d]\w+\b")
"""A term: two or more word characters starting with a letter (no numbers, no one-letter
words)."""


def l2_rows(matrix: Any) -> Any:
    """``matrix`` (sparse or dense) with each row scaled to unit length (zero rows kept)."""
    if sparse.issparse(matrix):
        rows = sparse.csr_matrix(matrix, copy=True)
        norms = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        rows.data /= np.repeat(norms, np.diff(rows.indptr)).astype(rows.dtype)
        return rows
    dense = np.asarray(matrix)
    norms = np.linalg.norm(dense, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return dense / norms


def tfidf(
    documents: Sequence[str], *, min_df: int, max_df: float, max_features: int
) -> tuple[sparse.csr_matrix, NDArray[np.str_]]:
    """L2-normalised TF-IDF rows (float32) and their terms, alphabetical: sublinear term
    frequencies (1 + ln tf), smoothed inverse document frequencies (ln((1 + n) / (1 + df)) + 1),
    lower-cased :data:`TOKEN` terms that are not English function words, those in at least
    ``min_df`` documents and at most a ``max_df`` share of them, the ``max_features`` most
    frequent. No term left gives zero columns."""
    distinct: dict[str, int] = {}
    rows: list[int] = []
    vocabulary: dict[str, int] = {}
    indices: list[int] = []
    counts: list[int] = []
    indptr = [0]
    for document in documents:
        row = distinct.get(document)
        if row is None:
            row = distinct[document] = len(distinct)
            terms = Counter(
                term for term in TOKEN.findall(document.lower()) if term not in ENGLISH_STOP_WORDS
            )
            indices.extend(vocabulary.setdefault(term, len(vocabulary)) for term in terms)
            counts.extend(terms.values())
            indptr.append(len(indices))
        rows.append(row)
    if not vocabulary:
        return sparse.csr_matrix((len(documents), 0), dtype=np.float32), np.array([], dtype=str)
    by_text = sparse.csr_matrix(
        (np.asarray(counts, dtype=np.float32), indices, indptr),
        shape=(len(distinct), len(vocabulary)),
    )
    copies = np.bincount(rows, minlength=len(distinct)).astype(np.float64)
    frequency = np.asarray(sparse.csr_matrix(by_text != 0).T @ copies).ravel()
    totals = np.asarray(by_text.T @ copies).ravel()
    names = np.array(list(vocabulary), dtype=str)
    kept = np.flatnonzero((frequency >= min_df) & (frequency <= max_df * len(documents)))
    kept = kept[np.argsort(names[kept], kind="stable")]
    if len(kept) > max_features:  # the most frequent, alphabetical among equals
        chosen = np.argsort(-totals[kept], kind="stable")[:max_features]
        kept = kept[np.sort(chosen)]
    if len(kept) == 0:
        return sparse.csr_matrix((len(documents), 0), dtype=np.float32), np.array([], dtype=str)
    weights = sparse.csr_matrix(by_text[:, kept])
    np.log(weights.data, out=weights.data)
    weights.data += 1.0
    idf = np.log((1.0 + len(documents)) / (1.0 + frequency[kept])) + 1.0
    weights = l2_rows(weights @ sparse.diags(idf.astype(np.float32)))
    return sparse.csr_matrix(weights[rows], dtype=np.float32), names[kept]


def dict_rows(
    rows: Sequence[Mapping[str, float]],
) -> tuple[sparse.csr_matrix, NDArray[np.str_]]:
    """``rows`` of named weights as a sparse matrix (float32) and its column names, sorted."""
    names = sorted({name for row in rows for name in row})
    column = {name: i for i, name in enumerate(names)}
    indptr = np.cumsum([0, *(len(row) for row in rows)])
    indices = [column[name] for row in rows for name in row]
    values = [value for row in rows for value in row.values()]
    matrix = sparse.csr_matrix(
        (np.asarray(values, dtype=np.float32), indices, indptr), shape=(len(rows), len(names))
    )
    matrix.sort_indices()
    return matrix, np.array(names, dtype=str)


def silhouette(distances: NDArray[np.floating[Any]], labels: NDArray[np.intp]) -> float:
    """The mean silhouette of ``labels`` over precomputed ``distances`` (square, zero
    diagonal): per run, ``(b - a) / max(a, b)`` with ``a`` its mean distance to the other runs
    of its group and ``b`` the least mean distance to another group's runs; 0 for a run alone in
    its group. Needs at least two groups. Each run's distances to a group are summed over the
    group's columns at once (the columns in group order, one ``reduceat``)."""
    _, group = np.unique(labels, return_inverse=True)
    group = group.ravel()
    sizes = np.bincount(group)
    order = np.argsort(group, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    sums = np.add.reduceat(np.asarray(distances, dtype=np.float64)[:, order], starts, axis=1)
    runs = np.arange(len(labels))
    own = sizes[group]
    inside = sums[runs, group] / np.maximum(own - 1, 1)
    means = sums / sizes
    means[runs, group] = np.inf
    nearest = means.min(axis=1)
    spread = np.maximum(inside, nearest)
    scores = np.where(spread > 0, (nearest - inside) / np.where(spread > 0, spread, 1.0), 0.0)
    scores[own == 1] = 0.0
    return float(scores.mean())
