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
is capitalised among lowercase words; only those words go through VADER's rules (``_valence``),
and those near plain negations only ("not", "don't") through its negation check alone.
``tests/test_tone_fast_path.py`` checks the result against VADER's own token-by-token code, bit
for bit.
"""

from __future__ import annotations

import re
import string
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, chain, compress
from typing import Any, NamedTuple

import numpy as np
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
    # Negations that act on a lexicon word only by VADER's ``negated`` (× N_SCALAR): no lexicon
    # word, booster or idiom word, and not "never" or "without", which combine with the next word.
    plain_negations: frozenset[str]
    emoji: dict[str, str]  # single-character emoji -> " " + its description
    # Emoji whose description holds a terminator: a token of it may end in one and not end a piece.
    emoji_with_terminators: frozenset[str]
    emoji_latin1: str  # the two emoji below U+2000 (©, ®) ...
    emoji_from: int  # ... and the code point from which all the others are


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
        plain_negations=frozenset(
            word for word in NEGATE
            if word not in ("never", "without") and word not in vader.lexicon and word not in BOOSTER_DICT
            and word not in phrase_marks
        ),
        emoji=emoji,
        emoji_with_terminators=frozenset(
            key for key, description in emoji.items() if any(end in description for end in TERMINATORS)
        ),
        emoji_latin1="".join(key for key in emoji if key < "\u2000"),
        emoji_from=ord(min(high)),
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


def _code_points(text: str) -> np.ndarray:
    """The text's code points as a numpy array, to scan it with array operations."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def _characters_from(points: np.ndarray, start: int) -> set[str]:
    """The distinct characters from code point ``start`` on (comparing the array takes a quarter to
    half the time of a regular expression's character range)."""
    high = points[points >= start]
    return set(map(chr, np.unique(high).tolist())) if high.size else set()


def _cut_inside(points: np.ndarray) -> bool:
    """Whether a piece ends inside a token: a terminator followed by a character that is neither a
    terminator nor whitespace (``str.isspace``, which ``str.split`` splits at)."""
    ends = (points == 46) | (points == 33) | (points == 63)  # . ! ?
    followers = map(chr, np.unique(points[1:][ends[:-1]]).tolist())
    return any(not (follower in ".!?" or follower.isspace()) for follower in followers)


def _tokens(text: str) -> tuple[list[str], set[str], list[int] | None]:
    """VADER's tokens of every piece, in order; the distinct ones; where each group of them stops.

    Stops (exclusive) are only returned for texts holding an emoji whose description has a
    terminator in it; in all others a group stops after each token ending in one (see
    ``_group_scores``). Emoji descriptions are put into the whole text at once, which gives the
    tokens of describing each piece as VADER does: a description is glued to what follows it,
    and the space VADER may put before it only separates tokens. Tokens a piece ends inside
    ("e.g.", "3.5") are then cut, in the whole text: a space after each terminator followed by
    neither a terminator nor whitespace (regex ``\\s`` and ``str.split`` agree on whitespace).
    """
    points = _code_points(text)
    if not text.isascii():
        rules = _rules()
        present = rules.emoji.keys() & _characters_from(points, rules.emoji_from)
        present.update(filter(text.__contains__, rules.emoji_latin1))
        if present & rules.emoji_with_terminators:
            pieces = [_describe_emoji(piece).split() for piece in _PIECE_END.split(text)]
            stops = list(accumulate(map(len, pieces)))
            if text.endswith(TERMINATORS):  # the last piece is a group too: the rest after it is empty
                stops.append(stops[-1])
            tokens = list(chain.from_iterable(pieces))
            return tokens, set(tokens), stops
        if present:
            for emoji in present:
                text = text.replace(emoji, rules.emoji[emoji])
            points = _code_points(text)
    if _cut_inside(points):
        text = _CUT_INSIDE.sub(r"\1 ", text)
    tokens = text.split()
    return tokens, set(tokens), None


def _valence(rules: _Rules, tokens: list[str], words: dict[str, str], i: int, start: int, stop: int) -> float:
    """VADER's valence of the lexicon word ``tokens[i]`` in the piece ``tokens[start:stop]``.

    ``SentimentIntensityAnalyzer.sentiment_valence`` (vaderSentiment 3.3.2) rule for rule, on
    the lowered words (``words``) of its window ``i - 3 .. i + 2``, which is all it reads besides
    the piece's capitals. VADER's own code costs 40–60 µs a call (it lowercases the window three
    times and scans its negation list); this gives the same floats, from the same operations.
    """
    lexicon = rules.lexicon
    low = i - 3 if i - 3 > start else start
    lowered = [words[token] for token in tokens[low : i + 3 if i + 3 < stop else stop]]
    at = i - low
    item = lowered[at]
    after = lowered[at + 1] if at + 1 < len(lowered) else None
    if item == "kind" and after == "of":
        return 0.0  # a dampener: VADER's loop skips it before scoring
    valence = lexicon[item]
    if "no" in lowered:
        if item == "no" and after in lexicon:  # "no" negates the next word instead
            valence = 0.0
        if "no" in lowered[max(0, at - 2) : at] or (
            at > 2 and lowered[at - 3] == "no" and lowered[at - 1] in ("or", "nor")
        ):
            valence = lexicon[item] * N_SCALAR
    # VADER's is_cap_diff only counts for a capitalised word: worked out when one is met.
    # Stripping punctuation keeps isupper, so the raw tokens tell VADER's words' capitals.
    cap_diff = None
    if tokens[i].isupper():
        cap_diff = allcap_differential(tokens[start:stop])
        if cap_diff:
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
            if tokens[low + before].isupper():
                if cap_diff is None:
                    cap_diff = allcap_differential(tokens[start:stop])
                if cap_diff:
                    scalar = scalar + C_INCR if valence > 0 else scalar - C_INCR
            scalar = scalar * damping
        valence = _negation_check(valence + scalar, lowered, start_i, at)
        if start_i == 2 and not rules.phrase_marks.isdisjoint(lowered):  # else no idiom can match
            valence = SentimentIntensityAnalyzer._special_idioms_check(valence, lowered, at)  # noqa: SLF001
    if at > 0 and lowered[at - 1] == "least" and "least" not in lexicon:  # _least_check
        if not (at > 1 and lowered[at - 2] in ("at", "very")):
            valence = valence * N_SCALAR
    return valence


