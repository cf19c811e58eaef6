"""completeness: how many of the input's words (verbs as infinitives) the output covers.

Mastra's ``createCompletenessScorer`` extracts "elements" with the JavaScript NLP library
compromise: noun phrases, verbs turned into infinitives (auxiliaries and modals dropped with
them), topics and all remaining terms, each cleaned to plain ``[a-z0-9]`` words. Every word of the
text ends up an element, so what decides the score is how verbs are normalised. This module
keeps that: it tokenises like compromise, expands ``n't``, turns verbs into their lemma with
lemminflect's lexicon (its verb forms, shipped as package data: see ``verb_forms``) and a few
context rules standing in for a part-of-speech tagger, drops auxiliaries and modals that lead a
verb, then applies Mastra's coverage rule unchanged. Elements are listed in text order (Mastra
lists nouns first); scores are what count.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.code.jstext import js_trim
from tracescore.scorers.code.reasons import coverage_reason
from tracescore.scorers.code.verb_forms import verb_form
from tracescore.scorers.steps import StepContext
from tracescore.scorers.utils import run_input_text, run_output_text

ID = "completeness-scorer"
VERSION = "2"  # 2: runs that failed before answering are not scorable

_COMBINING_MARKS = re.compile("[\u0300-\u036f]")
_NON_WORD = re.compile(r"[^a-z0-9]+")
# Words, keeping an in-word apostrophe so contractions can be told apart.
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['\u2019][A-Za-z]+)?")

_BE = frozenset({"be", "is", "are", "was", "were", "am", "been", "being"})
_HAVE = frozenset({"have", "has", "had", "having"})
_DO = frozenset({"do", "does", "did"})
_MODALS = frozenset({"can", "could", "will", "would", "shall", "should", "may", "might", "must"})
_SUBJECTS = frozenset(
    {"i", "you", "he", "she", "it", "we", "they", "that", "which", "who", "this", "there"}
)
_NOUN_MARKERS = frozenset(
    {
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "more",
        "most",
        "a",
        "an",
        "the",
        "my",
        "your",
        "his",
        "her",
        "its",
        "our",
        "their",
        "this",
        "these",
        "those",
        "some",
        "any",
        "each",
        "every",
        "no",
        "many",
        "few",
        "several",
        "of",
        "for",
        "in",
        "on",
        "at",
        "with",
        "by",
        "from",
        "per",
        "about",
        "into",
        "over",
        "under",
        "as",
    }
)
_ADVERBS_IN_VERB_GROUP = frozenset(
    {"not", "also", "never", "just", "already", "still", "really", "always", "often", "even"}
)
_CONTRACTED_AUXILIARIES = frozenset({"s", "re", "ve", "ll", "d", "m"})
_CLAUSE_OPENERS = frozenset(
    {"and", "but", "or", "because", "when", "while", "if", "that", "which", "who", "so"}
)
_CLAUSE_BREAK = re.compile(r"([.,;:!?()\[\]\"\n]+)")
_SENTENCE_END = re.compile(r"[.!?\n]")
_NEGATED_BASES = {"ca": "do", "did": "do", "wo": "will", "sha": "shall", "ai": "be"}
_COPULA_CONTRACTION_HOSTS = frozenset(
    {"what", "where", "who", "how", "when", "why", "here", "there", "that"}
)


def _strip_accents(text: str) -> str:
    """Mastra's ``normalizeString`` before its lowercasing: NFD, drop combining accents."""
    return _COMBINING_MARKS.sub("", unicodedata.normalize("NFD", text))


def _tokens(clause: str, mid_sentence: bool) -> tuple[list[str], set[int]]:
    """Lowercased words of a clause, contractions split as compromise splits them, and the
    positions of capitalised words not opening a sentence (names, which compromise reads as
    nouns)."""
    words: list[str] = []
    names: set[int] = set()
    for token in _TOKEN.findall(clause):
        if (words or mid_sentence) and token[0].isupper():
            names.add(len(words))
        host, _, suffix = token.lower().replace("\u2019", "'").partition("'")
        if not suffix:
            words.append(host)
        elif suffix == "t" and host.endswith("n"):  # don't, isn't, can't, won't
            base = host[:-1]
            words += [_NEGATED_BASES.get(base, base), "not"]
        elif suffix == "s" and host == "let":
            words += ["let", "us"]
        elif suffix == "s" and host in _COPULA_CONTRACTION_HOSTS:
            words += [host, "is"]
        else:
            words += [host, suffix]
    return words, names


def _verb_lemma(word: str) -> str | None:
    form = verb_form(word)
    return form.lemma if form else None


def _is_past_participle(word: str) -> bool:
    if word in _BE:
        return word == "been"
    form = verb_form(word)
    return form is not None and form.past_participle


def _is_participle(word: str) -> bool:
    """Whether ``word`` is the past or present participle of some verb."""
    if word in _BE:
        return word in ("been", "being")
    form = verb_form(word)
    return form is not None and (form.past_participle or form.present_participle)


def _next_contents(words: list[str]) -> list[str | None]:
    """For each word, the next word after it that is not an adverb inside a verb group.

    One pass from the right: looking ahead from every word instead was quadratic in a clause's
    length, and one long unpunctuated text (80,000 words: 13 s) held a scoring process.
    """
    following: list[str | None] = [None] * len(words)
    upcoming: str | None = None
    for i in range(len(words) - 1, -1, -1):
        following[i] = upcoming
        if words[i] not in _ADVERBS_IN_VERB_GROUP:
            upcoming = words[i]
    return following


