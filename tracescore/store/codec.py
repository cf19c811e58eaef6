"""Typed JSON for OTLP attribute values, so ``Span -> store -> Span`` round-trips exactly.

JSON already keeps most OTLP types apart when written by orjson: strings, booleans, ints
(``1``) and doubles (``1.0``, shortest round-trip form), arrays and kvlists (objects). Only two
kinds of value need a tag, and only they pay for one:

- ``bytes`` become ``{"$b": "<base64>"}``;
- non-finite doubles (NaN, ±Infinity, which JSON cannot spell) become ``{"$f": "nan"}``.

A kvlist that itself looks like a tag (a single key among the tag names) is wrapped as
``{"$m": {...}}`` so decoding stays unambiguous.

Both directions stay at orjson speed in the common case: encoding dumps first and only walks
the value (the slow, exact path) when the output holds a ``"$`` or a ``null`` — the only traces
bytes, NaN (which orjson writes as ``null``) or a tag-like kvlist can leave; decoding only walks
when the text holds a ``"$``.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import orjson

from tracescore.spans import Attributes, AttributeValue

_BYTES, _FLOAT, _MAP = "$b", "$f", "$m"
_TAGS = frozenset((_BYTES, _FLOAT, _MAP))


def _needs_tags(value: Any) -> bool:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return False
    if kind is float:
        return not math.isfinite(value)
    if kind is bytes:
        return True
    if kind is list:
        return any(_needs_tags(item) for item in value)
    if kind is dict:
        return (len(value) == 1 and next(iter(value)) in _TAGS) or any(
            _needs_tags(item) for item in value.values()
        )
    return True


def _tagged(value: Any) -> Any:
    kind = type(value)
    if kind is bytes:
        return {_BYTES: base64.b64encode(value).decode("ascii")}
    if kind is float and not math.isfinite(value):
        return {_FLOAT: repr(value)}
    if kind is list:
        return [_tagged(item) for item in value]
    if kind is dict:
        inner = {key: _tagged(item) for key, item in value.items()}
        return {_MAP: inner} if len(inner) == 1 and next(iter(inner)) in _TAGS else inner
    return value


def jsonable(value: AttributeValue | Attributes) -> Any:
    """The value with bytes and non-finite doubles tagged, ready for any JSON serializer."""
    return _tagged(value) if _needs_tags(value) else value


def _bytes_placeholder(value: Any) -> Any:
    if isinstance(value, bytes):  # tagged properly by the slow path this output triggers
        return {_BYTES: ""}
    raise TypeError(f"{type(value).__name__} is not an OTLP attribute value")


def encode(value: AttributeValue | Attributes) -> str:
    """The typed JSON text of an attribute value or of a whole attribute map."""
    fast = orjson.dumps(value, default=_bytes_placeholder)
    if b'"$' in fast or b"null" in fast:
        return orjson.dumps(jsonable(value)).decode()
    return fast.decode()


def _untagged(value: Any) -> Any:
    if type(value) is list:
        return [_untagged(item) for item in value]
    if type(value) is dict:
        if len(value) == 1:
            key, inner = next(iter(value.items()))
            if key == _BYTES:
                return base64.b64decode(inner)
            if key == _FLOAT:
                return float(inner)
            if key == _MAP:
                return {k: _untagged(v) for k, v in inner.items()}
        return {key: _untagged(item) for key, item in value.items()}
    return value


def decode(text: str | bytes | None) -> Any:
    """Inverse of :func:`encode`; ``None`` (an absent column) decodes to ``None``."""
    if text is None:
        return None
    value = orjson.loads(text)
    if '"$' in text if isinstance(text, str) else b'"$' in text:
        return _untagged(value)
    return value
