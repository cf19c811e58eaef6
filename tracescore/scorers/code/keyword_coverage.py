"""keyword-coverage: share of the input's keywords that the output repeats.

A port of Mastra's ``createKeywordCoverageScorer`` with the keyword extraction of
``keyword-extractor`` 0.0.28 (English SMART stop list, digits removed, lowercased, no stemming).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.code.jstext import js_trim, js_words
from tracescore.scorers.code.reasons import coverage_reason
from tracescore.scorers.steps import StepContext
from tracescore.scorers.utils import run_input_text, run_output_text

ID = "keyword-coverage-scorer"
VERSION = "2"  # 2: runs that failed before answering are not scorable

_HTML_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"https?://")
# keyword-extractor deletes these anywhere in a word, and a "'" only at its very start or end.
_DELETED = '.,;!?():"\u201c\u201d\u2018\u2019'
_LONE_SYMBOLS = frozenset("_@&#")  # deleted when the word is just one of them
# Words (one a line) with a "'" to drop: a word's first or last character (a word "'" is one
# match). Written to start with the "'" itself, which the regex engine then looks for quickly.
_EDGE_APOSTROPHE = re.compile(r"'(?:(?<=^')|$)", re.MULTILINE)


@cache
def stop_words() -> frozenset[str]:
    """The 571-word SMART English stop list ``keyword-extractor`` uses."""
    text = (
        resources.files("tracescore.scorers")
        .joinpath("data/smart_stopwords_en.txt")
        .read_text("utf-8")
    )
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


@cache
def _dropped() -> frozenset[str]:
    """The lowered words that are no keyword whatever the text: stop words, nothing, a lone symbol."""
    return stop_words() | {""} | _LONE_SYMBOLS


def extract_keywords(text: str) -> list[str]:
    """Keywords in first-seen order, as ``keyword_extractor.extract`` returns them.

    A token's keyword depends on the token alone, so only the distinct tokens are read, and all
    at once: joined one a line, their punctuation deleted, edge apostrophes dropped and letters
    lowered by a few whole-string operations instead of token by token. A URL is kept as it is.
    """
    text = js_trim(_HTML_TAG.sub("", text)) if text else ""
    if not text:
        return []
    tokens = list(dict.fromkeys(js_words(text)))
    joined = "\n".join(tokens)  # no token holds a line break: it is whitespace
    has_urls = "http" in joined
    if "'" in joined:  # before the other deletions: which "'" goes depends on the token as it is
        joined = _EDGE_APOSTROPHE.sub("", joined)
    for mark in _DELETED:
        if mark in joined:
            joined = joined.replace(mark, "")
    # str.lower keeps line breaks and makes none, so the lowered words stay one a line.
    lowered = joined.lower().split("\n")
    if has_urls:
        lowered = [
            _url_keyword(token) if "http" in token and _URL.search(token) else word
            for token, word in zip(tokens, lowered, strict=True)
        ]
    dropped = _dropped()
    # JS /\d/ is ASCII digits only; lowering makes and unmakes no digit.
    return list(
        dict.fromkeys(
            word
            for word in lowered
            if word not in dropped and not (word.isdigit() and word.isascii())
        )
    )


def _url_keyword(token: str) -> str:
    """A URL token's keyword: the token itself, unless it is a stop word ("": none)."""
    return "" if token.lower() in stop_words() else token


def create_keyword_coverage_scorer() -> Scorer:
    """Fraction of the input's keywords found in the output; 1 when the input has none."""

    def preprocess(ctx: StepContext) -> dict[str, list[str]]:
        input_text, output_text = run_input_text(ctx.run.input), run_output_text(ctx.run.output)
        return {
            "referenceKeywords": extract_keywords(input_text),
            "responseKeywords": extract_keywords(output_text),
        }

    def analyze(ctx: StepContext) -> dict[str, int]:
        keywords = ctx.results["preprocess_step_result"]
        response = set(keywords["responseKeywords"])
        return {
            "totalKeywordsLength": len(keywords["referenceKeywords"]),
            "matchedKeywordsLength": sum(1 for k in keywords["referenceKeywords"] if k in response),
        }

    def generate_score(ctx: StepContext) -> float:
        counts: dict[str, int] = ctx.results["analyze_step_result"]
        if not counts["totalKeywordsLength"]:
            return 1.0
        return counts["matchedKeywordsLength"] / counts["totalKeywordsLength"]

    def generate_reason(ctx: StepContext) -> str:
        keywords = ctx.results["preprocess_step_result"]
        reference, response = keywords["referenceKeywords"], set(keywords["responseKeywords"])
        missing = [keyword for keyword in reference if keyword not in response]
        return coverage_reason("keywords", len(reference), len(reference) - len(missing), missing)

    return (
        create_scorer(
            id=ID,
            name="Keyword Coverage Scorer",
            description="Share of the input's keywords (stop words removed) that appear in the output.",
            version=VERSION,
            needs_answer=True,
        )
        .preprocess(preprocess)
        .analyze(analyze)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
