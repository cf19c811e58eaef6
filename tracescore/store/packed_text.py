"""A score's reason as the store keeps it: compressed with zstandard against a dictionary of the
code scorers' own phrasings.

A code scorer's reason is one of a few sentences with a number or a name filled in
(:mod:`tracescore.scorers.code.reasons` and the scorers' ``generate_reason``): 60 to 100 bytes
that were, with three to five scores a trace, the largest part of a score row (#49). Compressed
alone such a line barely shrinks; against a *raw content* dictionary holding those phrasings
it takes 12 to 32 bytes. The dictionary holds only the scorers' fixed words (no user's or
benchmark's content) and is part of the stored format: changing it means a new tag, with the
old one kept for rows already written. A judge's reason is free text; zstandard gains little
on it, and a reason it would not shrink is kept as it is.

A stored value is one tag byte then its body:

- ``0``: the UTF-8 text as it is (short text, text zstandard would not shrink, and a reason
  starting with one of :data:`PLAIN_PREFIXES`, which SQL matches: :func:`starts_with`);
- ``1``: a magicless zstandard frame (with its content size) against :data:`_DICTIONARY_1`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, LargeBinary, func, literal
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from tracescore.outcomes import FAILED_RUN_REASON
from tracescore.store.zstd_dictionary import DictionaryCoders, raw_dictionary

_RAW, _ZSTD_1 = 0, 1
_RAW_TAG, _ZSTD_1_TAG = bytes([_RAW]), bytes([_ZSTD_1])
_SMALL = 24
"""Text shorter than this is kept as it is: the frame's header would eat what it saves."""
PLAIN_PREFIXES = (FAILED_RUN_REASON,)
"""Reasons SQL tells apart by how they start (a run that failed before answering counts as an
error): never compressed, so their stored bytes start with the tag and the prefix."""

_FRAGMENTS = (
    "the question has no ",
    ": nothing to cover",
    " of the question are in the answer",
    " of the question in the answer; missing: ",
    "the answer shares ",
    "% of its character pairs with the question (a likeness of the two texts, not of the "
    "answer's quality)",
    "the answer's text matches the question's at ",
    " changes apart; a likeness of the two texts, not of the answer's quality)",
    "called no tool; expected the order ",
    "the model stopped at its length limit (finish reason ",
    "the answer ends mid-sentence: …",
    ", which the run never mentions",
    "answer names ",
    " was called with ",
    "answer says ",
    "the answer's sentiment is ",
    " against the reference's ",
    "every check passed (grounding, contradiction, entities, non_answer, truncation, "
    "language, leak)",
    "the answer's sentiment varies by 0.",
    " across its sentences (average +0.",
    " keywords",
    " words",
    " and ",
    " more",
)
"""The code scorers' fixed words, the most common last (zstandard reaches the end of a
dictionary at the lowest cost)."""
_DICTIONARY_1 = raw_dictionary(_FRAGMENTS)


_CODERS = DictionaryCoders(_DICTIONARY_1, source_size=1024)


def pack_text(text: str) -> bytes:
    """The stored form of a reason."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) < _SMALL or text.startswith(PLAIN_PREFIXES):
        return _RAW_TAG + data
    frame = _CODERS.compress(data)
    return _RAW_TAG + data if len(frame) >= len(data) else _ZSTD_1_TAG + frame


def unpack_text(stored: bytes) -> str:
    """The text of a :func:`pack_text` result."""
    data = bytes(stored)
    if data[0] == _RAW:
        body = data[1:]
    elif data[0] == _ZSTD_1:
        body = _CODERS.decompress(data[1:])
    else:
        raise ValueError(f"unknown packed text format {data[0]}")
    return body.decode("utf-8", "surrogatepass")


def starts_with(column: ColumnElement[Any], prefix: str) -> ColumnElement[bool]:
    """A :class:`PackedText` column's text starts with ``prefix`` (one of
    :data:`PLAIN_PREFIXES`), in SQL: its stored bytes start with the plain tag and the prefix."""
    assert prefix.startswith(PLAIN_PREFIXES), "only plain prefixes are kept uncompressed"
    start = _RAW_TAG + prefix.encode()
    return func.substr(column, 1, len(start)) == literal(start, LargeBinary)


class PackedText(TypeDecorator[str]):
    """Text stored by :func:`pack_text` (``BLOB`` / ``bytea``), handed in and out as ``str``."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> bytes | None:
        return None if value is None else pack_text(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else unpack_text(value)
