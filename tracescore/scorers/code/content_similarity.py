"""content-similarity: Sørensen–Dice similarity of character bigrams, input vs output.

A port of Mastra's ``createContentSimilarityScorer`` (``string-similarity``'s
``compareTwoStrings``), exact to the last bit: bigrams are pairs of UTF-16 code units and
whitespace is ECMAScript's.
"""

from __future__ import annotations

import numpy as np

from tracescore.scorers.base import Scorer, StepContext, create_scorer
from tracescore.scorers.code.jstext import js_collapse_whitespace, js_remove_whitespace
from tracescore.scorers.utils import run_input_text, run_output_text

ID = "content-similarity-scorer"
VERSION = "1"


def _bigrams(text: str) -> np.ndarray:
    """Each pair of adjacent UTF-16 code units as one 32-bit number."""
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype="<u2").astype(np.uint32)
    return (units[:-1] << 16) | units[1:]


def compare_two_strings(first: str, second: str) -> float:
    """``string-similarity``'s Dice coefficient: whitespace is ignored, bigrams are a multiset.

    Its greedy count (each bigram of the second string takes one left of the first) is the size
    of the multiset intersection, computed here with sorted arrays instead of a JS ``Map``.
    """
    first, second = js_remove_whitespace(first), js_remove_whitespace(second)
    if first == second:
        return 1.0
    bigrams_first, bigrams_second = _bigrams(first), _bigrams(second)
    if not len(bigrams_first) or not len(bigrams_second):
        return 0.0  # a string of fewer than two code units
    values_first, counts_first = np.unique(bigrams_first, return_counts=True)
    values_second, counts_second = np.unique(bigrams_second, return_counts=True)
    _, in_first, in_second = np.intersect1d(values_first, values_second, assume_unique=True, return_indices=True)
    shared = int(np.minimum(counts_first[in_first], counts_second[in_second]).sum())
    # JS: 2·shared / (len(a) + len(b) − 2), and a string of n units has n − 1 bigrams.
    return 2.0 * shared / (len(bigrams_first) + len(bigrams_second))


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
