"""The tone scorer's sentiment as VADER itself computes it, token by token.

This is the package's first implementation, kept unchanged because two things rest on it: it
is the reference the fast path (``tone_fast.py``) must equal bit for bit
(``tests/scorers/test_tone_fast_path.py``), and it is what the tone scorer runs where the package was
built without a C compiler (``tracescore.compiled``), since the fast path's loops are compiled.
VADER's per-token Python costs 7–20 µs a word, several times the fast path on long texts.

VADER's ``SentiText`` words, its ``sentiment_valence`` for every lexicon word of each piece,
then the "but" rule. Only two things differ from stock VADER: the negation and idiom checks get
the window they read (stock VADER lowercases the whole piece for each lexicon word), and the
"but" rule scales by position (stock VADER looks each valence up with ``list.index``, which hits
the wrong token when two valences are equal).
"""

from __future__ import annotations

import re
from functools import cache

from vaderSentiment.vaderSentiment import BOOSTER_DICT, SentimentIntensityAnalyzer, SentiText

# VADER's lexicon is rated −4..4: this puts a comparative on AFINN's −5..5, Mastra's scale.
AFINN_PER_VADER = 5 / 4
SENTENCE = re.compile(r"[^.!?]+[.!?]+")  # Mastra's sentences
# Pieces that cover the whole text, cut after each run of terminators: VADER's rules never look
# past a few tokens, and reading piece by piece keeps long texts linear.
PIECE_END = re.compile(r"(?<=[.!?])(?=[^.!?])")


class _WindowedVader(SentimentIntensityAnalyzer):
    @staticmethod
    def _negation_check(
        valence: float, words_and_emoticons: list[str], start_i: int, i: int
    ) -> float:
        low = max(0, i - 3)
        return SentimentIntensityAnalyzer._negation_check(
            valence, words_and_emoticons[low : i + 1], start_i, i - low
        )

    @staticmethod
    def _special_idioms_check(valence: float, words_and_emoticons: list[str], i: int) -> float:
        low = max(0, i - 3)
        return SentimentIntensityAnalyzer._special_idioms_check(
            valence, words_and_emoticons[low : i + 3], i - low
        )

    @staticmethod
    def _but_check(words_and_emoticons: list[str], sentiments: list[float]) -> list[float]:
        lowered = [w.lower() for w in words_and_emoticons]
        if "but" not in lowered:
            return sentiments
        but = lowered.index("but")
        return [v * 0.5 if i < but else v * 1.5 if i > but else v for i, v in enumerate(sentiments)]


@cache
def vader() -> SentimentIntensityAnalyzer:
    """Loaded on first use: importing this module for its constants reads no lexicon."""
    return _WindowedVader()


def describe_emoji(text: str) -> str:
    """``polarity_scores``'s first step, as vaderSentiment writes it."""
    emojis = vader().emojis
    out, previous_space = "", True
    for ch in text:
        if ch in emojis:
            out += ("" if previous_space else " ") + emojis[ch]
            previous_space = False
        else:
            out += ch
            previous_space = ch == " "
    return out


def valence_sum(piece: str) -> tuple[float, int]:
    """Σ VADER token valences and the token count of one piece."""
    analyzer = vader()
    sentitext = SentiText(describe_emoji(piece).strip())
    words = sentitext.words_and_emoticons
    sentiments: list[float] = []
    for i, item in enumerate(words):
        lowered = item.lower()
        if (
            lowered not in analyzer.lexicon
            or lowered in BOOSTER_DICT
            or (lowered == "kind" and i < len(words) - 1 and words[i + 1].lower() == "of")
        ):
            sentiments.append(0.0)
            continue
        sentiments = analyzer.sentiment_valence(0.0, sentitext, item, i, sentiments)
    sentiments = analyzer._but_check(words, sentiments)
    return float(sum(sentiments)), len(words)


def comparative(text: str) -> float:
    """Sentiment per token on AFINN's scale."""
    total, tokens = 0.0, 0
    for piece in PIECE_END.split(text):
        piece_total, piece_tokens = valence_sum(piece)
        total += piece_total
        tokens += piece_tokens
    return AFINN_PER_VADER * total / tokens if tokens else 0.0


def sentence_comparatives(text: str) -> list[float]:
    """Mastra's stability mode: each sentence's comparative, or the whole text's without any."""
    return [comparative(sentence) for sentence in SENTENCE.findall(text) or [text]]
