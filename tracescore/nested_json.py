"""JSON text parsed to a bounded depth: what lies deeper is kept as its text.

Span text is the client's: a tool argument of ``{"a":`` ×260 is 3 KB of valid JSON that, parsed
whole, reaches every recursive reader after it (orjson writes 255 levels at most, the standard
library's ``json`` and Python's own walkers stop at the interpreter's recursion limit). A
document from this module nests at most :data:`MAX_DEPTH` containers; a deeper one stands as
the string of its JSON text, so nothing is dropped and every later step (scoring, storing,
the runs API, the trace page) handles a depth known in advance.

Depth is measured before parsing at C speed (the brackets outside strings, summed) where a
text holds more brackets than the limit, and only a text that is too deep is rewritten: nearly
every text is handed to orjson as it came.
"""

from __future__ import annotations

import re
from array import array
from itertools import accumulate
from typing import Any

import orjson

MAX_DEPTH = 64
"""Containers a parsed document nests at most: far more than any message list or tool schema
uses, far fewer than any reader's limit (orjson writes 255)."""

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'  # unrolled: 6x faster than (?:[^"\\]|\\.)*
_TOKENS = re.compile(rf"{_STRING}|[\[\]{{}}]")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
"""Brackets as signed bytes: +1 opens, -1 (0xff) closes."""
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))


def loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """``text`` parsed, its containers below ``max_depth`` levels kept as their JSON text;
    ``orjson.JSONDecodeError`` for text that is not JSON, as :func:`orjson.loads`."""
    if text.count("[") + text.count("{") > max_depth and depth(text) > max_depth:
        text = _cut(text, max_depth)
    return orjson.loads(text)


def depth(text: str) -> int:
    """How deep the containers of JSON ``text`` nest (0 for a scalar)."""
    # Escapes out first (a backslash pair, then an escaped quote), so that every quote left
    # opens or closes a string: the text between them alternates outside, inside. All in C.
    unescaped = text.replace("\\\\", "").replace('\\"', "")
    outside_strings = "".join(unescaped.split('"')[::2]).encode()
    steps = array("b", outside_strings.translate(_STEPS, _NOT_BRACKETS))
    return max(accumulate(steps, initial=0))


def _cut(text: str, max_depth: int) -> str:
    """``text`` with each container that opens at level ``max_depth + 1`` replaced by a JSON
    string holding its text."""
    pieces: list[str] = []
    level = 0
    kept_to = 0
    start = -1
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket[0] == '"':
            continue
        if bracket in "[{":
            level += 1
            if level == max_depth + 1:
                start = token.start()
        else:
            level -= 1
            if level == max_depth and start >= 0:
                pieces += [text[kept_to:start], orjson.dumps(text[start : token.end()]).decode()]
                kept_to, start = token.end(), -1
    pieces.append(text[kept_to:])
    return "".join(pieces)
