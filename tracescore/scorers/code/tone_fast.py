"""The tone scorer's sentiment, fast: VADER's own valences computed for a whole text at once.

The text is read piece by piece: a piece ends after each run of ``.``/``!``/``?`` (VADER's rules
never look past a few tokens, and this keeps long texts linear). A piece's tokens and valences
are VADER's own (``SentiText`` words, ``sentiment_valence`` per lexicon word, the "but" rule), but
computed for the whole text at once: VADER's per-token Python loop costs 7–20 µs a word, several
times Mastra's whole AFINN scorer on long texts. Nearly every lexicon word's valence is its
lexicon value, because VADER only changes it when a rule word (a negation, booster, "least",
"this", "no", "kind", an idiom) stands at most three tokens before or two after it, or when it
is capitalised among lowercase words; only those words go through VADER's rules (``_valence``),
and those near plain negations only ("not", "don't") through its negation check alone.

What a token is to VADER depends on the token alone, so each distinct token is classified once
per process into a table (``_TokenTable``: lowered word, valence, role flags, the tokens VADER
reads in its stead); the per-token loops over a text's token ids are compiled
(``_tone_scan.pyx``). Without them (a build with no C compiler) the tone scorer runs VADER's
own token-by-token code instead (``tone_vader.py``), which ``tests/scorers/test_tone_fast_path.py``
checks this module against, bit for bit.

One job, over 400 lines: the token table, the rule words and the valence rules are one
computation that must match VADER's as a whole; split, each part would only make sense read with
the others.
"""

from __future__ import annotations

import re
import string
import threading
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, chain

import numpy as np
from vaderSentiment.vaderSentiment import (
    BOOSTER_DICT,
    C_INCR,
    N_SCALAR,
    NEGATE,
    SPECIAL_CASES,
    SentimentIntensityAnalyzer,
)

from tracescore.scorers.code._tone_scan import (
    BUT,
    EMOJI_TERMINATOR,
    ENDER,
    EXPAND,
    LEXICON,
    PLAIN,
    REACH_2,
    RULE,
    UPPER,
    group_scores,
    token_ids,
)
from tracescore.scorers.code.tone_vader import AFINN_PER_VADER, PIECE_END

TERMINATORS = (".", "!", "?")
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
    phrase_marks: frozenset[str]  # the one word of each idiom and multi-word booster above
    # Negations that act on a lexicon word only by VADER's ``negated`` (× N_SCALAR): no lexicon
    # word, booster or idiom word, and not "never" or "without", which combine with the next word.
    plain_negations: frozenset[str]
    emoji: dict[str, str]  # single-character emoji -> " " + its description
    # Emoji whose description holds a terminator: a token of it may end in one and not end a piece.
    emoji_with_terminators: frozenset[str]


@cache
def _rules() -> _Rules:
    vader = _vader()
    phrases = [key.split() for key in (*SPECIAL_CASES, *BOOSTER_DICT) if " " in key]
    phrase_marks = frozenset(
        next(word for word in words if word not in _COMMON_PHRASE_WORDS) for words in phrases
    )
    reach = dict.fromkeys((*NEGATE, *BOOSTER_DICT, "no", "least", "this", "kind"), 0)
    reach.update(dict.fromkeys(phrase_marks, 2))
    scored = {word: value for word, value in vader.lexicon.items() if word not in BOOSTER_DICT}
    emoji = {key: " " + description for key, description in vader.emojis.items() if len(key) == 1}
    return _Rules(
        lexicon=vader.lexicon,
        scored=scored,
        reach=reach,
        phrase_marks=phrase_marks,
        plain_negations=frozenset(
            word
            for word in NEGATE
            if word not in ("never", "without")
            and word not in vader.lexicon
            and word not in BOOSTER_DICT
            and word not in phrase_marks
        ),
        emoji=emoji,
        emoji_with_terminators=frozenset(
            key
            for key, description in emoji.items()
            if any(end in description for end in TERMINATORS)
        ),
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
    return re.compile(
        "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in runs) + "]"
    )


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


def _pieces_with_emoji(text: str) -> tuple[list[str], list[int]]:
    """The tokens of a text holding an emoji whose description has a terminator in it, and where
    each group of them stops (exclusive): VADER's pieces, each with its emoji described (a
    terminator in a description ends no piece)."""
    pieces = [_describe_emoji(piece).split() for piece in PIECE_END.split(text)]
    stops = list(accumulate(map(len, pieces)))
    if text.endswith(TERMINATORS):  # the last piece is a group too: the rest after it is empty
        stops.append(stops[-1])
    return list(chain.from_iterable(pieces)), stops


