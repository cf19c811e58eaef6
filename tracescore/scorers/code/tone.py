"""tone: sentiment consistency of the output, against a reference tone or across its sentences.

Mastra's ``createToneScorer`` scores AFINN "comparative" sentiment (sum of word scores / word
count, AFINN words scored −5..5) with the ``sentiment`` package. This port keeps both of its
modes and formulas but measures sentiment with VADER, which understands negation scope,
intensifiers, "but" clauses, capitals and emoji descriptions:

    comparative(text) = 5/4 · Σ VADER token valences / token count

VADER's lexicon is rated −4..4, so the 5/4 factor puts it on AFINN's −5..5 scale and the rest of
Mastra's arithmetic (``1 − |Δ|`` against a reference, ``1 − variance`` across sentences)
carries over unchanged. Only the output is read, as in Mastra.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from vaderSentiment.vaderSentiment import BOOSTER_DICT, SentimentIntensityAnalyzer, SentiText

from tracescore.scorers.base import Scorer, StepContext, create_scorer
from tracescore.scorers.utils import run_output_text

ID = "tone-scorer"
VERSION = "1"

AFINN_PER_VADER = 5 / 4
# Mastra's sentence rule: text after the last terminator is not a sentence.
_SENTENCE = re.compile(r"[^.!?]+[.!?]+")
# Pieces that cover the whole text, cut after each run of terminators.
_PIECE_END = re.compile(r"(?<=[.!?])(?=[^.!?])")


class _Vader(SentimentIntensityAnalyzer):
    """VADER made linear in the text's length; its stock version is quadratic twice over.

    - The negation and idiom checks lowercase the whole token list for every sentiment word
      (1.2 s on a 10k-character text, 30 s on an unpunctuated one), yet only read the tokens from
      ``i - 3`` to ``i + 2``: they get that window.
    - The "but" rule looks each valence up with ``list.index`` (6 s on a long unpunctuated text),
      which also hits the wrong token when two valences are equal. It is applied as intended:
      valences before the first "but" halved, after it × 1.5.
    """

    @staticmethod
    def _negation_check(valence: float, words_and_emoticons: list[str], start_i: int, i: int) -> float:
        low = max(0, i - 3)
        return SentimentIntensityAnalyzer._negation_check(valence, words_and_emoticons[low : i + 1], start_i, i - low)

    @staticmethod
    def _special_idioms_check(valence: float, words_and_emoticons: list[str], i: int) -> float:
        low = max(0, i - 3)
        window = words_and_emoticons[low : i + 3]
        return SentimentIntensityAnalyzer._special_idioms_check(valence, window, i - low)

    @staticmethod
    def _but_check(words_and_emoticons: list[str], sentiments: list[float]) -> list[float]:
        lowered = [w.lower() for w in words_and_emoticons]
        if "but" not in lowered:
            return sentiments
        but = lowered.index("but")
        return [v * 0.5 if i < but else v * 1.5 if i > but else v for i, v in enumerate(sentiments)]


@cache
def _vader() -> _Vader:
    return _Vader()


@cache
def _emoji_pattern() -> re.Pattern[str]:
    """VADER looks emoji up one character at a time, so only single-character keys can match."""
    singles = sorted(re.escape(key) for key in _vader().emojis if len(key) == 1)
    return re.compile(f"[{''.join(singles)}]")


def _describe_emoji(text: str) -> str:
    """VADER's own first step: each emoji becomes its description, after a space unless one
    precedes it (``polarity_scores`` does this character by character)."""
    if text.isascii():
        return text
    emojis = _vader().emojis

    def describe(match: re.Match[str]) -> str:
        start = match.start()
        return (" " if start and text[start - 1] != " " else "") + emojis[match.group()]

    return _emoji_pattern().sub(describe, text)


def _valence_sum(text: str) -> tuple[float, int]:
    """Σ VADER token valences (after VADER's rules) and the token count of one piece of text.

    ``polarity_scores`` only returns the squashed compound score; the per-token valences are
    what an AFINN-style comparative needs, so this runs VADER's steps up to that point.
    """
    analyzer = _vader()
    lexicon = analyzer.lexicon
    sentitext = SentiText(_describe_emoji(text).strip())
    words = sentitext.words_and_emoticons
    sentiments: list[float] = []
    for i, item in enumerate(words):
        lowered = item.lower()
        if (
            lowered not in lexicon  # VADER scores such a token 0 (saves the call)
            or lowered in BOOSTER_DICT
            or (lowered == "kind" and i < len(words) - 1 and words[i + 1].lower() == "of")
        ):
            sentiments.append(0.0)
            continue
        sentiments = analyzer.sentiment_valence(0.0, sentitext, item, i, sentiments)
    sentiments = analyzer._but_check(words, sentiments)  # noqa: SLF001 - VADER's "but" rule (above)
    return float(sum(sentiments)), len(words)


def comparative(text: str) -> float:
    """Sentiment per token on AFINN's scale; the text is read sentence by sentence (VADER's
    rules never look past a few tokens, and this keeps long texts linear)."""
    total, tokens = 0.0, 0
    for piece in _PIECE_END.split(text):
        piece_total, piece_tokens = _valence_sum(piece)
        total += piece_total
        tokens += piece_tokens
    return AFINN_PER_VADER * total / tokens if tokens else 0.0


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
        values = [comparative(sentence) for sentence in _SENTENCE.findall(output) or [output]]
        average = sum(values) / len(values)
        variance = sum((v - average) ** 2 for v in values) / len(values)
        return {"score": max(0.0, 1 - variance), "avgSentiment": average, "sentimentVariance": variance}

    return (
        create_scorer(
            id=ID,
            name="Tone Scorer",
            description=(
                "Sentiment consistency of the response (VADER): against a reference tone, or "
                "stability across its sentences."
            ),
            version=VERSION,
        )
        .preprocess(preprocess)
        .generate_score(lambda ctx: ctx.results["preprocess_step_result"]["score"])
    )
