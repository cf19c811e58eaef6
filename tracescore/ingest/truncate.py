"""Cut oversized attribute values before they are stored (``server.max_attribute_chars``).

One exporter that puts a whole document or a base64 image into an attribute should not make
every later read of its trace (assembly, extraction, the dashboard) pay for it. A cut value
keeps its first ``limit`` characters (bytes for byte values) and ends with a marker saying how
much was dropped, so readers can tell: a cut JSON string no longer parses, and the extractors
then keep it as text with a warning instead of failing.

Arrays and kvlists nested deeper than :data:`MAX_DEPTH` are replaced by a marker too: no real
instrumentation nests that far, and the store's JSON encoder refuses values nested past 255
levels, which would otherwise turn one odd request into a storage failure and a retry loop.
"""

from __future__ import annotations

import logging
from typing import Any

from tracescore.ingest.decode import Decoded
from tracescore.spans import Attributes

log = logging.getLogger(__name__)

MARKER = "…[tracescore: truncated {dropped} of {total} characters]"
BYTES_MARKER = b"...[tracescore: truncated]"
MAX_DEPTH = 64
DEPTH_MARKER = f"[tracescore: nested deeper than {MAX_DEPTH} levels]"


def _cut(value: Any, limit: int, depth: int = 0) -> tuple[Any, int]:
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
        items = [_cut(item, limit, depth + 1) for item in value]
        return [item for item, _ in items], sum(count for _, count in items)
    if kind is dict:
        return _cut_attributes(value, limit, depth + 1)
    return value, 0


_SCALARS = frozenset((int, float, bool, type(None)))


def _cut_attributes(attributes: Attributes, limit: int, depth: int = 0) -> tuple[Attributes, int]:
    cut_count = 0
    for key, value in attributes.items():
        kind = type(value)
        if kind in _SCALARS or (isinstance(value, (str, bytes)) and len(value) <= limit):
            continue  # the common case: nothing to cut, no copy
        attributes[key], count = _cut(value, limit, depth)
        cut_count += count
    return attributes, cut_count


def truncate_decoded(decoded: Decoded, limit: int) -> int:
    """Cut, in place, every attribute value of ``decoded`` longer than ``limit`` or nested
    deeper than :data:`MAX_DEPTH`; return how many were cut.

    Span, event, link, log, resource and scope attributes are covered, as are span status
    messages and log bodies: everything a client controls whose size the body limit alone
    bounds.
    """
    count = 0
    seen: set[int] = set()  # resources and scopes are shared by many records

    def shared(attributes: Attributes) -> int:
        if id(attributes) in seen:
            return 0
        seen.add(id(attributes))
        return _cut_attributes(attributes, limit)[1]

    for span in decoded.spans:
        count += _cut_attributes(span.attributes, limit)[1]
        count += shared(span.resource.attributes) + shared(span.scope.attributes)
        for event in span.events:
            count += _cut_attributes(event.attributes, limit)[1]
        for link in span.links:
            count += _cut_attributes(link.attributes, limit)[1]
        span.status_message, cut = _cut(span.status_message, limit)
        count += cut
    for record in decoded.logs:
        count += _cut_attributes(record.attributes, limit)[1]
        count += shared(record.resource.attributes) + shared(record.scope.attributes)
        record.body, cut = _cut(record.body, limit)
        count += cut
    return count


def truncate_for_storage(decoded: Decoded, limit: int | None) -> None:
    """:func:`truncate_decoded` as both ingest paths apply it: only with a limit, logging cuts."""
    if limit is not None:
        cut = truncate_decoded(decoded, limit)
        if cut:
            log.info("truncated %d attribute values over %d characters", cut, limit)
