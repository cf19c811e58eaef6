"""Cutting oversized attribute values, wherever they are bounded: before they are stored
(``server.max_attribute_chars``, :mod:`tracescore.ingest.truncate`) and when a read of a trace
loads a span larger than its whole text limit (:mod:`tracescore.store.trace_cut`).

A cut value keeps its first ``limit`` characters (bytes for byte values) and ends with a marker
saying how much was dropped, so readers can tell: a cut JSON string no longer parses, and the
extractors then keep it as text with a warning instead of failing. Arrays and kvlists nested
deeper than :data:`MAX_DEPTH` are replaced by a marker too: no real instrumentation nests that
far, and the store's JSON encoder refuses values nested past 255 levels.
"""

from __future__ import annotations

from typing import Any

MARKER = "…[tracescore: truncated {dropped} of {total} characters]"
BYTES_MARKER = b"...[tracescore: truncated]"
MAX_DEPTH = 64
DEPTH_MARKER = f"[tracescore: nested deeper than {MAX_DEPTH} levels]"


def cut_value(value: Any, limit: int, depth: int = 0) -> tuple[Any, int]:
    """``value`` with every string or byte string over ``limit`` cut, and how many were cut."""
    kind = type(value)
    if depth >= MAX_DEPTH and kind in (list, dict):
        return DEPTH_MARKER, 1
    if kind is str:
        if len(value) <= limit:
            return value, 0
        return value[:limit] + MARKER.format(dropped=len(value) - limit, total=len(value)), 1
    if kind is bytes:
        return (value, 0) if len(value) <= limit else (value[:limit] + BYTES_MARKER, 1)
    if kind is list:
        items = [cut_value(item, limit, depth + 1) for item in value]
        return [item for item, _ in items], sum(count for _, count in items)
    if kind is dict:
        return cut_attributes(value, limit, depth + 1)
    return value, 0


_SCALARS = frozenset((int, float, bool, type(None)))


def cut_attributes(
    attributes: dict[str, Any], limit: int, depth: int = 0
) -> tuple[dict[str, Any], int]:
    """``attributes`` with every value over ``limit`` cut, in place, and how many were cut."""
    cut_count = 0
    for key, value in attributes.items():
        kind = type(value)
        if kind in _SCALARS or (isinstance(value, (str, bytes)) and len(value) <= limit):
            continue  # the common case: nothing to cut, no copy
        attributes[key], count = cut_value(value, limit, depth)
        cut_count += count
    return attributes, cut_count
