"""Text both databases can store: NUL characters and unpaired surrogates replaced, and counted.

PostgreSQL refuses a NUL character in ``text`` and ``varchar`` columns (and a lone surrogate
in any text, which is not UTF-8 at all); SQLite stores NUL but its driver cannot encode a lone
surrogate. Clients send both: NUL from C strings and binary data put into attributes, lone
surrogates from JavaScript strings cut in the middle of a pair (OTLP/JSON ``"\\ud83d"``).
Stored as they came, one such value failed the whole write it was in, and a write retried
forever stalls everything behind it. So every text that reaches a column is passed through a
:class:`TextGuard` first, on both databases alike: each offending character becomes U+FFFD
(the Unicode replacement character), and the guard counts the values it changed for the
``tracescore_text_replaced`` metric. Nothing is dropped.

Values inside JSON text (attribute maps, events, links, log bodies, score steps) keep their NUL
characters: JSON spells one ``\\u0000``, which both databases store, and attribute values
round-trip exactly. Only unpaired surrogates, which no UTF-8 JSON can hold, are replaced there.

The checks are on the hot path of every stored span, so the common case costs a C-speed scan:
``str.isascii`` plus ``in`` for plain text; JSON text is checked by its encoder, which refuses
an unpaired surrogate.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

import orjson
from sqlalchemy import JSON, String, Table

from tracescore.store import codec
from tracescore.store.column_types import PackedJSON
from tracescore.store.packed_text import PackedText

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def _clean(value: str) -> str | None:
    """``value`` with unstorable characters replaced, or None when it has none."""
    if value.isascii():
        if "\x00" not in value:
            return None
    elif _UNSTORABLE.search(value) is None:
        return None
    return _UNSTORABLE.sub(REPLACEMENT, value)


class TextGuard:
    """Makes the text of one write storable, counting the values it had to change.

    Not thread-safe: use one per write.
    """

    __slots__ = ("replaced",)

    def __init__(self) -> None:
        self.replaced = 0
        """How many text values (strings, map keys included) were changed."""

    def text(self, value: str) -> str:
        cleaned = _clean(value)
        if cleaned is None:
            return value
        self.replaced += 1
        return cleaned

    def value(self, value: Any) -> Any:
        """A copy of any JSON-like value (score steps) with every string made storable."""
        return self._walk(value, self.text)

    def json(self, value: Any) -> str:
        """The store's typed JSON text (:func:`codec.encode`) of ``value``, with unpaired
        surrogates replaced (NUL characters are kept: JSON text holds them)."""
        try:
            return codec.encode(value)
        except orjson.JSONEncodeError:  # a lone surrogate (orjson refuses to write one)
            return codec.encode(self._walk(value, self._without_surrogates))

    def _without_surrogates(self, value: str) -> str:
        cleaned, count = _SURROGATES.subn(REPLACEMENT, value)
        self.replaced += count > 0
        return cleaned

    def _walk(self, value: Any, text: Callable[[str], str]) -> Any:
        kind = type(value)
        if kind is str:
            return text(value)
        if kind is list:
            return [self._walk(item, text) for item in value]
        if kind is dict:
            return {text(key): self._walk(item, text) for key, item in value.items()}
        return value


class ColumnFit:
    """Makes rows of one table storable on both databases: text columns through a
    :class:`TextGuard` and cut to their length (PostgreSQL refuses a longer ``varchar``; SQLite
    would store it, so both cut alike, ending with ``…``), JSON columns walked only when orjson
    refuses them (an unpaired surrogate; a NUL inside JSON text is spelled ``\\u0000``, which
    both databases store). A row a client wrote (a score of its agent's name, a verdict's
    comment) is then stored as both databases would, instead of failing its write for ever.
    """

    def __init__(self, table: Table, produced_here: Collection[str] = ()) -> None:
        """``produced_here``: columns whose values tracescore makes itself (hex ids, fixed
        words), with nothing to check."""
        self.texts: list[tuple[str, int | None]] = []
        self.documents: list[str] = []
        for column in table.columns:
            if column.name in produced_here:
                continue
            kind = getattr(
                column.type, "impl_instance", column.type
            )  # SQLModel's AutoString wraps a String
            if isinstance(kind, JSON) or isinstance(column.type, PackedJSON):
                self.documents.append(column.name)
            elif isinstance(kind, String):  # Text too
                self.texts.append((column.name, kind.length))
            elif isinstance(column.type, PackedText):
                self.texts.append((column.name, None))

    def row(self, row: Mapping[str, Any], guard: TextGuard) -> dict[str, Any]:
        """A copy of ``row`` that both databases accept."""
        fitted = dict(row)
        for name, length in self.texts:
            value = fitted.get(name)
            if isinstance(value, str):
                fitted[name] = fit_text(value, length, guard)
        for name in self.documents:
            if (document := fitted.get(name)) is not None:
                try:
                    orjson.dumps(document, option=orjson.OPT_NON_STR_KEYS)
                except orjson.JSONEncodeError:
                    fitted[name] = guard.value(document)
        return fitted


def fit_text(value: str, length: int | None, guard: TextGuard) -> str:
    """``value`` made storable by ``guard`` and cut to ``length`` (ending with ``…``)."""
    value = guard.text(value)
    return value if length is None or len(value) <= length else value[: length - 1] + "…"
