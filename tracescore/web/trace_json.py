"""A trace's spans, log records and paging as the read API's JSON documents.

Apart from the router (:mod:`tracescore.web.traces_api`) because the reader processes
(:mod:`tracescore.web.readers`) and the trace page (:mod:`tracescore.web.trace_view`) build
the same documents, and the router in turn is handed the reader processes: serialisers in the
router made the three modules import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracescore.spans import LogRecord, Span
from tracescore.store.codec import jsonable

SEEN = ("first_seen", "last_seen")
"""A trace summary's epoch-seconds fields, answered as RFC 3339 text under ``/api/v1``."""


@dataclass(frozen=True, slots=True)
class RunsPage:
    """Which page of a trace's runs: ``limit`` runs after the ``cursor`` a page gave."""

    limit: int
    cursor: str | None = None


def span_json(span: Span) -> dict[str, Any]:
    return {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "name": span.name,
        "kind": span.kind,
        "start_time_ns": span.start_time_ns,
        "end_time_ns": span.end_time_ns,
        "status": {"code": span.status_code, "message": span.status_message},
        "attributes": jsonable(span.attributes),
        "events": [
            {"name": e.name, "time_ns": e.time_ns, "attributes": jsonable(e.attributes)}
            for e in span.events
        ],
        "links": [
            {
                "trace_id": k.trace_id,
                "span_id": k.span_id,
                "trace_state": k.trace_state,
                "attributes": jsonable(k.attributes),
            }
            for k in span.links
        ],
        "resource": jsonable(span.resource.attributes),
        "scope": {
            "name": span.scope.name,
            "version": span.scope.version,
            "attributes": jsonable(span.scope.attributes),
        },
        "trace_state": span.trace_state,
        "flags": span.flags,
    }


def log_json(record: LogRecord) -> dict[str, Any]:
    return {
        "trace_id": record.trace_id,
        "span_id": record.span_id,
        "time_ns": record.time_ns,
        "observed_time_ns": record.observed_time_ns,
        "event_name": record.event_name,
        "severity_number": record.severity_number,
        "severity_text": record.severity_text,
        "body": jsonable(record.body),
        "attributes": jsonable(record.attributes),
        "resource": jsonable(record.resource.attributes),
        "scope": {"name": record.scope.name, "version": record.scope.version},
    }
