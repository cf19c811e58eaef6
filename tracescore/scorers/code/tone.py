"""tone: sentiment consistency of the output, against a reference tone or across its sentences.

Mastra's ``createToneScorer`` scores AFINN "comparative" sentiment (sum of word scores / word
count, AFINN words scored −5..5) with the ``sentiment`` package. This port keeps both of its
modes and formulas but measures sentiment with VADER, which understands negation scope,
intensifiers, "but" clauses, capitals and emoji descriptions:

    comparative(text) = 5/4 · Σ VADER token valences / token count

VADER's lexicon is rated −4..4, so the 5/4 factor puts it on AFINN's −5..5 scale and the rest of
Mastra's arithmetic (``1 − |Δ|`` against a reference, ``1 − variance`` across sentences)
carries over unchanged. Only the output is read, as in Mastra.

The text is read piece by piece: a piece ends after each run of ``.``/``!``/``?`` (VADER's rules
never look past a few tokens, and this keeps long texts linear). A piece's tokens and valences
are VADER's own (``SentiText`` words, ``sentiment_valence`` per lexicon word, the "but" rule), but
computed for the whole text at once: VADER's per-token Python loop costs 7–20 µs a word, several
times Mastra's whole AFINN scorer on long texts. Nearly every lexicon word's valence is its
lexicon value, because VADER only changes it when a rule word (a negation, booster, "least",
"this", "no", "kind", an idiom) stands at most three tokens before or two after it, or when it
is capitalised among lowercase words; only those words go through VADER's rules (``_valence``).
``tests/test_tone_fast_path.py`` checks the result against VADER's own token-by-token code.
"""

from __future__ import annotations

import re
import string
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, chain, compress, count, repeat
from operator import sub
from typing import Any

from vaderSentiment.vaderSentiment import (
    BOOSTER_DICT,
    C_INCR,
    N_SCALAR,
    NEGATE,
    SPECIAL_CASES,
    SentimentIntensityAnalyzer,
    allcap_differential,
)

from tracescore.scorers.base import Scorer, StepContext, create_scorer
from tracescore.scorers.utils import run_output_text

ID = "tone-scorer"
VERSION = "1"

AFINN_PER_VADER = 5 / 4
TERMINATORS = (".", "!", "?")
# Pieces that cover the whole text, cut after each run of terminators.
_PIECE_END = re.compile(r"(?<=[.!?])(?=[^.!?])")
# A piece end inside a whitespace-delimited token ("e.g.", "3.5", "...so"): a space there gives
# the pieces' tokens.
_CUT_INSIDE = re.compile(r"([.!?])(?=[^.!?\s])")
_NEGATIONS = frozenset(NEGATE)
# Words of VADER's multi-word idioms and boosters too common to flag wherever they occur: each
# phrase has a rarer word, which is flagged instead ("to die for" -> "die").
_COMMON_PHRASE_WORDS = frozenset({"the", "of", "to", "for", "just"})


@cache
def _vader() -> SentimentIntensityAnalyzer:
    return SentimentIntensityAnalyzer()


@dataclass(frozen=True)
class _Rules:
    """What the fast path reads from VADER's lexicon and constants, derived once."""

    lexicon: dict[str, float]
    scored: dict[str, float]  # the lexicon words VADER scores: boosters score 0
    # Words that can change the valence of a lexicon word within its window, with how many
    # tokens before them that word may be (it may always be the word itself or the 3 after):
    # negations, boosters, "no", "least", "this" ("never so/this" emphasis), "kind" (of): 0; one
    # word of each idiom and multi-word booster: 2.
    reach: dict[str, int]
    relevant: frozenset[str]  # the words above and "but"
    phrase_marks: frozenset[str]  # the one word of each idiom and multi-word booster above
    emoji: dict[str, str]  # single-character emoji -> " " + its description
    # Emoji whose description holds a terminator: a token of it may end in one and not end a piece.
    emoji_with_terminators: frozenset[str]
    emoji_latin1: str  # the two emoji below U+2000 (©, ®) ...
    emoji_range: re.Pattern[str]  # ... and one range holding all the others, quick to scan for


