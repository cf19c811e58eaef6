"""``string-similarity``'s ``compareTwoStrings`` written out plainly, on strings.

The definition the compiled comparison (``_dice.pyx``) must equal, and what content-similarity
runs where the package was built without a C compiler (``tracescore.compiled``): each step is a
whole-string operation, so it reads like the JavaScript it ports, and a 10,000-character pair
takes milliseconds instead of the compiled loop's tens of microseconds.
"""

from __future__ import annotations

import re
from collections import Counter

from tracescore.scorers.code.jstext import JS_WHITESPACE, utf16_units

_JS_SPACE_RUN = re.compile(f"[{JS_WHITESPACE}]+")


def compare_two_strings(first: str, second: str) -> float:
    """Dice coefficient of the bigrams of UTF-16 code units, ECMAScript whitespace removed: twice
    the shared bigrams (each of the second string's takes one left of the first's) over all."""
    first, second = _JS_SPACE_RUN.sub("", first), _JS_SPACE_RUN.sub("", second)
    if first == second:
        return 1.0
    first, second = utf16_units(first), utf16_units(second)
    if len(first) < 2 or len(second) < 2:
        return 0.0
    shared = Counter(first[i : i + 2] for i in range(len(first) - 1)) & Counter(
        second[i : i + 2] for i in range(len(second) - 1)
    )
    return 2.0 * sum(shared.values()) / (len(first) + len(second) - 2)
