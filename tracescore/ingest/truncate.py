"""Cut oversized attribute values before they are stored (``server.max_attribute_chars``).

One exporter that puts a whole document or a base64 image into an attribute should not make
every later read of its trace (assembly, extraction, the dashboard) pay for it. How a value is
cut (its first ``limit`` characters and a marker; arrays and kvlists nested deeper than
``MAX_DEPTH`` replaced by a marker, which the store's JSON encoder would otherwise refuse,
turning one odd request into a storage failure and a retry loop) is :mod:`tracescore.value_cut`,
which reads of a trace share (:mod:`tracescore.store.trace_cut`).
"""

from __future__ import annotations

import logging

from tracescore.ingest.decode import Decoded
from tracescore.spans import Attributes
from tracescore.value_cut import cut_attributes, cut_value

log = logging.getLogger(__name__)


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
        return cut_attributes(attributes, limit)[1]

    for span in decoded.spans:
        count += cut_attributes(span.attributes, limit)[1]
        count += shared(span.resource.attributes) + shared(span.scope.attributes)
        for event in span.events:
            count += cut_attributes(event.attributes, limit)[1]
        for link in span.links:
            count += cut_attributes(link.attributes, limit)[1]
        span.status_message, cut = cut_value(span.status_message, limit)
        count += cut
    for record in decoded.logs:
        count += cut_attributes(record.attributes, limit)[1]
        count += shared(record.resource.attributes) + shared(record.scope.attributes)
        record.body, cut = cut_value(record.body, limit)
        count += cut
    return count


def truncate_for_storage(decoded: Decoded, limit: int | None) -> None:
    """:func:`truncate_decoded` as both ingest paths apply it: only with a limit, logging cuts."""
    if limit is not None:
        cut = truncate_decoded(decoded, limit)
        if cut:
            log.info("truncated %d attribute values over %d characters", cut, limit)
