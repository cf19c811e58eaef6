"""The pass's own vectors (tracescore.insights.vectors) give scikit-learn's numbers: TF-IDF
weights and terms, dict rows, the silhouette, and the stop words are scikit-learn's list. The
pass left scikit-learn for its import's memory; these keep the grouping what it was."""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.feature_extraction import DictVectorizer
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer
from sklearn.metrics import silhouette_score
from sklearn.preprocessing import normalize

from tests.support.failure_modes import planted_stream
from tests.support.support_traffic import support_stream
from tracescore.insights import stop_words
from tracescore.insights.vectors import dict_rows, l2_rows, silhouette, tfidf


def _documents() -> list[str]:
    planted = planted_stream(100, 100)
    support = support_stream(200, "tuning")
    return [
        *(f"{run.answer}\n{run.reason}" for run in planted),
        *(run.request for run in planted),
        *(run.answer for run in support),
        "",
        "42 7",
    ]


def test_tfidf_gives_scikit_learns_weights_and_terms() -> None:
    documents = _documents()
    theirs = TfidfVectorizer(
        sublinear_tf=True,
        min_df=2,
        max_df=0.5,
        stop_words="english",
        max_features=50_000,
        dtype=np.float32,
        token_pattern=r"(?u)\b[^\W\d]\w+\b",
    )
    expected = theirs.fit_transform(documents)
    weights, terms = tfidf(documents, min_df=2, max_df=0.5, max_features=50_000)
    assert list(terms) == list(theirs.get_feature_names_out())
    assert weights.shape == expected.shape and weights.dtype == np.float32
    assert abs(weights - expected).max() < 1e-6


def test_tfidf_keeps_the_most_frequent_terms_and_says_when_none_is_left() -> None:
    documents = ["alpha beta", "alpha beta", "alpha gamma", "alpha gamma", "delta", "delta"]
    weights, terms = tfidf(documents, min_df=2, max_df=1.0, max_features=2)
    assert list(terms) == ["alpha", "beta"]  # alpha 4 times; beta, delta and gamma twice each
    assert weights.shape == (6, 2)
    empty, none = tfidf(["one", "two"], min_df=2, max_df=0.5, max_features=10)
    assert empty.shape == (2, 0) and len(none) == 0


def test_dict_rows_and_l2_rows_give_scikit_learns() -> None:
    rows = [{"tool:b": 1.0, "answer:a": 0.5}, {"scorer:x": 0.15}, {}, {"answer:a": 0.7}]
    expected = DictVectorizer(dtype=np.float32)
    matrix, names = dict_rows(rows)
    assert list(names) == list(expected.fit(rows).get_feature_names_out())
    assert abs(matrix - expected.transform(rows)).max() == 0
    assert abs(l2_rows(matrix) - normalize(matrix)).max() < 1e-7
    dense = np.array([[3.0, 4.0], [0.0, 0.0]])
    assert np.allclose(l2_rows(dense), normalize(dense))
    assert sparse.issparse(l2_rows(matrix))


def test_silhouette_gives_scikit_learns() -> None:
    points = np.random.RandomState(3).rand(80, 4)
    distances = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    labels = np.random.RandomState(4).randint(0, 5, 80)
    labels[7] = 99  # a group of one
    expected = silhouette_score(distances, labels, metric="precomputed")
    assert abs(silhouette(distances, labels) - expected) < 1e-12


def test_the_stop_words_are_scikit_learns() -> None:
    assert stop_words.ENGLISH_STOP_WORDS == ENGLISH_STOP_WORDS