def _expansion(rules: _Rules, token: str) -> list[str]:
    """The tokens VADER reads where ``token`` stands, for a token holding an emoji or a piece end
    ("e.g.", "3.5"): each emoji's description put in (after a space, which only separates
    tokens) and a space after each terminator followed by another character. Token by token is
    the same as in the whole text, as descriptions and cuts never reach past whitespace."""
    for emoji in set(token) & rules.emoji.keys():
        token = token.replace(emoji, rules.emoji[emoji])
    return _CUT_INSIDE.sub(r"\1 ", token).split()


def _valence(rules: _Rules, text: _Text, i: int, start: int, stop: int) -> float:
    """VADER's valence of the lexicon word at ``i`` in the piece ``start:stop`` of ``text``.

    ``SentimentIntensityAnalyzer.sentiment_valence`` (vaderSentiment 3.3.2) rule for rule, on
    the lowered words of its window ``i - 3 .. i + 2``, which is all it reads besides the
    piece's capitals. VADER's own code costs 40–60 µs a call (it lowercases the window three
    times and scans its negation list); this gives the same floats, from the same operations.
    """
    lexicon = rules.lexicon
    low = max(start, i - 3)
    lowered = [text.word(k) for k in range(low, min(stop, i + 3))]
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
    cap_diff = None
    if text.flag(i) & UPPER:
        cap_diff = text.cap_differential(start, stop)
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
            if text.flag(low + before) & UPPER:
                if cap_diff is None:
                    cap_diff = text.cap_differential(start, stop)
                if cap_diff:
                    scalar = scalar + C_INCR if valence > 0 else scalar - C_INCR
            scalar = scalar * damping
        valence = _negation_check(valence + scalar, lowered, start_i, at)
        if start_i == 2 and not rules.phrase_marks.isdisjoint(lowered):  # else no idiom can match
            valence = SentimentIntensityAnalyzer._special_idioms_check(valence, lowered, at)
    least = at > 0 and lowered[at - 1] == "least" and "least" not in lexicon  # _least_check
    if least and not (at > 1 and lowered[at - 2] in ("at", "very")):
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
    elif (lowered[i - 3] == "never" and lowered[i - 2] in ("so", "this")) or lowered[i - 1] in (
        "so",
        "this",
    ):
        valence = valence * 1.25
    elif lowered[i - 3] == "without" and "doubt" in (lowered[i - 2], lowered[i - 1]):
        pass
    elif _negated(lowered[i - 3]):
        valence = valence * N_SCALAR
    return valence


class _TokenTable:
    """Every token seen so far, with an id: its lowered word, valence, flags and expansion.

    A token's role depends on the token alone, and texts share most of their tokens, so each
    distinct token is classified once per process instead of once per text: a text is then a
    dictionary look-up per token, array operations on the ids, and Python only for lexicon
    words that rule words other than plain negations act on. Bounded by ``_MAX_TOKENS``: a full
    table is replaced by a fresh one.

    Readers take no lock: a token is put in ``ids`` only after everything else about it is
    written, and a grown array is a copy, so a reader's arrays stay valid; ids it finds beyond
    them (tokens added meanwhile) send it to look again under the lock (``_token_ids``).
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.words: list[str] = []  # each id's lowered word, for ``_valence``
        self.valence = np.zeros(4096)
        self.flags = np.zeros(4096, dtype=np.uint16)
        # An expanded token's ids: parts[part_start[id] : part_start[id] + part_count[id]].
        self.part_start = np.zeros(4096, dtype=np.intp)
        self.part_count = np.zeros(4096, dtype=np.intp)
        self.parts = np.zeros(4096, dtype=np.intp)
        self.parts_used = 0

    def learn(self, rules: _Rules, tokens: Collection[str]) -> None:
        """Classify the new ones of ``tokens`` (the caller holds ``_learning``)."""
        for token in tokens:
            if token not in self.ids:
                self._add(rules, token)

    def _add(self, rules: _Rules, token: str) -> int:
        at = len(self.words)
        punctuation = string.punctuation  # stripped, unless that leaves two characters or fewer
        word = (s if len(s := token.strip(punctuation)) > 2 else token).lower()
        self.words.append(word)
        if at == len(self.flags):
            self.valence, self.flags, self.part_start, self.part_count = (
                _grown(array, 2 * at)
                for array in (self.valence, self.flags, self.part_start, self.part_count)
            )
        flags = (ENDER if token[-1] in ".!?" else 0) | (UPPER if token.isupper() else 0)
        if word in rules.scored:
            flags |= LEXICON
            self.valence[at] = rules.scored[word]
        if word in rules.reach:
            flags |= RULE | (REACH_2 if rules.reach[word] == 2 else 0)
            flags |= PLAIN if word in rules.plain_negations else 0
        elif word == "but":
            flags |= BUT
        if "n't" in word and not flags & (RULE | LEXICON):
            flags |= RULE | PLAIN  # a negation by "n't" alone
        elif "n't" in word or (flags & LEXICON and flags & UPPER):
            flags |= RULE  # a negation ("n't") or a capitalised lexicon word: reach 0
        emoji = set() if token.isascii() else set(token) & rules.emoji.keys()
        if emoji & rules.emoji_with_terminators:
            flags |= EXPAND | EMOJI_TERMINATOR  # the whole text is read piece by piece
        elif emoji or _CUT_INSIDE.search(token):
            flags |= EXPAND
            # None of the parts needs expanding: no emoji is left, nor a terminator inside.
            parts = [
                self.ids[part] if part in self.ids else self._add(rules, part)
                for part in _expansion(rules, token)
            ]
            start, self.parts_used = self.parts_used, self.parts_used + len(parts)
            if self.parts_used > len(self.parts):
                self.parts = _grown(self.parts, 2 * self.parts_used)
            self.parts[start : self.parts_used] = parts
            self.part_start[at], self.part_count[at] = start, len(parts)
        self.flags[at] = flags
        self.ids[token] = at
        return at


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """A copy of ``array`` with room for ``size`` entries (a new array: readers of the old one
    are not disturbed)."""
    grown = np.zeros(size, dtype=array.dtype)
    grown[: len(array)] = array
    return grown


_MAX_TOKENS = 100_000
"""Tokens the table keeps before it starts afresh (~30 MB when full, measured)."""
_table = _TokenTable()
_learning = threading.Lock()


@dataclass(frozen=True, slots=True)
class _Text:
    """A text as VADER reads it: its tokens' ids in ``table``."""

    ids: np.ndarray
    table: _TokenTable

    def word(self, i: int) -> str:
        return self.table.words[int(self.ids[i])]

    def flag(self, i: int) -> int:
        return int(self.table.flags[self.ids[i]])

    def cap_differential(self, start: int, stop: int) -> bool:
        """VADER's ``allcap_differential`` of the piece ``start:stop``: some but not all of its
        words in capitals."""
        capitals = int(np.count_nonzero(self.table.flags[self.ids[start:stop]] & UPPER))
        return 0 < capitals < stop - start