@cache
def _rules() -> _Rules:
    vader = _vader()
    phrases = [key.split() for key in (*SPECIAL_CASES, *BOOSTER_DICT) if " " in key]
    phrase_marks = frozenset(next(word for word in words if word not in _COMMON_PHRASE_WORDS) for words in phrases)
    reach = dict.fromkeys((*NEGATE, *BOOSTER_DICT, "no", "least", "this", "kind"), 0)
    reach.update(dict.fromkeys(phrase_marks, 2))
    scored = {word: value for word, value in vader.lexicon.items() if word not in BOOSTER_DICT}
    emoji = {key: " " + description for key, description in vader.emojis.items() if len(key) == 1}
    high = [key for key in emoji if key >= "\u2000"]
    return _Rules(
        lexicon=vader.lexicon,
        scored=scored,
        reach=reach,
        relevant=frozenset({*scored, *reach, "but"}),
        phrase_marks=phrase_marks,
        emoji=emoji,
        emoji_with_terminators=frozenset(
            key for key, description in emoji.items() if any(end in description for end in TERMINATORS)
        ),
        emoji_latin1="".join(key for key in emoji if key < "\u2000"),
        emoji_range=re.compile(f"[{min(high)}-{max(high)}]"),
    )


@cache
def _emoji_pattern() -> re.Pattern[str]:
    """VADER looks emoji up one character at a time, so only single-character keys can match.

    Runs of consecutive code points become ranges (143 instead of 1,212 characters): the regular
    expression tries them one by one, for each character of the text.
    """
    runs: list[list[int]] = []
    for code in sorted(ord(key) for key in _vader().emojis if len(key) == 1):
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in runs) + "]")


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


def _tokens(text: str) -> tuple[list[str], set[str], list[int] | None]:
    """VADER's tokens of every piece, in order; the distinct ones; where each group of them stops.

    Stops (exclusive) are only returned for texts holding an emoji whose description has a
    terminator in it; in all others a group stops after each token ending in one (see
    ``_group_scores``). Emoji descriptions are put into the whole text at once, which gives the
    tokens of describing each piece as VADER does: a description is glued to what follows it,
    and the space VADER may put before it only separates tokens. Tokens a piece ends inside
    ("e.g.", "3.5") are then cut.
    """
    if not text.isascii():
        rules = _rules()
        found = {*rules.emoji_range.findall(text), *filter(text.__contains__, rules.emoji_latin1)}
        present = rules.emoji.keys() & found
        if present & rules.emoji_with_terminators:
            pieces = [_describe_emoji(piece).split() for piece in _PIECE_END.split(text)]
            stops = list(accumulate(map(len, pieces)))
            if text.endswith(TERMINATORS):  # the last piece is a group too: the rest after it is empty
                stops.append(stops[-1])
            tokens = list(chain.from_iterable(pieces))
            return tokens, set(tokens), stops
        for emoji in present:
            text = text.replace(emoji, rules.emoji[emoji])
    tokens = text.split()
    distinct = set(tokens)
    if not _CUT_INSIDE.search(" ".join(distinct)):  # a fraction of the text's length to scan
        return tokens, distinct, None
    parts = {token: _CUT_INSIDE.sub(r"\1 ", token).split() for token in filter(_CUT_INSIDE.search, distinct)}
    cut: list[str] = []
    done = 0
    for at in compress(count(), map(parts.__contains__, tokens)):
        cut += tokens[done:at]
        cut += parts[tokens[at]]
        done = at + 1
    cut += tokens[done:]
    return cut, (distinct - parts.keys()).union(*parts.values()), None


