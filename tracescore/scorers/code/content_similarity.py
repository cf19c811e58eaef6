"""content-similarity: Sørensen–Dice similarity of character bigrams, input vs output.

A port of Mastra's ``createContentSimilarityScorer`` (``string-similarity``'s
``compareTwoStrings``), exact to the last bit: bigrams are pairs of UTF-16 code units and
whitespace is ECMAScript's. The comparison itself is compiled (``_dice.pyx``), or, where the
package was built without a C compiler, its plain definition (``dice.py``): the same numbers.
"""

from __future__ import annotations

from tracescore.compiled import extensions_built
from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.code.jstext import js_collapse_whitespace
from tracescore.scorers.steps import StepContext
from tracescore.scorers.utils import run_input_text, run_output_text

if extensions_built():
    from tracescore.scorers.code._dice import compare_two_strings
else:
    from tracescore.scorers.code.dice import compare_two_strings

__all__ = ["compare_two_strings", "create_content_similarity_scorer"]

ID = "content-similarity-scorer"
VERSION = "2"  # 2: runs that failed before answering are not scorable


def create_content_similarity_scorer(
    ignore_case: bool = True, ignore_whitespace: bool = True
) -> Scorer:
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
            needs_answer=True,
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(
            lambda ctx: (
                f"the answer shares {ctx.score:.0%} of its character pairs with the "
                "question (a likeness of the two texts, not of the answer's quality)"
            )
        )
    )
