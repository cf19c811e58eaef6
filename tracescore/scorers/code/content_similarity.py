"""content-similarity: Sørensen–Dice similarity of character bigrams, input vs output.

A port of Mastra's ``createContentSimilarityScorer`` (``string-similarity``'s
``compareTwoStrings``), exact to the last bit: bigrams are pairs of UTF-16 code units and
whitespace is ECMAScript's.
"""

from __future__ import annotations

import operator
from collections import Counter

import numpy as np

from tracescore.scorers.base import Scorer, StepContext, create_scorer
from tracescore.scorers.code.jstext import js_collapse_whitespace, js_remove_whitespace, utf16_units
from tracescore.scorers.utils import run_input_text, run_output_text

ID = "content-similarity-scorer"
VERSION = "1"


# Below this many code units (both strings) dicts count bigrams fastest; above, sorted numpy
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
    values_first, counts_first = np.unique(_bigram_codes(first), return_counts=True)
    values_second, counts_second = np.unique(_bigram_codes(second), return_counts=True)
    _, at_first, at_second = np.intersect1d(values_first, values_second, assume_unique=True, return_indices=True)
    return int(np.minimum(counts_first[at_first], counts_second[at_second]).sum())


def _bigram_codes(units: str) -> np.ndarray:
    """Each pair of adjacent code units as one 32-bit number."""
    codes = np.frombuffer(units.encode("utf-16-le", "surrogatepass"), dtype="<u2").astype(np.uint32)
    return (codes[:-1] << 16) | codes[1:]


def compare_two_strings(first: str, second: str) -> float:
    """``string-similarity``'s ``compareTwoStrings``: Dice coefficient of character bigrams,
    whitespace ignored, lengths in UTF-16 code units."""
    first, second = js_remove_whitespace(first), js_remove_whitespace(second)
    if first == second:
        return 1.0
    first, second = utf16_units(first), utf16_units(second)
    if len(first) < 2 or len(second) < 2:
        return 0.0
    return 2.0 * _shared_bigrams(first, second) / (len(first) + len(second) - 2)


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