def _valence(rules: _Rules, tokens: list[str], words: dict[str, str], i: int, start: int, stop: int) -> float:
    """VADER's valence of the lexicon word ``tokens[i]`` in the piece ``tokens[start:stop]``.

    ``SentimentIntensityAnalyzer.sentiment_valence`` (vaderSentiment 3.3.2) rule for rule, on
    the lowered words (``words``) of its window ``i - 3 .. i + 2``, which is all it reads besides
    the piece's capitals. VADER's own code costs 40–60 µs a call (it lowercases the window three
    times and scans its negation list); this gives the same floats, from the same operations.
    """
    lexicon = rules.lexicon
    low = max(start, i - 3)
    window = tokens[low : min(stop, i + 3)]
    lowered = list(map(words.__getitem__, window))
    at = i - low
    item = lowered[at]
    after = lowered[at + 1] if at + 1 < len(lowered) else None
    if item == "kind" and after == "of":
        return 0.0  # a dampener: VADER's loop skips it before scoring
    # Stripping punctuation keeps isupper, so the raw tokens tell VADER's words' capitals.
    cap_diff = any(map(str.isupper, window)) and allcap_differential(tokens[start:stop])
    valence = lexicon[item]
    if "no" in lowered:
        if item == "no" and after in lexicon:  # "no" negates the next word instead
            valence = 0.0
        if "no" in lowered[max(0, at - 2) : at] or (
            at > 2 and lowered[at - 3] == "no" and lowered[at - 1] in ("or", "nor")
        ):
            valence = lexicon[item] * N_SCALAR
    if cap_diff and window[at].isupper():
        valence = valence + C_INCR if valence > 0 else valence - C_INCR
    for start_i, damping in enumerate((1.0, 0.95, 0.9)):  # the words 1, 2, 3 before it
        before = at - start_i - 1
        if before < 0:
            break
        word = lowered[before]
        if word in lexicon:
            continue
        scalar = 0.0  # scalar_inc_dec, damped with the distance (× 1.0 is exact)
        if word in BOOSTER_DICT:
            scalar = BOOSTER_DICT[word]
            if valence < 0:
                scalar *= -1
            if cap_diff and window[before].isupper():
                scalar = scalar + C_INCR if valence > 0 else scalar - C_INCR
            scalar = scalar * damping
        valence = _negation_check(valence + scalar, lowered, start_i, at)
        if start_i == 2 and not rules.phrase_marks.isdisjoint(lowered):  # else no idiom can match
            valence = SentimentIntensityAnalyzer._special_idioms_check(valence, lowered, at)  # noqa: SLF001
    if at > 0 and lowered[at - 1] == "least" and "least" not in lexicon:  # _least_check
        if not (at > 1 and lowered[at - 2] in ("at", "very")):
            valence = valence * N_SCALAR
    return valence


def _negated(word: str) -> bool:
    """VADER's ``negated([word])`` for one lowered word."""
    return word in _NEGATIONS or "n't" in word


def _negation_check(valence: float, lowered: list[str], start_i: int, i: int) -> float:
    """``SentimentIntensityAnalyzer._negation_check`` on already lowered words."""
    if start_i == 0:
        if _negated(lowered[i - 1]):
            valence = valence * N_SCALAR
    elif start_i == 1:
        if lowered[i - 2] == "never" and lowered[i - 1] in ("so", "this"):
            valence = valence * 1.25
        elif lowered[i - 2] == "without" and lowered[i - 1] == "doubt":
            pass
        elif _negated(lowered[i - 2]):
            valence = valence * N_SCALAR
    elif (lowered[i - 3] == "never" and lowered[i - 2] in ("so", "this")) or lowered[i - 1] in ("so", "this"):
        valence = valence * 1.25
    elif lowered[i - 3] == "without" and "doubt" in (lowered[i - 2], lowered[i - 1]):
        pass
    elif _negated(lowered[i - 3]):
        valence = valence * N_SCALAR
    return valence


def _roles(rules: _Rules, distinct: set[str]) -> tuple[dict[str, str], dict[str, float], dict[str, int], set[str]]:
    """For the distinct tokens: VADER's lowered word of each; the valence of lexicon words; the
    reach of rule words (see ``_Rules.reach``); the tokens that are "but"."""
    punctuation = string.punctuation  # stripped, unless that leaves two characters or fewer
    words = {token: (s if len(s := token.strip(punctuation)) > 2 else token).lower() for token in distinct}
    scored, reach_of = rules.scored, rules.reach
    values: dict[str, float] = {}
    reach: dict[str, int] = {}
    buts: set[str] = set()
    for token in compress(words, map(rules.relevant.__contains__, words.values())):
        word = words[token]
        if word in scored:
            values[token] = scored[word]
        if word in reach_of:
            reach[token] = reach_of[word]
        elif word == "but":
            buts.add(token)
    for token in chain((t for t, w in words.items() if "n't" in w), filter(str.isupper, values)):
        reach.setdefault(token, 0)  # a negation ("n't"), a capitalised lexicon word
    return words, values, reach, buts


