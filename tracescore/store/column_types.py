"""Column types that store values compactly while the code above the store keeps its own form.

OTLP ids are bytes that the collector and its API show as lowercase hex; stored as text they
take twice their size in every row and every index that holds them. :class:`HexId` keeps them
as bytes in the database (``BLOB`` / ``bytea``) and hands hex strings in and out, so queries
and callers never convert by hand.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import LargeBinary
from sqlalchemy.engine import Dialect
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