def _negated_valence(tokens: list[str], plain: set[str], i: int, start: int, valence: float) -> float:
    """``_valence`` of a lexicon word no rule word but plain negations (``plain``) acts on.

    Of VADER's rules only the negation check of the words 1, 2 and 3 before it (within its
    piece) can then apply: ``× N_SCALAR`` for each that is a negation (none is a lexicon word,
    which VADER would skip). The ``+ scalar`` before each check adds 0.0 (none is a booster),
    which leaves a (nonzero) valence as it is.
    """
    for before in range(i - 1, max(start, i - 3) - 1, -1):
        if tokens[before] in plain:
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


class _Roles(NamedTuple):
    """What the distinct tokens of a text are to VADER."""

    words: dict[str, str]  # each token's lowered word
    values: dict[str, float]  # lexicon words: their valence
    reach: dict[str, int]  # rule words: how many tokens before them they act (``_Rules.reach``)
    buts: set[str]  # "but"
    plain: set[str]  # the rule words that are plain negations (``_Rules.plain_negations``)


def _roles(rules: _Rules, distinct: set[str]) -> _Roles:
    """The roles of the text's distinct tokens."""
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
    plain = {token for token in reach if words[token] in rules.plain_negations}
    for token in (t for t, w in words.items() if "n't" in w):
        if token not in reach and token not in values:  # a negation by "n't" alone
            plain.add(token)
        reach.setdefault(token, 0)
    for token in filter(str.isupper, values):
        reach.setdefault(token, 0)  # a capitalised lexicon word
    return _Roles(words, values, reach, buts, plain)


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
    words, values, reach, buts, plain = _roles(rules, distinct)
    if stops is None:  # a group ends with each token ending in a terminator
        enders = {token for token in words if token[-1] in ".!?"}
        marked = values.keys() | reach.keys() | buts | enders
        marks = [i for i, token in enumerate(tokens) if token in marked]
        marked_tokens = [tokens[i] for i in marks]
        bounds = [at for at, token in enumerate(marked_tokens, 1) if token in enders]  # group ends among marks
        stops = [marks[at - 1] + 1 for at in bounds]
        stops.append(len(tokens))
        bounds.append(len(marks))
    else:
        marked = values.keys() | reach.keys() | buts
        marks = [i for i, token in enumerate(tokens) if token in marked]
        marked_tokens = [tokens[i] for i in marks]
        bounds = [bisect_left(marks, stop) for stop in stops]
    valences = [values.get(token, 0.0) for token in marked_tokens]
    if reach:
        # The lexicon words a rule word may act on: from its reach before it to 3 tokens after
        # it, so among the marks next to it. Those only plain negations act on get the negation
        # check alone, those other rule words act on all of VADER's rules (``_valence``).
        acted_on: set[int] = set()  # indexes into marks
        negated: set[int] = set()
        last = len(marks)
        for at in [at for at, token in enumerate(marked_tokens) if token in reach]:
            token, position = marked_tokens[at], marks[at]
            first, end = at, at + 1
            while first and marks[first - 1] >= position - reach[token]:
                first -= 1
            while end < last and marks[end] <= position + 3:
                end += 1
            (negated if token in plain else acted_on).update(range(first, end))
        for at in acted_on.union(negated):
            if marked_tokens[at] in values:
                i = marks[at]
                group = bisect_right(stops, i)
                start = stops[group - 1] if group else 0
                if at in acted_on:
                    valences[at] = _valence(rules, tokens, words, i, start, stops[group])
                else:
                    valences[at] = _negated_valence(tokens, plain, i, start, valences[at])
    if buts:
        first_buts: dict[int, int] = {}
        for at, token in enumerate(marked_tokens):
            if token in buts:
                first_buts.setdefault(bisect_right(stops, marks[at]), marks[at])
        for group, but in first_buts.items():
            for at in range(bounds[group - 1] if group else 0, bounds[group]):
                if marks[at] != but:
                    valences[at] *= 0.5 if marks[at] < but else 1.5
    totals = [sum(valences[first:last]) for first, last in zip([0, *bounds], bounds)]
    return totals, [last - first for first, last in zip([0, *stops], stops)]


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
