"""The shipped verb-form table answers exactly as lemminflect does, for its whole lexicon."""

from __future__ import annotations

import re

import pytest
from lemminflect import getAllLemmas, getInflection
from lemminflect.core.Lemmatizer import Lemmatizer

from tracescore.scorers.code.verb_forms import VerbForm, verb_form

_WORD = re.compile(r"[a-z0-9]+")


def _lemminflect_verb_form(word: str) -> VerbForm | None:
    """What completeness used to ask lemminflect directly, answered by lemminflect."""
    readings = getAllLemmas(word)
    lemmas = readings.get("VERB")
    if not lemmas:
        return None
    return VerbForm(
        lemma=lemmas[0],
        past_participle=any(word in getInflection(lemma, "VBN") for lemma in lemmas),
        present_participle=any(word in getInflection(lemma, "VBG") for lemma in lemmas),
        only_verb=not (readings.keys() - {"VERB", "AUX"}),
    )


def _lexicon() -> list[str]:
    lemmatizer = Lemmatizer()
    return sorted(set(lemmatizer._getLemmaDict()) | set(lemmatizer._getOverridesDict()))


def test_every_word_of_the_lexicon_reads_as_lemminflect_reads_it() -> None:
    words = [word for word in _lexicon() if _WORD.fullmatch(word)]
    assert len(words) > 60_000
    mismatches = [
        (w, verb_form(w), _lemminflect_verb_form(w))
        for w in words
        if verb_form(w) != _lemminflect_verb_form(w)
    ]
    assert mismatches == []
    assert sum(verb_form(w) is not None for w in words) > 25_000


@pytest.mark.parametrize("word", ["tracescore", "xyzzyq", "0", "aaaa", "teh", "runnning"])
def test_words_outside_the_lexicon_have_no_verb_reading(word: str) -> None:
    assert _lemminflect_verb_form(word) is None
    assert verb_form(word) is None


def test_known_readings() -> None:
    assert verb_form("ran") == VerbForm("run", False, False, True)
    assert verb_form("running") == VerbForm(
        "run", False, True, False
    )  # also a noun and an adjective
    assert verb_form("written") == VerbForm("write", True, False, True)
    assert verb_form("summarize") == VerbForm("summarize", False, False, True)
    assert verb_form("table") is not None and verb_form("table").only_verb is False
