"""content-similarity: Sørensen–Dice similarity of character bigrams, input vs output.

A port of Mastra's ``createContentSimilarityScorer`` (``string-similarity``'s
``compareTwoStrings``), exact to the last bit: bigrams are pairs of UTF-16 code units and
whitespace is ECMAScript's.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Sized
from typing import Any

import numpy as np

from tracescore.scorers.base import Scorer, StepContext, create_scorer
from tracescore.scorers.code.jstext import (
    js_code_units_without_whitespace,
    js_collapse_whitespace,
    js_remove_whitespace,
    utf16_code_units,
    utf16_units,
)
from tracescore.scorers.utils import run_input_text, run_output_text

ID = "content-similarity-scorer"
VERSION = "1"


# Below this many characters (both strings) dicts count bigrams fastest; above, sorted numpy
# arrays do (numpy costs ~0.1 ms per call, a dict ~0.4 µs per bigram).
_NUMPY_FROM = 600


def _shared_bigrams(first: str, second: str) -> int:
    """Size of the multiset intersection of the two strings' bigrams (strings of UTF-16 units).

    ``string-similarity``'s greedy count — each bigram of the second string takes one left of the
    first — is exactly this size.
    """
    if len(first) + len(second) < _NUMPY_FROM:
        in_first = Counter(map(operator.add, first, first[1:]))
        in_second = Counter(map(operator.add, second, second[1:]))
        return sum((in_first & in_second).values())
    return _shared_unit_bigrams(utf16_code_units(first), utf16_code_units(second))


def _shared_unit_bigrams(first: np.ndarray, second: np.ndarray) -> int:
    """``_shared_bigrams`` of two arrays of UTF-16 code units: each distinct bigram of the first
    (a run of its sorted bigrams) is counted in the second's sorted bigrams by binary search."""
    in_first, in_second = np.sort(_bigram_codes(first)), np.sort(_bigram_codes(second))
    if not (in_first.size and in_second.size):
        return 0
    starts = np.flatnonzero(in_first[1:] != in_first[:-1]) + 1
    bigrams = in_first[np.concatenate(([0], starts))]
    first_counts = np.diff(np.concatenate(([0], starts, [in_first.size])))
    second_counts = np.searchsorted(in_second, bigrams, "right") - np.searchsorted(in_second, bigrams, "left")
    return int(np.minimum(first_counts, second_counts).sum())


def _bigram_codes(units: np.ndarray) -> np.ndarray:
    """Each pair of adjacent code units as one 32-bit number."""
    codes = units.astype(np.uint32)
    return (codes[:-1] << 16) | codes[1:]


def compare_two_strings(first: str, second: str) -> float:
    """``string-similarity``'s ``compareTwoStrings``: Dice coefficient of character bigrams,
    whitespace ignored, lengths in UTF-16 code units."""
    if len(first) + len(second) < _NUMPY_FROM:
        first, second = js_remove_whitespace(first), js_remove_whitespace(second)
        return _dice(first == second, utf16_units(first), utf16_units(second), _shared_bigrams)
    first_units, second_units = js_code_units_without_whitespace(first), js_code_units_without_whitespace(second)
    return _dice(np.array_equal(first_units, second_units), first_units, second_units, _shared_unit_bigrams)


def _dice(same: bool, first: Sized, second: Sized, shared: Callable[[Any, Any], int]) -> float:
    """The coefficient from both texts' UTF-16 units (whitespace removed) and their bigram count."""
    if same:
        return 1.0
    if len(first) < 2 or len(second) < 2:
        return 0.0
    return 2.0 * shared(first, second) / (len(first) + len(second) - 2)


def create_content_similarity_scorer(ignore_case: bool = True, ignore_whitespace: bool = True) -> Scorer:
    """How alike the output text is to the input text, character by character (0–1).

    ``ignore_whitespace`` only changes the step result: the comparison drops whitespace anyway.
    """

    def preprocess(ctx: StepContext) -> dict[str, str]:
        processed_input = run_input_text(ctx.run.input)
        processed_output = run_output_text(ctx.run.output)
        if ignore_case:
            processed_input, processed_output = processed_input.lower(), processed_output.lower()
        if ignore_whitespace:
            processed_input = js_collapse_whitespace(processed_input)
            processed_output = js_collapse_whitespace(processed_output)
        return {"processedInput": processed_input, "processedOutput": processed_output}

    def generate_score(ctx: StepContext) -> float:
        texts = ctx.results["preprocess_step_result"]
        return compare_two_strings(texts["processedInput"], texts["processedOutput"])

    return (
        create_scorer(
            id=ID,
            name="Content Similarity Scorer",
            description="Character-bigram (Dice) similarity between the input and output messages.",
            version=VERSION,
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
    )
