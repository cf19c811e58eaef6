"""The tone scorer's sentiment equals VADER's own token-by-token computation for every text.

``tracescore.scorers.code.tone_fast`` computes the valences of a whole text at once and runs
VADER's rules only for lexicon words with a rule word nearby; ``tone_vader`` is the previous
implementation (and the fallback of builds without a C compiler), VADER's ``SentiText`` and
``sentiment_valence`` for every lexicon word. Both are
compared on the recorded parity corpus, on the benchmark's 10k-character texts and on generated
texts made of the words behind each of VADER's rules.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from vaderSentiment.vaderSentiment import BOOSTER_DICT, NEGATE, SPECIAL_CASES

from benchmarks.scorers import long_cases
from tests.support.parity_support import load_cases
from tracescore.scorers.code import tone_fast
from tracescore.scorers.code import tone_vader as reference


def assert_same_sentiment(text: str) -> None:
    """The same floats, bit for bit (the same additions and products in the same order)."""
    assert tone_fast.comparative(text).hex() == reference.comparative(text).hex(), text
    mine, theirs = tone_fast.sentence_comparatives(text), reference.sentence_comparatives(text)
    assert [value.hex() for value in mine] == [value.hex() for value in theirs], (
        text,
        mine,
        theirs,
    )


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


CORPUS = sorted(
    {
        text
        for name in ("sample.jsonl", "code_extra.jsonl", "nlp_extra.jsonl")
        for case in load_cases(name)
        for text in strings_in([case.get("input"), case.get("output"), case.get("options")])
    }
)


def test_recorded_corpus_texts() -> None:
    assert len(CORPUS) > 200
    for text in CORPUS:
        assert_same_sentiment(text)


@pytest.mark.parametrize("case", long_cases(1), ids=lambda case: case["id"])
def test_benchmark_long_texts(case: dict[str, Any]) -> None:
    for text in strings_in([case["input"], case["output"]]):
        if len(text) > 1000:
            assert_same_sentiment(text)


# One text per branch of VADER's rules (sentiment_valence, its negation, idiom, "least" and "but"
# checks), with neutral words around so that each rule acts alone, and the piece boundaries.
RULE_CASES = [
    "kind of good",
    "x kind of good",
    "kind of x good",
    "sort of x y good",
    "just enough x good",
    "good kind",
    "no good",
    "no x good",
    "no x or good",
    "no x nor good",
    "no x and good",
    "no good things",
    "good no",
    "no",
    "GOOD day is here",
    "GOOD DAY",
    "VERY good day",
    "very GOOD day",
    "the VERY x good day",
    "NOT good at all",
    "very good",
    "very x good",
    "very x y good",
    "very bad",
    "extremely x bad",
    "slightly good",
    "x y very bad",
    "not good",
    "not x good",
    "not x y good",
    "isn't good",
    "don't x good",
    "x y z not good",
    "never so good",
    "never this good",
    "never so x good",
    "x y so good",
    "x y this good",
    "x this good",
    "without doubt good",
    "without doubt x good",
    "without x doubt good",
    "x without y doubt good",
    "least good",
    "at least good",
    "very least good",
    "x least good",
    "least x good",
    "the shit",
    "x y the shit",
    "it was the bomb",
    "bad ass",
    "x bus stop",
    "yeah right",
    "kiss of death here",
    "x to die for y",
    "x y z beating heart",
    "good but bad",
    "BUT good",
    "good but bad but great",
    "good but",
    # Plain negations (only VADER's negation check can act), alone and next to other rules.
    "not not good",
    "not good not bad",
    "never not good",
    "not never good",
    "can't so good",
    "nor good",
    "not GOOD day",
    "GOOD not",
    "don't great bad",
    "nothing x y z good",
    "rarely good. not",
    "not. good",
    "not x kind of good",
    "not least good",
    "not very good",
    "won't the bomb",
    "not no good",
    # A terminator followed by whitespace of every kind (no cut), or by anything else (a cut).
    "good.\x85bad",
    "good.\u3000bad",
    "good!\x1cbad",
    "good?\u2028bad",
    "good.\u00a0bad",
    "good.\tbad!",
    "good.😀 bad",
    "good.©bad",
    "good.\u200bbad",
    "good.ébad",
    "3.5 good",
    "good!?bad",
    "good.",
    "",
    " ",
    "...",
    "!!! hi",
    " ...Hello.",
    "...Hello. World",
    "Hi. ",
    "a.b",
    "e.g. 3.5 good.bad!",
    "good.😀great",
    "🤶",
    "Mrs 🤶. 🔛 good!",
    "I don't like it. It isn't bad!!! Is it?? ok",
    "good " * 50,
]


@pytest.mark.parametrize("text", RULE_CASES)
def test_each_rule(text: str) -> None:
    assert_same_sentiment(text)


# Words behind every rule (negations, boosters and dampeners of one and two words, idioms, "no",
# "least", "but", "this"/"so" emphasis), lexicon words and emoticons, emoji (some with a terminator
# in their description), contractions, cuts inside a token, one-character tokens, characters with
# unusual case mappings, and neutral words: a rule only shows on its own, without another rule
# word nearby that sends the lexicon word through VADER's rules anyway.
SINGLE_RULE_WORDS = (
    "no nor or least at very but this so never without doubt kind sort of just enough".split()
)
PHRASE_WORDS = sorted(
    {word for key in (*BOOSTER_DICT, *SPECIAL_CASES) if " " in key for word in key.split()}
)
LEXICON_WORDS = [
    *"good bad great terrible love hate happy sad ok yes wonderful awful die heart :) :( <3 ;)".split(),
    *sorted(reference.vader().lexicon)[::151],
]
NEUTRAL_WORDS = "the agent table runs it's we're data 2024 x".split()
OTHER_WORDS = "😀 🎉 💔 ❤ 😡 🤶 🔛 🆙 © ® e.g. 3.5 ...so good.bad U.S. a!b a I - . , ! ? ' é İyi GRÜN straße ǅ".split()
# Dense texts combine rules; sparse ones let a single rule word act alone.
dense_words = st.one_of(
    st.sampled_from(NEUTRAL_WORDS),
    st.sampled_from(LEXICON_WORDS),
    st.sampled_from(SINGLE_RULE_WORDS),
    st.sampled_from([*NEGATE, "don't", "can't", "n't"]),
    st.sampled_from([key for key in BOOSTER_DICT if " " not in key]),
    st.sampled_from(PHRASE_WORDS),
    st.sampled_from(OTHER_WORDS),
)
sparse_words = st.one_of(
    *[st.sampled_from(NEUTRAL_WORDS)] * 5,
    *[st.sampled_from(LEXICON_WORDS)] * 3,
    st.sampled_from(SINGLE_RULE_WORDS),
    dense_words,
)
CASINGS = (str, str, str, str.upper, str.capitalize)
AFFIXES = ("",) * 12 + ('"', "(", ")", "'", "*", "...", "!", "?", ".", ",", "!?", "!!!", "??", ":)")
SEPARATORS = (" ",) * 8 + (
    "  ",
    "\n",
    "\t",
    "\u00a0",
    "\u2003",
    "",
    ". ",
    "! ",
    "?? ",
    "... ",
    "!!! ",
    ", ",
)


def build(parts: list[tuple[str, Any, str, str, str]]) -> str:
    return "".join(
        prefix + case(word) + suffix + separator for word, case, prefix, suffix, separator in parts
    )


def texts_of(words: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    part = st.tuples(
        words,
        st.sampled_from(CASINGS),
        st.sampled_from(AFFIXES),
        st.sampled_from(AFFIXES),
        st.sampled_from(SEPARATORS),
    )
    return st.lists(part, min_size=3, max_size=40).map(build)


# A rule word (or two) 1 to 3 tokens before a lexicon word, among neutral words.
rule_word = st.sampled_from(
    [*SINGLE_RULE_WORDS, *PHRASE_WORDS, "not", "don't", "very", "VERY", "slightly"]
)
neutral = st.lists(st.sampled_from(NEUTRAL_WORDS), max_size=3)
isolated = st.builds(
    lambda before, rules, gap, word, after, casing: " ".join(
        [*before, *rules, *gap, casing(word), *after]
    ),
    neutral,
    st.lists(rule_word, min_size=1, max_size=2),
    st.lists(st.sampled_from(NEUTRAL_WORDS), max_size=2),
    st.sampled_from(LEXICON_WORDS),
    neutral,
    st.sampled_from(CASINGS),
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(texts_of(dense_words), texts_of(sparse_words), isolated))
def test_generated_texts(text: str) -> None:
    assert_same_sentiment(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_unicode(text: str) -> None:
    assert_same_sentiment(text)


@pytest.fixture
def small_token_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh token table that fills up after a few hundred tokens, so texts keep starting it
    afresh and growing its arrays."""
    monkeypatch.setattr(tone_fast, "_table", tone_fast._TokenTable())
    monkeypatch.setattr(tone_fast, "_MAX_TOKENS", 300)


@pytest.mark.usefixtures("small_token_table")
def test_a_full_token_table_starts_afresh_and_scores_alike() -> None:
    tables = set()
    for text in CORPUS:
        assert_same_sentiment(text)
        tables.add(id(tone_fast._table))
        assert (
            len(tone_fast._table.words) <= 300 + len(text.split()) * 8
        )  # a text's tokens and their parts
    assert len(tables) > 3


@pytest.mark.usefixtures("small_token_table")
def test_threads_learning_tokens_together_score_as_one_thread_does() -> None:
    """Threads scoring texts of new tokens at once: they add tokens, grow the table's arrays and
    replace the table while the others read it."""
    texts = [
        *CORPUS,
        *(s for case in long_cases(1) for s in strings_in([case["input"], case["output"]])),
    ]
    expected = {
        text: [value.hex() for value in reference.sentence_comparatives(text)] for text in texts
    }
    failures: list[str] = []

    def score(offset: int) -> None:
        for text in texts[offset:] + texts[:offset]:
            if [value.hex() for value in tone_fast.sentence_comparatives(text)] != expected[text]:
                failures.append(text)

    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(score, range(0, 4 * 37, 37)))
    finally:
        sys.setswitchinterval(0.005)
    assert failures == []