def _leads_verb(word: str, following: str | None) -> bool:
    """Whether the auxiliary ``word`` is followed by the verb it helps (and so drops out)."""
    if following is None:
        return False
    if word in _HAVE:
        return _is_past_participle(following)
    if word in _MODALS:
        return following not in _SUBJECTS and (
            following in _BE or _verb_lemma(following) is not None
        )
    return _is_participle(following)  # be, and contracted 's / 're


def _normalise_clause(words: list[str], names: set[int]) -> list[str]:
    """Verbs to infinitives, auxiliaries and modals leading a verb dropped, copulas to ``be``.

    A small stand-in for compromise's tagger: a word reads as a verb after an auxiliary, a
    subject pronoun or a modal, or as the first inflected verb form after the clause's subject.
    """
    out: list[str] = []
    after_auxiliary = clause_has_verb = False
    for i, (word, following) in enumerate(zip(words, _next_contents(words), strict=True)):
        previous = words[i - 1] if i else None
        if word in _BE or word in _HAVE or word in _MODALS or word in _CONTRACTED_AUXILIARIES:
            if _leads_verb(word, following) and previous not in _NOUN_MARKERS:
                after_auxiliary = clause_has_verb = True
                if word in _CONTRACTED_AUXILIARIES:
                    out.append(word)  # compromise keeps "it s", "they re"
                continue
            if word in _BE or word in _HAVE:
                out.append("be" if word in _BE else "have")
                clause_has_verb = True
                continue
            out.append(word)
            continue
        if word in _DO and following is not None:
            if following in _SUBJECTS:  # "did you ...", "how do I ..."
                out.append("do")
                after_auxiliary = clause_has_verb = True
                continue
            if following == "not" or words[i + 1 : i + 2] == ["not"]:
                out.append(word)
                after_auxiliary = clause_has_verb = True
                continue
        if word in _CLAUSE_OPENERS:
            clause_has_verb = False
        if (previous is None or previous == "please") and _verb_lemma(word) == word:
            clause_has_verb = True  # an imperative: "Summarize the main points"
        lemma = None if i in names else _as_verb(word, previous, after_auxiliary, clause_has_verb)
        if lemma is not None:
            clause_has_verb = True
        if word not in _ADVERBS_IN_VERB_GROUP:
            after_auxiliary = False
        out.append(lemma or word)
    return out


def _as_verb(
    word: str, previous: str | None, after_auxiliary: bool, clause_has_verb: bool
) -> str | None:
    """The infinitive when ``word`` reads as an inflected verb here, else ``None``."""
    form = verb_form(word)
    if form is None or form.lemma == word or previous in _NOUN_MARKERS:
        return None  # not an inflected verb, or "the running", "a programming idea"
    if after_auxiliary or previous in _SUBJECTS or previous in _MODALS:
        return form.lemma
    if clause_has_verb:
        return None  # "retries failed requests", "counts orders"
    return form.lemma if previous is not None or form.only_verb else None


def extract_elements(text: str) -> list[str]:
    """The text's elements: its words with verbs normalised, de-duplicated in text order."""
    elements: dict[str, None] = {}
    pieces = _CLAUSE_BREAK.split(_strip_accents(js_trim(text)))
    for index in range(0, len(pieces), 2):
        mid_sentence = index > 0 and not _SENTENCE_END.search(pieces[index - 1])
        for word in _normalise_clause(*_tokens(pieces[index], mid_sentence)):
            elements.update((w, None) for w in _NON_WORD.split(word) if w)
    return list(elements)


def coverage(original: list[str], simplified: list[str]) -> float:
    """Mastra's ``calculateCoverage``: short elements match exactly, longer ones by containment."""
    if not original:
        return 1.0 if not simplified else 0.0
    simplified_set = set(simplified)

    def covered(element: str) -> bool:
        if element in simplified_set:
            return True
        if len(element) <= 3:
            return False
        for other in simplified:
            longer, shorter = (element, other) if len(element) > len(other) else (other, element)
            if shorter in longer and len(shorter) / len(longer) > 0.6:
                return True
        return False

    return sum(1 for element in original if covered(element)) / len(original)


def create_completeness_scorer() -> Scorer:
    """Share of the input's elements (words, verbs as infinitives) present in the output."""

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        if not ctx.run.input or ctx.run.output is None:
            raise ValueError("Inputs cannot be null or undefined")
        input_elements = extract_elements(run_input_text(ctx.run.input))
        output_elements = extract_elements(run_output_text(ctx.run.output))
        present = set(output_elements)
        return {
            "inputElements": input_elements,
            "outputElements": output_elements,
            "missingElements": [e for e in input_elements if e not in present],
            "elementCounts": {"input": len(input_elements), "output": len(output_elements)},
        }

    def generate_score(ctx: StepContext) -> float:
        elements = ctx.results["preprocess_step_result"]
        return coverage(elements["inputElements"], elements["outputElements"])

    def generate_reason(ctx: StepContext) -> str:
        # long words count when the answer holds a close form of them: the count is the
        # score's, the missing list would name some that count
        total = len(ctx.results["preprocess_step_result"]["inputElements"])
        return coverage_reason("words", total, round((ctx.score or 0.0) * total))

    return (
        create_scorer(
            id=ID,
            name="Completeness Scorer",
            description="Share of the input's words (verbs as infinitives) that the output covers.",
            version=VERSION,
            needs_answer=True,
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