def _token_ids(tokens: list[str], expand: bool) -> tuple[np.ndarray, int, _TokenTable]:
    """The ids of the tokens VADER reads (each expanded token's parts, if ``expand``), the OR of
    the tokens' flags, and the table they are ids in (classifying the tokens it lacks)."""
    global _table
    table = _table
    ids, combined = _look_up(table, tokens, expand)
    if ids is None:
        with _learning:  # no table changes meanwhile: every token is found
            if len(_table.words) + len(tokens) > _MAX_TOKENS:
                _table = _TokenTable()
            table = _table
            table.learn(_rules(), set(tokens))
            ids, combined = _look_up(table, tokens, expand)
            assert ids is not None, "a token the table was just taught is missing from it"
    return ids, combined, table


def _look_up(table: _TokenTable, tokens: list[str], expand: bool) -> tuple[np.ndarray | None, int]:
    flags = EXPAND if expand else 0
    return token_ids(
        tokens, table.ids, table.flags, table.part_start, table.part_count, table.parts, flags
    )


def _group_scores(text: str) -> tuple[list[float], list[int]]:
    """Σ VADER valences and token count of each group of the text's tokens: one group per run of
    terminators (the piece it ends), then the tokens after the last run (possibly none).

    The compiled ``group_scores`` does the per-token work: a lexicon word's valence is its
    lexicon value unless a rule word stands in its window; those go through ``_valence``, or,
    when only plain negations act on them, VADER's negation check alone: × ``N_SCALAR`` for each
    negation among the 3 tokens before it in its piece (the same products, as every factor is
    the same). The "but" rule is applied as intended: valences before a piece's first "but"
    halved, after it × 1.5 (VADER looks each valence up with ``list.index``, which is quadratic
    and hits the wrong token when two valences are equal). A group's valences are added up left
    to right, as VADER does, zeros included (adding 0.0 changes no sum that starts at 0.0).
    """
    ids, combined, table = _token_ids(text.split(), expand=True)
    stops = None
    if combined & EMOJI_TERMINATOR:
        tokens, stops = _pieces_with_emoji(text)
        ids, _, table = _token_ids(tokens, expand=False)
    rules, read = _rules(), _Text(ids, table)

    def full_valence(i: int, start: int, stop: int) -> float:
        return _valence(rules, read, i, start, stop)

    return group_scores(ids, table.flags, table.valence, stops, full_valence, N_SCALAR)


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
    values = [
        AFINN_PER_VADER * total / tokens
        for total, tokens in zip(totals[first:-1], counts[first:-1], strict=True)
    ]
    return values or [_comparative(totals, counts)]
