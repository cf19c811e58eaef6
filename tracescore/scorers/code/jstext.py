"""JavaScript string semantics the ported scorers need to give Mastra's exact numbers.

Mastra measures strings in UTF-16 code units and matches whitespace with ECMAScript's ``\\s``;
Python counts code points and its whitespace is a different set. These helpers restate the JS
behaviour once so each scorer module stays a plain transcription of its algorithm.

Python's whitespace (``str.split()``, ``str.strip()``) differs from ECMAScript's in six characters
only: U+001C..U+001F and U+0085 are whitespace in Python alone, U+FEFF in JavaScript alone. Text
free of them — nearly all text — takes the fast built-in string methods; the rest goes through a
regular expression of the exact JS set.
"""

from __future__ import annotations

import re

# ECMAScript WhiteSpace + LineTerminator: what JS `\s`, `trim()` and `split(/\s/)` use.
JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_WS_CLASS = f"[{JS_WHITESPACE}]"
_WS_RUN = re.compile(f"{_WS_CLASS}+")
_TRIM = re.compile(f"^{_WS_CLASS}+|{_WS_CLASS}+\\Z")
_WHITESPACE_DISAGREEMENTS = ("\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\ufeff")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _python_whitespace_agrees(text: str) -> bool:
    return not any(ch in text for ch in _WHITESPACE_DISAGREEMENTS)


def js_trim(text: str) -> str:
    """``text.trim()``."""
    return text.strip() if _python_whitespace_agrees(text) else _TRIM.sub("", text)


def js_collapse_whitespace(text: str) -> str:
    """``text.replace(/\\s+/g, ' ').trim()``."""
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text  # its only whitespace is single spaces between words (the rest is unprintable)
    if _python_whitespace_agrees(text):
        return " ".join(text.split())
    return js_trim(_WS_RUN.sub(" ", text))


def js_words(text: str) -> list[str]:
    """``text.split(/\\s+/).filter(w => w.length > 0)`` (also ``split(/\\s/)`` without empties)."""
    return (
        text.split() if _python_whitespace_agrees(text) else [w for w in _WS_RUN.split(text) if w]
    )


def utf16_units(text: str) -> str:
    """The string re-spelt as UTF-16 code units: each astral character becomes its surrogate pair.

    Indexing, slicing and ``len`` on the result then behave like JavaScript's; BMP-only text
    (the usual case) is returned unchanged.
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
