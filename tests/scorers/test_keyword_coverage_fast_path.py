"""keyword-coverage's whole-text keyword extraction gives ``keyword-extractor``'s keywords.

``extract_keywords`` reads the distinct tokens joined one a line and deletes punctuation, drops
edge apostrophes and lowers letters with whole-string operations. Here it is checked against
``keyword-extractor`` 0.0.28's ``extract`` written out token by token from its JavaScript, on
texts full of what its rules act on: punctuation inside and around words, apostrophes, URLs,
digits, lone symbols, stop words, case, HTML tags and JavaScript-only whitespace.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.scorers import long_cases
from tests.support.parity_support import load_cases, mastra_run
from tracescore.scorers.code.jstext import JS_WHITESPACE
from tracescore.scorers.code.keyword_coverage import extract_keywords, stop_words
from tracescore.scorers.utils import run_input_text, run_output_text

JS_SPACE = re.compile(f"[{JS_WHITESPACE}]")
JS_TRIM = re.compile(f"^[{JS_WHITESPACE}]+|[{JS_WHITESPACE}]+\\Z")
TAG = re.compile(r"(<([^>]+)>)", re.IGNORECASE)
URL = re.compile(r"https?://.*[\r\n]*")
PUNCTUATION = re.compile(r"\.|,|;|!|\?|\(|\)|:|\"|\A'|'\Z|\u201c|\u201d|\u2018|\u2019")
LONE = re.compile(r"_|@|&|#")
DIGIT = re.compile(r"[0-9]")


def reference_keywords(text: str) -> list[str]:
    """``extract(text, {remove_digits: true, return_changed_case: true})``, deduplicated in order."""
    text = JS_TRIM.sub("", TAG.sub("", text)) if text else ""
    if not text:
        return []
    keywords: dict[str, None] = {}
    for token in JS_SPACE.split(text):
        is_url = URL.search(token) is not None
        word = token if is_url else PUNCTUATION.sub("", token)
        if len(word) == 1:  # a lone symbol is one code unit: astral characters are two
            word = LONE.sub("", word)
        if word and len(DIGIT.findall(word)) == len(word):
            word = ""
        if word and word.lower() not in stop_words():
            keywords.setdefault(word if is_url else word.lower(), None)
    return list(keywords)


def test_recorded_keyword_cases_and_benchmark_texts() -> None:
    texts = [
        text
        for case in [*load_cases("sample.jsonl"), *long_cases(1)]
        if case["scorer"] == "keyword-coverage"
        for run in [mastra_run(case)]
        for text in (run_input_text(run["input"]), run_output_text(run["output"]))
    ]
    assert len(texts) > 20 and any(len(text) > 9000 for text in texts)
    for text in texts:
        assert extract_keywords(text) == reference_keywords(text), text


WORDS = [
    "the",
    "and",
    "Hello",
    "a's",
    "ain't",
    "don't",
    "state-of-the-art",
    "React.js",
    "Kubernetes",
    "café",
    "İstanbul",
    "ΣΟΦΟΣ",
    "2024",
    "3.5",
    "555-1234",
    "²",
    "_",
    "@",
    "&",
    "#",
    "__",
    "a",
    "I",
    "https://Example.com/Docs.",
    "http://x.y/(a)",
    "xhttps://q",
    "http:",
    "user@example.com",
    "<p>",
    "</b>",
    "<",
    "'",
    "''",
    "'quoted'",
    "it's'",
    "'.",
    ".'",
    "’",
    "‘x’",
    "“x”",
    "😀",
    "é",
    "K",
]
AFFIXES = [
    "",
    "",
    "",
    ".",
    ",",
    ";",
    "!",
    "?",
    "(",
    ")",
    ":",
    '"',
    "'",
    "''",
    "’",
    "...",
    "!?",
    "\u201c",
]
SEPARATORS = [
    " ",
    " ",
    " ",
    "  ",
    "\n",
    "\t",
    "\u00a0",
    "\u2003",
    "\ufeff",
    "\x1c",
    "\x85",
    "",
    "<br>",
]
part = st.tuples(
    st.sampled_from(AFFIXES),
    st.sampled_from(WORDS),
    st.sampled_from(AFFIXES),
    st.sampled_from(SEPARATORS),
)
texts = st.one_of(
    st.lists(part, max_size=40).map(lambda parts: "".join("".join(p) for p in parts)),
    st.text(max_size=60),
)


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_generated_texts(text: str) -> None:
    assert extract_keywords(text) == reference_keywords(text)
