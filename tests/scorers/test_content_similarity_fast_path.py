"""content-similarity's compiled comparison and jstext's shortcuts give the plain definitions'
results.

The comparison (``_dice.pyx``) re-spells text as UTF-16 code units with ECMAScript whitespace
left out and counts shared bigrams by sorting; whitespace collapsing returns a printable,
single-spaced text as it is. Both are checked against ``string-similarity``'s algorithm written
out on strings (``dice.py``, which builds without a C compiler run instead), and against
ECMAScript's whitespace regular expressions, on texts full of the characters where JavaScript
and Python disagree.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.scorers import long_cases
from tests.support.parity_support import mastra_run
from tracescore.scorers.code._dice import compare_two_strings
from tracescore.scorers.code.dice import compare_two_strings as reference_dice
from tracescore.scorers.code.jstext import JS_WHITESPACE, js_collapse_whitespace
from tracescore.scorers.utils import run_input_text, run_output_text

JS_SPACE_RUN = re.compile(f"[{JS_WHITESPACE}]+")
JS_TRIM = re.compile(f"^[{JS_WHITESPACE}]+|[{JS_WHITESPACE}]+\\Z")


# Whitespace of JavaScript only (U+FEFF), of Python only (U+001C..U+001F, U+0085), of both;
# astral characters (two code units), lone surrogates, a zero-width joiner (unprintable).
# NUL (bigram code 0) and printable texts, which whitespace collapsing returns as they are.
ALPHABET = "ab ab  xyz.\t\n\u00a0\u2003\u3000\ufeff\x1c\x1f\x85é😀🎉\ud800\udfff\u200d\x00"
texts = st.one_of(
    st.text(alphabet=ALPHABET, max_size=40),
    st.text(alphabet=ALPHABET, min_size=300, max_size=900),  # long: many repeated bigrams
    st.text(alphabet="ab é😀 ", max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(texts, texts, st.booleans())
def test_compare_two_strings_matches_the_algorithm(first: str, second: str, related: bool) -> None:
    if related:  # mostly shared bigrams, as with an answer close to its question
        second = first[: len(second)] + second[:20]
    assert compare_two_strings(first, second) == reference_dice(first, second)
    assert compare_two_strings(second, first) == reference_dice(second, first)
    assert compare_two_strings(first, first + " ") == 1.0


def test_compare_two_strings_on_the_benchmark_texts() -> None:
    for case in long_cases(1):
        run = mastra_run(case)
        first, second = run_input_text(run["input"]), run_output_text(run["output"])
        assert len(first) + len(second) > 10_000
        assert compare_two_strings(first, second) == reference_dice(first, second)
        assert compare_two_strings(first.lower(), second.lower()) == reference_dice(
            first.lower(), second.lower()
        )


@settings(max_examples=500, deadline=None)
@given(st.one_of(texts, st.text(max_size=50)))
def test_whitespace_helpers_match_ecmascript(text: str) -> None:
    assert js_collapse_whitespace(text) == JS_TRIM.sub("", JS_SPACE_RUN.sub(" ", text))


def test_bigram_counts_at_the_edges() -> None:
    """Units at the ends of the code unit range (NUL, U+FFFF, surrogates), a string whose bigrams
    are all the same, and texts of more distinct units than the counting table takes (over 1,024
    CJK characters: sorted and merged instead), whose bigram codes differ in every radix digit."""
    cjk = "".join(chr(0x4E00 + (i * 7919) % 3000) for i in range(6000))
    for first, second in [
        (cjk, cjk[::-1][:4000] + cjk[:1000]),
        (cjk[:3000] + "\U0001f600ab\uffff", "\x00" + cjk[1500:]),
        ("\x00\x00\uffff\uffff\x00", "\uffff\x00\x00"),
        ("\U0010ffff\U00010000a", "\U00010000a\U0010ffff"),
        ("a" * 5000, "a" * 2500 + "b"),
        ("\ufffe\uffff" * 700, "\uffff\ufffe" * 300),
    ]:
        assert compare_two_strings(first, second) == reference_dice(first, second)
