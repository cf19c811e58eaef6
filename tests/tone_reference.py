"""The tone scorer's sentiment as VADER itself computes it, token by token: the reference the fast
path in ``tracescore.scorers.code.tone`` must equal.

This is the package's previous implementation, kept here unchanged: VADER's ``SentiText`` words,
its ``sentiment_valence`` for every lexicon word of each piece, then the "but" rule. Only two
things differ from stock VADER, as before: the negation and idiom checks get the window they
read (stock VADER lowercases the whole piece for each lexicon word), and the "but" rule scales
by position (stock VADER looks each valence up with ``list.index``).
"""

from __future__ import annotations

import re

from vaderSentiment.vaderSentiment import BOOSTER_DICT, SentimentIntensityAnalyzer, SentiText

from tracescore.scorers.code.tone import AFINN_PER_VADER

SENTENCE = re.compile(r"[^.!?]+[.!?]+")  # Mastra's sentences
PIECE_END = re.compile(r"(?<=[.!?])(?=[^.!?])")


class _WindowedVader(SentimentIntensityAnalyzer):
    @staticmethod
    def _negation_check(valence: float, words_and_emoticons: list[str], start_i: int, i: int) -> float:
        low = max(0, i - 3)
        return SentimentIntensityAnalyzer._negation_check(valence, words_and_emoticons[low : i + 1], start_i, i - low)

    @staticmethod
    def _special_idioms_check(valence: float, words_and_emoticons: list[str], i: int) -> float:
        low = max(0, i - 3)
        return SentimentIntensityAnalyzer._special_idioms_check(valence, words_and_emoticons[low : i + 3], i - low)

    @staticmethod
    def _but_check(words_and_emoticons: list[str], sentiments: list[float]) -> list[float]:
        lowered = [w.lower() for w in words_and_emoticons]
        if "but" not in lowered:
            return sentiments
        but = lowered.index("but")
        return [v * 0.5 if i < but else v * 1.5 if i > but else v for i, v in enumerate(sentiments)]


VADER = _WindowedVader()


def describe_emoji(text: str) -> str:
    """``polarity_scores``'s first step, as vaderSentiment writes it."""
    out, previous_space = "", True
    for ch in text:
        if ch in VADER.emojis:
            out += ("" if previous_space else " ") + VADER.emojis[ch]
            previous_space = False
        else:
            out += ch
            previous_space = ch == " "
    return out


def valence_sum(piece: str) -> tuple[float, int]:
    """Σ VADER token valences and the token count of one piece."""
    sentitext = SentiText(describe_emoji(piece).strip())
    words = sentitext.words_and_emoticons
    sentiments: list[float] = []
    for i, item in enumerate(words):
        lowered = item.lower()
        if (
            lowered not in VADER.lexicon
            or lowered in BOOSTER_DICT
            or (lowered == "kind" and i < len(words) - 1 and words[i + 1].lower() == "of")
        ):
            sentiments.append(0.0)
            continue
        sentiments = VADER.sentiment_valence(0.0, sentitext, item, i, sentiments)
    sentiments = VADER._but_check(words, sentiments)
    return float(sum(sentiments)), len(words)


def comparative(text: str) -> float:
    total, tokens = 0.0, 0
    for piece in PIECE_END.split(text):
        piece_total, piece_tokens = valence_sum(piece)
        total += piece_total
        tokens += piece_tokens
    return AFINN_PER_VADER * total / tokens if tokens else 0.0


def sentence_comparatives(text: str) -> list[float]:
    """Mastra's stability mode: each sentence's comparative, or the whole text's without any."""
    return [comparative(sentence) for sentence in SENTENCE.findall(text) or [text]]