def _group_scores(text: str) -> tuple[list[float], list[int]]:
    """Σ VADER valences and token count of each group of the text's tokens: one group per run of
    terminators (the piece it ends), then the tokens after the last run (possibly none).

    Only "marked" tokens are visited: lexicon words, rule words and group ends. A lexicon word's
    valence is its lexicon value unless a rule word stands in its window; those go through
    ``_valence``. The "but" rule is applied as intended: valences before a piece's first "but"
    halved, after it × 1.5 (VADER looks each valence up with ``list.index``, which is quadratic
    and hits the wrong token when two valences are equal).
    """
    tokens, distinct, stops = _tokens(text)
    rules = _rules()
    words, values, reach, buts = _roles(rules, distinct)
    marked = values.keys() | reach.keys() | buts
    if stops is None:  # a group ends with each token ending in a terminator
        enders = {token for token in words if token[-1] in ".!?"}
        marks = list(compress(count(), map((marked | enders).__contains__, tokens)))
        marked_tokens = list(map(tokens.__getitem__, marks))
        bounds = list(compress(count(1), map(enders.__contains__, marked_tokens)))  # group ends among marks
        stops = [marks[at - 1] + 1 for at in bounds]
        stops.append(len(tokens))
        bounds.append(len(marks))
    else:
        marks = list(compress(count(), map(marked.__contains__, tokens)))
        marked_tokens = list(map(tokens.__getitem__, marks))
        bounds = list(map(bisect_left, repeat(marks), stops))
    valences = list(map(values.get, marked_tokens, repeat(0.0)))
    # The lexicon words a rule word may act on: from its reach before it to 3 tokens after it.
    flagged = list(compress(marks, map(reach.__contains__, marked_tokens)))
    starts = map(sub, flagged, map(reach.__getitem__, map(tokens.__getitem__, flagged)))
    near = set(chain.from_iterable(map(range, starts, map((4).__add__, flagged))))
    for i in near.intersection(compress(marks, map(values.__contains__, marked_tokens))):
        group = bisect_right(stops, i)
        start = stops[group - 1] if group else 0
        valences[bisect_left(marks, i)] = _valence(rules, tokens, words, i, start, stops[group])
    first_buts: dict[int, int] = {}
    for position in compress(marks, map(buts.__contains__, marked_tokens)):
        first_buts.setdefault(bisect_right(stops, position), position)
    for group, but in first_buts.items():
        for at in range(bounds[group - 1] if group else 0, bounds[group]):
            if marks[at] != but:
                valences[at] *= 0.5 if marks[at] < but else 1.5
    totals = list(map(sum, map(valences.__getitem__, map(slice, [0, *bounds[:-1]], bounds))))
    return totals, list(map(sub, stops, [0, *stops[:-1]]))


def _comparative(totals: list[float], counts: list[int]) -> float:
    total = 0.0
    for group_total in totals:  # group by group, as VADER is run piece by piece
        total += group_total
    tokens = sum(counts)
    return AFINN_PER_VADER * total / tokens if tokens else 0.0


def comparative(text: str) -> float:
    """Sentiment per token on AFINN's scale."""
    return _comparative(*_group_scores(text))


def sentence_comparatives(text: str) -> list[float]:
    """``comparative`` of each sentence by Mastra's rule (``/[^.!?]+[.!?]+/g``: text after the last
    terminator is not a sentence), or of the whole text when it has none.

    Those sentences are exactly the groups that end in terminators, less a leading group of
    terminators alone.
    """
    totals, counts = _group_scores(text)
    first = 1 if text.startswith(TERMINATORS) else 0
    values = [AFINN_PER_VADER * total / tokens for total, tokens in zip(totals[first:-1], counts[first:-1])]
    return values or [_comparative(totals, counts)]


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
