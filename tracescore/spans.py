"""The telemetry records every stage shares: spans and log records as decoded from OTLP.

These are plain slotted dataclasses rather than pydantic models because the ingest hot path
builds tens of thousands of them per second. Attribute values keep their OTLP types as Python
values: ``str``, ``int``, ``float``, ``bool``, ``bytes``, ``list`` (OTLP arrays) and ``dict``
(OTLP kvlists). Ids are lowercase hex strings (32 characters for traces, 16 for spans), the
form in which they are stored, shown and queried everywhere in tracescore.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias

EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The GenAI conventions' evaluation event: the scores tracescore re-emits, and human feedback
sent over OTLP, are events (span events, log records) of this name."""

OWN_EVALUATIONS_SCOPE = "tracescore.emit"
"""The instrumentation scope of the evaluations tracescore re-emits. Where they come back to a
collector (an OpenTelemetry Collector that fans out to tracescore too), ingest acknowledges and
drops them: they hold what the scores table holds already, and a new span in a scored trace
would have it scored, and the score emitted, again and again."""

AttributeValue: TypeAlias = str | int | float | bool | bytes | list[Any] | dict[str, Any] | None
Attributes: TypeAlias = dict[str, AttributeValue]

# OTLP enums, as integers the way the wire and OTLP/JSON carry them.
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2


@dataclass(slots=True)
class Resource:
    """The entity that produced the telemetry; shared by every span of one resource block."""

    attributes: Attributes = field(default_factory=dict)

    @property
    def service_name(self) -> str:
        name = self.attributes.get("service.name")
        return name if isinstance(name, str) and name else "unknown_service"


@dataclass(slots=True)
class Scope:
    """The instrumentation library that produced the telemetry."""

    name: str = ""
    version: str = ""
    attributes: Attributes = field(default_factory=dict)


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Attributes = field(default_factory=dict)


@dataclass(slots=True)
class SpanLink:
    trace_id: str
    span_id: str
    trace_state: str = ""
    attributes: Attributes = field(default_factory=dict)


@dataclass(slots=True)
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_time_ns: int
    end_time_ns: int
    attributes: Attributes
    resource: Resource
    scope: Scope
    events: list[SpanEvent] = field(default_factory=list)
    links: list[SpanLink] = field(default_factory=list)
    status_code: int = STATUS_UNSET
    status_message: str = ""
    trace_state: str = ""
    flags: int = 0

    @property
    def service_name(self) -> str:
        return self.resource.service_name

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_time_ns - self.start_time_ns)


@dataclass(slots=True)
class LogRecord:
    """An OTLP log record. GenAI instrumentations put message content in these (as events)."""

    time_ns: int
    observed_time_ns: int
    trace_id: str | None
    span_id: str | None
    event_name: str
    severity_number: int
    severity_text: str
    body: AttributeValue
    attributes: Attributes
    resource: Resource
    scope: Scope
    flags: int = 0


@dataclass(slots=True)
class Trace:
    """All spans and log records of one trace id, as the extractors receive them."""

    trace_id: str
    spans: list[Span] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    cut: str | None = None
    """Why only part of the stored trace is here, when a read's limit left rows out
    (:mod:`tracescore.store.trace_cut`); None when it is whole."""
    whole_before_ns: int = 0
    """In a trace read in part, what ended before this time was read whole: the spans kept
    are the first by start time, so a run that ended before the last kept span started has
    every span it had (0: no run is known whole, as when log records or values were cut)."""

    def cut_of(self, end: datetime | None) -> str | None:
        """The cut note for a run that ended at ``end``: None when the trace is whole or the
        run ended before the cut (:attr:`whole_before_ns`), so only the runs the cut may have
        shortened say so and are left unscored."""
        if self.cut is None or (end is not None and end.timestamp() * 1e9 < self.whole_before_ns):
            return None
        return self.cut

    def logs_by_span(self) -> dict[str, list[LogRecord]]:
        grouped: dict[str, list[LogRecord]] = {}
        for record in self.logs:
            if record.span_id:
                grouped.setdefault(record.span_id, []).append(record)
        return grouped
