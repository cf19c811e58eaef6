"""JavaScript string semantics the ported scorers need to give Mastra's exact numbers.

Mastra measures strings in UTF-16 code units and matches whitespace with ECMAScript's ``\\s``;
Python counts code points and its ``\\s`` is a different set. These helpers restate the JS
behaviour once so each scorer module stays a plain transcription of its algorithm.
"""

from __future__ import annotations

import re

# ECMAScript WhiteSpace + LineTerminator: what JS `\s`, `trim()` and `split(/\s/)` use.
JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_WS_CLASS = f"[{JS_WHITESPACE}]"
JS_WS = re.compile(_WS_CLASS)
JS_WS_RUN = re.compile(f"{_WS_CLASS}+")
_TRIM = re.compile(f"^{_WS_CLASS}+|{_WS_CLASS}+\\Z")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def js_trim(text: str) -> str:
    return _TRIM.sub("", text)


def js_collapse_whitespace(text: str) -> str:
    """``text.replace(/\\s+/g, ' ').trim()``."""
    return js_trim(JS_WS_RUN.sub(" ", text))


def js_words(text: str) -> list[str]:
    """``text.split(/\\s+/).filter(w => w.length > 0)``."""
    return [w for w in JS_WS_RUN.split(text) if w]


def utf16_units(text: str) -> str:
    """The string re-spelt as UTF-16 code units: each astral character becomes its surrogate pair.

    Indexing, slicing and ``len`` on the result then behave like JavaScript's; BMP-only text
    (the usual case) is returned unchanged without copying.
    """
    if text.isascii():
        return text
    return _ASTRAL.sub(_surrogate_pair, text)


def _surrogate_pair(match: re.Match[str]) -> str:
    offset = ord(match.group()) - 0x10000
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


def js_length(text: str) -> int:
    """``text.length``: UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))
