"""tone: sentiment consistency of the output, against a reference tone or across its sentences.

Mastra's ``createToneScorer`` scores AFINN "comparative" sentiment (sum of word scores / word
count, AFINN words scored −5..5) with the ``sentiment`` package. This port keeps both of its
modes and formulas but measures sentiment with VADER, which understands negation scope,
intensifiers, "but" clauses, capitals and emoji descriptions:

    comparative(text) = 5/4 · Σ VADER token valences / token count

VADER's lexicon is rated −4..4, so the 5/4 factor puts it on AFINN's −5..5 scale and the rest of
Mastra's arithmetic (``1 − |Δ|`` against a reference, ``1 − variance`` across sentences)
carries over unchanged. Only the output is read, as in Mastra.

The sentiment is VADER's own token-by-token computation (``tone_vader.py``), computed for a whole
text at once by a compiled fast path (``tone_fast.py``) with the same floats; an install built
without a C compiler has no fast path and runs VADER's code itself (``tracescore.compiled``).
"""

from __future__ import annotations

from typing import Any

from tracescore.compiled import extensions_built
from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.steps import StepContext
from tracescore.scorers.utils import run_output_text

if extensions_built():
    from tracescore.scorers.code.tone_fast import comparative, sentence_comparatives
else:
    from tracescore.scorers.code.tone_vader import comparative, sentence_comparatives

ID = "tone-scorer"
VERSION = "2"  # 2: runs that failed before answering are not scorable


def create_tone_scorer(reference_tone: str | None = None) -> Scorer:
    """With ``reference_tone``: 1 − |sentiment(output) − sentiment(reference)| (floored at 0).
    Without it: 1 − variance of the output's per-sentence sentiment (floored at 0)."""

    reference = comparative(reference_tone) if reference_tone else 0.0  # fixed per scorer

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        output = run_output_text(ctx.run.output)
        if reference_tone:
            response = comparative(output)
            difference = abs(response - reference)
            return {
                "score": max(0.0, 1 - difference),
                "responseSentiment": response,
                "referenceSentiment": reference,
                "difference": difference,
            }
        values = sentence_comparatives(output)
        average = sum(values) / len(values)
        variance = sum([(v - average) ** 2 for v in values]) / len(values)
        return {
            "score": max(0.0, 1 - variance),
            "avgSentiment": average,
            "sentimentVariance": variance,
        }

    def generate_reason(ctx: StepContext) -> str:
        facts = ctx.results["preprocess_step_result"]
        if reference_tone:
            return (
                f"the answer's sentiment is {facts['responseSentiment']:+.2f} against the "
                f"reference's {facts['referenceSentiment']:+.2f}"
            )
        return (
            f"the answer's sentiment varies by {facts['sentimentVariance']:.2f} across its "
            f"sentences (average {facts['avgSentiment']:+.2f})"
        )

    return (
        create_scorer(
            id=ID,
            name="Tone Scorer",
            description=(
                "Sentiment consistency of the response (VADER): against a reference tone, or "
                "stability across its sentences."
            ),
            version=VERSION,
            needs_answer=True,
        )
        .preprocess(preprocess)
        .generate_score(lambda ctx: ctx.results["preprocess_step_result"]["score"])
        .generate_reason(generate_reason)
    )
