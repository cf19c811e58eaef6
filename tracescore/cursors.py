"""The REST API's paging cursors: opaque to clients, the sort key of a page's last row inside.

Apart from :mod:`tracescore.restapi` because the store's paged reads make and read them, and
the store is imported by the scoring and unpacking processes, which serve no routes: through
``restapi`` each of them loaded FastAPI and its OpenAPI models (12 MB of memory a process).
"""

from __future__ import annotations

import base64
import math


def encode_cursor(*parts: str) -> str:
    """An opaque ``next_cursor``: the sort key of a page's last row."""
    return base64.urlsafe_b64encode("|".join(parts).encode()).decode()


NOT_A_CURSOR = "cursor: not a next_cursor this route gave"
"""The error for a cursor this service did not give (a route's parts that do not parse too)."""


def cursor_int(part: str) -> int:
    """A cursor's integer part (an offset, a size, nanoseconds) as a BIGINT column holds it;
    ValueError for anything else: a client may hand back any text as a cursor."""
    if part.isascii() and part.isdigit() and int(part) < 2**63:
        return int(part)
    raise ValueError(NOT_A_CURSOR)


def cursor_hex(part: str) -> str:
    """A cursor's id part (a trace or score id), hex as the id columns bind it; ValueError for
    anything else, which would otherwise fail the query."""
    try:
        bytes.fromhex(part)
    except ValueError:
        raise ValueError(NOT_A_CURSOR) from None
    return part


def cursor_float(part: str) -> float:
    """A cursor's number part (seconds since the epoch), finite; ValueError for anything else."""
    try:
        number = float(part)
    except ValueError:
        raise ValueError(NOT_A_CURSOR) from None
    if not math.isfinite(number):
        raise ValueError(NOT_A_CURSOR)
    return number


def decode_cursor(cursor: str, parts: int) -> list[str]:
    """The ``parts`` of an :func:`encode_cursor` value; ValueError for anything else."""
    try:
        found = base64.urlsafe_b64decode(cursor.encode()).decode().split("|", parts - 1)
    except (ValueError, UnicodeDecodeError):
        found = []
    if len(found) != parts:
        raise ValueError(NOT_A_CURSOR)
    return found
