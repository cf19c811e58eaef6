"""Column types that store values compactly while the code above the store keeps its own form.

OTLP ids are bytes that the collector and its API show as lowercase hex; stored as text they
take twice their size in every row and every index that holds them. :class:`HexId` keeps them
as bytes in the database (``BLOB`` / ``bytea``) and hands hex strings in and out, so queries
and callers never convert by hand.

:class:`UtcTime` keeps a moment as integer microseconds since the epoch (8 bytes, where
SQLite's datetime text took 26 and every index on it as much again) and hands back aware UTC
datetimes on both databases, so no reader adds a time zone by hand. :class:`PackedJSON` keeps
a JSON document zlib-compressed once it is long enough to gain from it (a judge's prompts and
verdicts, ``consistency``'s checks), as its plain UTF-8 text below that.
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import BigInteger, ColumnElement, LargeBinary, String
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeDecorator


class HexId(TypeDecorator[str]):
    """A hex id (trace, span, record hash) stored as its bytes.

    A value that is not hex is refused at the bind, where its caller can still say which input
    was wrong, rather than stored in a form no read would match.
    """

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> bytes | None:
        if value is None:
            return None
        try:
            return bytes.fromhex(value)
        except ValueError:
            raise ValueError(f"not a hex id: {value[:64]!r}") from None

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return bytes(value).hex()


class hex_text(FunctionElement[str]):
    """A :class:`HexId` column's value as lowercase hex text, in SQL: what a table that keeps
    ids as text (feedback, written by clients) is joined on. A join then looks up the text
    table's index with the computed value."""

    type = String()
    inherit_cache = True

    def __init__(self, column: ColumnElement[str]) -> None:
        super().__init__(column)


@compiles(hex_text, "postgresql")
def _hex_text_postgresql(element: hex_text, compiler: SQLCompiler, **kw: Any) -> str:
    return f"encode({compiler.process(element.clauses, **kw)}, 'hex')"


@compiles(hex_text)
def _hex_text(element: hex_text, compiler: SQLCompiler, **kw: Any) -> str:
    return f"lower(hex({compiler.process(element.clauses, **kw)}))"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def utc_micros(moment: datetime) -> int:
    """``moment`` as microseconds since the epoch; a naive datetime is taken as UTC (every time
    tracescore stores is)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


def from_utc_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


class UtcTime(TypeDecorator[datetime]):
    """A moment stored as integer microseconds since the epoch, read back as an aware UTC
    datetime on both databases.

    Comparisons bind through the column's type, so ``column >= moment`` compares integers; SQL
    that works on the value itself (bucketing by time) divides the integer.
    """

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> int | None:
        return None if value is None else utc_micros(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return None if value is None else from_utc_micros(int(value))


PACK_FROM = 200
"""Documents of this many bytes or more are stored compressed: below it zlib's header and
a short document's few repeats make the compressed form no smaller."""
_PACKED = 0x78
"""The first byte of zlib's output (its header, at the default window); JSON text never starts
with ``x``, so a stored value says by itself which form it is in."""


def pack_json(value: Any) -> bytes:
    """``value`` as stored by :class:`PackedJSON`: JSON text, compressed when long. orjson's
    ``JSONEncodeError`` (an unpaired surrogate) reaches the caller, which cleans and retries."""
    text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    return zlib.compress(text, 6) if len(text) >= PACK_FROM else text


def unpack_json(stored: bytes) -> Any:
    data = bytes(stored)
    return orjson.loads(zlib.decompress(data) if data[:1] == bytes((_PACKED,)) else data)


class PackedJSON(TypeDecorator[Any]):
    """A JSON document stored as bytes, compressed from :data:`PACK_FROM` bytes: what a score's
    steps hold cannot be computed again (a judge's calls cost money and are not
    reproducible) but is read only when one score is shown, so it is kept small rather than
    queryable in SQL."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> bytes | None:
        return None if value is None else pack_json(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else unpack_json(value)
