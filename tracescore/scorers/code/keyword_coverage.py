"""keyword-coverage: share of the input's keywords that the output repeats.

A port of Mastra's ``createKeywordCoverageScorer`` with the keyword extraction of
``keyword-extractor`` 0.0.28 (English SMART stop list, digits removed, lowercased, no stemming).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from tracescore.scorers.base import Scorer, StepContext, create_scorer
from tracescore.scorers.code.jstext import js_trim, js_words
from tracescore.scorers.utils import run_input_text, run_output_text

ID = "keyword-coverage-scorer"
VERSION = "1"

_HTML_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"https?://")
# keyword-extractor deletes these anywhere in a word, and a "'" only at its very start or end.
_PUNCTUATION = str.maketrans("", "", '.,;!?():"\u201c\u201d\u2018\u2019')
_LONE_SYMBOLS = frozenset("_@&#")  # deleted when the word is just one of them


@cache
def stop_words() -> frozenset[str]:
    """The 571-word SMART English stop list ``keyword-extractor`` uses."""
    text = resources.files("tracescore.scorers").joinpath("data/smart_stopwords_en.txt").read_text("utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def extract_keywords(text: str) -> list[str]:
    """Keywords in first-seen order, as ``keyword_extractor.extract`` returns them."""
    text = js_trim(_HTML_TAG.sub("", text)) if text else ""
    if not text:
        return []
    stop = stop_words()
    keywords: dict[str, None] = {}
    # A token's keyword depends on the token alone, so each distinct token is read once.
    for token in dict.fromkeys(js_words(text)):
        is_url = "http" in token and _URL.search(token) is not None
        word = token if is_url else _strip_punctuation(token)
        if word in _LONE_SYMBOLS:
            word = ""
        if word.isdigit() and word.isascii():  # JS /\d/ is ASCII digits only
            word = ""
        if not word:
            continue
        lowered = word.lower()
        if lowered not in stop:
            keywords.setdefault(word if is_url else lowered, None)
    return list(keywords)


def _strip_punctuation(token: str) -> str:
    word = token.translate(_PUNCTUATION)
    if token.startswith("'"):
        word = word[1:]
    if len(token) > 1 and token.endswith("'"):
        word = word[:-1]
    return word


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
        counts = ctx.results["analyze_step_result"]
        if not counts["totalKeywordsLength"]:
            return 1.0
        return counts["matchedKeywordsLength"] / counts["totalKeywordsLength"]

    return (
        create_scorer(
            id=ID,
            name="Keyword Coverage Scorer",
            description="Share of the input's keywords (stop words removed) that appear in the output.",
            version=VERSION,
        )
        .preprocess(preprocess)
        .analyze(analyze)
        .generate_score(generate_score)
    )
