"""Decode OTLP trace and log export requests (protobuf or OTLP/JSON) into :mod:`tracescore.spans`.

Protobuf goes through ``opentelemetry-proto``'s generated classes. OTLP/JSON is parsed with
orjson and walked by hand: protobuf's ``json_format.ParseDict`` manages only ~2k spans/s, and
the OTLP/JSON mapping differs from the canonical protobuf JSON one anyway (hex ids, integer
enums). Both lowerCamelCase keys (what the spec requires) and the original snake_case field
names (what ``json_format`` also accepts) are read.

A record that cannot be stored (no valid trace or span id) is *rejected*, not fatal: the caller
reports it through OTLP ``partial_success``. A body that cannot be parsed at all raises
:class:`DecodeError`, which the transports turn into HTTP 400 / gRPC INVALID_ARGUMENT.

Over 400 lines and kept whole: its one job is OTLP export requests to records, and the two
encodings' halves share the rules of what can be stored (the last section), which must stay
the same for a record whichever way it came.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json as stdlib_json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue

from tracescore.spans import (
    Attributes,
    AttributeValue,
    LogRecord,
    Resource,
    Scope,
    Span,
    SpanEvent,
    SpanLink,
)

_ZERO_TRACE_ID = "0" * 32
_ZERO_SPAN_ID = "0" * 16
# Timestamps are uint64 on the wire but signed 64-bit in SQL: past this (the year 2262) a record
# cannot be stored, so it is rejected rather than failing the whole request's write.
_MAX_TIME_NS = 2**63 - 1
_Request = TypeVar(
    "_Request", ExportTraceServiceRequest, ExportLogsServiceRequest, ExportMetricsServiceRequest
)
UNSTORABLE_TIME = "timestamp beyond the year 2262 (out of the int64 range)"


class DecodeError(ValueError):
    """The request body is not a decodable OTLP export request."""


@dataclass(slots=True)
class Decoded:
    """What one export request held: the accepted records and why others were rejected."""

    spans: list[Span] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    rejected: int = 0
    rejection_reasons: list[str] = field(default_factory=list)

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if reason not in self.rejection_reasons:
            self.rejection_reasons.append(reason)

    @property
    def error_message(self) -> str:
        return "; ".join(self.rejection_reasons)

    def receipt(self) -> Receipt:
        return Receipt(len(self.spans), len(self.logs), self.rejected, self.error_message)


@dataclass(frozen=True, slots=True)
class Receipt:
    """What an export request's acknowledgement reports: records accepted, rejected and why."""

    spans: int = 0
    logs: int = 0
    rejected: int = 0
    error_message: str = ""


# --------------------------------------------------------------------------- protobuf


def _pb_value(value: AnyValue) -> AttributeValue:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [_pb_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _pb_attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value
    return None


def _pb_attributes(pairs: Iterable[KeyValue]) -> Attributes:
    return {kv.key: _pb_value(kv.value) for kv in pairs}


def _parse(request: _Request, body: bytes) -> _Request:
    """``request`` filled from ``body``; :class:`DecodeError` naming the message if it is not one."""
    try:
        request.ParseFromString(body)
    except (ProtobufDecodeError, RuntimeError, ValueError) as exc:
        raise DecodeError(f"invalid OTLP protobuf {type(request).__name__}: {exc}") from exc
    return request


def _pb_scope(pb_scope: InstrumentationScope) -> Scope:
    return Scope(pb_scope.name, pb_scope.version, _pb_attributes(pb_scope.attributes))


def decode_traces_protobuf(body: bytes) -> Decoded:
    request = _parse(ExportTraceServiceRequest(), body)
    out = Decoded()
    for resource_spans in request.resource_spans:
        resource = Resource(_pb_attributes(resource_spans.resource.attributes))
        for scope_spans in resource_spans.scope_spans:
            scope = _pb_scope(scope_spans.scope)
            for s in scope_spans.spans:
                trace_id, span_id = s.trace_id.hex(), s.span_id.hex()
                reason = invalid_ids(trace_id, span_id)
                if reason:
                    out.reject(reason)
                    continue
                out.spans.append(
                    Span(
                        trace_id=trace_id,
                        span_id=span_id,
                        parent_span_id=_parent(s.parent_span_id.hex()),
                        name=s.name,
                        kind=s.kind,
                        start_time_ns=s.start_time_unix_nano,
                        end_time_ns=s.end_time_unix_nano,
                        attributes=_pb_attributes(s.attributes),
                        resource=resource,
                        scope=scope,
                        events=[
                            SpanEvent(e.name, e.time_unix_nano, _pb_attributes(e.attributes))
                            for e in s.events
                        ],
                        links=[
                            SpanLink(
                                link.trace_id.hex(),
                                link.span_id.hex(),
                                link.trace_state,
                                _pb_attributes(link.attributes),
                            )
                            for link in s.links
                        ],
                        status_code=s.status.code,
                        status_message=s.status.message,
                        trace_state=s.trace_state,
                        flags=s.flags,
                    )
                )
    return out


def decode_logs_protobuf(body: bytes) -> Decoded:
    request = _parse(ExportLogsServiceRequest(), body)
    out = Decoded()
    for resource_logs in request.resource_logs:
        resource = Resource(_pb_attributes(resource_logs.resource.attributes))
        for scope_logs in resource_logs.scope_logs:
            scope = _pb_scope(scope_logs.scope)
            for r in scope_logs.log_records:
                out.logs.append(
                    LogRecord(
                        time_ns=r.time_unix_nano,
                        observed_time_ns=r.observed_time_unix_nano,
                        trace_id=_optional_id(r.trace_id.hex(), _ZERO_TRACE_ID),
                        span_id=_optional_id(r.span_id.hex(), _ZERO_SPAN_ID),
                        event_name=r.event_name,
                        severity_number=r.severity_number,
                        severity_text=r.severity_text,
                        body=_pb_value(r.body) if r.HasField("body") else None,
                        attributes=_pb_attributes(r.attributes),
                        resource=resource,
                        scope=scope,
                        flags=r.flags,
                    )
                )
    return out


# --------------------------------------------------------------------------- OTLP/JSON


def _get(obj: dict[str, Any], camel: str, snake: str | None = None) -> Any:
    value = obj.get(camel)
    if value is None and snake is not None:
        value = obj.get(snake)
    return value


_INT32 = (-(2**31), 2**31)
"""Enums (span kind, status code, severity) are int32 on the wire and in the tables."""
_UINT32 = (0, 2**32)
"""``flags`` is a fixed32."""


def _json_int(value: Any, bounds: tuple[int, int] = (-(2**63), 2**64)) -> int:
    """OTLP/JSON carries 64-bit integers as decimal strings; JS exporters send numbers.
    ``bounds`` is the field's wire range (int64 or fixed64 by default): a value outside it
    would be acknowledged, then fail the database's column (a poison entry), so it is refused."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise DecodeError(f"expected an integer, got {value!r}")
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = int(value)
    if number is None:
        raise DecodeError(f"expected an integer, got {value!r}")
    low, high = bounds
    if not low <= number < high:
        raise DecodeError(f"integer {number} is out of its field's range [{low}, {high})")
    return number


def _json_enum(value: Any, names: tuple[str, ...], prefix: str) -> int:
    """Enums are integers in OTLP/JSON; protobuf's JSON mapping also allows their names."""
    if isinstance(value, str) and not value.lstrip("-").isdigit():
        short = value.removeprefix(prefix)
        if short in names:
            return names.index(short)
        raise DecodeError(f"unknown enum value {value!r}")
    return _json_int(value, _INT32)


_KIND_NAMES = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS_NAMES = ("UNSET", "OK", "ERROR")


def _json_id(value: Any, length: int) -> str:
    """Ids are hex in OTLP/JSON; protobuf's canonical JSON (base64) is accepted too."""
    if not value:
        return ""
    if not isinstance(value, str):
        raise DecodeError(f"id must be a string, got {type(value).__name__}")
    if len(value) == length:
        try:
            bytes.fromhex(value)
            return value.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return "invalid"
    return raw.hex() if len(raw) * 2 == length else "invalid"


def _json_value(value: Any) -> AttributeValue:
    if not isinstance(value, dict):
        if value is None:
            return None
        raise DecodeError(f"attribute value must be an AnyValue object, got {value!r}")
    for key, raw in value.items():
        if key in ("stringValue", "string_value"):
            return str(raw)
        if key in ("intValue", "int_value"):
            number = _json_int(raw)
            if number > _MAX_TIME_NS:
                raise DecodeError(f"intValue {number} is out of the int64 range")
            return number
        if key in ("doubleValue", "double_value"):
            if isinstance(raw, str):  # "NaN", "Infinity" per the protobuf JSON mapping
                return float(raw)
            return float(raw)
        if key in ("boolValue", "bool_value"):
            return bool(raw)
        if key in ("arrayValue", "array_value"):
            return [_json_value(v) for v in (raw or {}).get("values") or ()]
        if key in ("kvlistValue", "kvlist_value"):
            return _json_attributes((raw or {}).get("values"))
        if key in ("bytesValue", "bytes_value"):
            try:
                return base64.b64decode(raw or "")
            except (binascii.Error, ValueError) as exc:
                raise DecodeError(f"bytesValue is not base64: {exc}") from exc
    return None


def _json_attributes(pairs: Any) -> Attributes:
    if not pairs:
        return {}
    if not isinstance(pairs, list):
        raise DecodeError("attributes must be a list of {key, value}")
    out: Attributes = {}
    for kv in pairs:
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise DecodeError(f"attribute must be an object with a string key, got {kv!r}")
        out[kv["key"]] = _json_value(kv.get("value"))
    return out


def _json_scope(block: dict[str, Any]) -> Scope:
    raw = block.get("scope") or {}
    return Scope(
        str(raw.get("name") or ""),
        str(raw.get("version") or ""),
        _json_attributes(raw.get("attributes")),
    )


def _json_resource(block: dict[str, Any]) -> Resource:
    return Resource(_json_attributes((block.get("resource") or {}).get("attributes")))


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _parse_json(body: bytes) -> Any:
    """The parsed body; a string escape holding an unpaired surrogate (``"\\ud83d"``, what a
    JavaScript string cut inside an emoji serializes to) is valid JSON, but orjson refuses it:
    such a body is parsed by the standard library instead, and the store later replaces the
    surrogate (see :mod:`tracescore.store.text`)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise DecodeError(f"invalid JSON: {exc}") from exc
        try:
            return stdlib_json.loads(body, parse_constant=_refuse_constant)
        except ValueError as fallback_exc:
            raise DecodeError(f"invalid JSON: {fallback_exc}") from fallback_exc


def _load_json(body: bytes, root_camel: str, root_snake: str) -> list[dict[str, Any]]:
    document = _parse_json(body)
    if not isinstance(document, dict):
        raise DecodeError("an OTLP/JSON export request must be a JSON object")
    blocks = _get(document, root_camel, root_snake) or []
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        raise DecodeError(f"{root_camel} must be a list of objects")
    return blocks


def _list_of_objects(value: Any, what: str) -> list[dict[str, Any]]:
    if not value:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise DecodeError(f"{what} must be a list of objects")
    return value


def decode_traces_json(body: bytes) -> Decoded:
    out = Decoded()
    try:
        for block in _load_json(body, "resourceSpans", "resource_spans"):
            resource = _json_resource(block)
            scope_blocks = _get(block, "scopeSpans", "scope_spans")
            for scope_block in _list_of_objects(scope_blocks, "scopeSpans"):
                scope = _json_scope(scope_block)
                for s in _list_of_objects(scope_block.get("spans"), "spans"):
                    span = _json_span(s, resource, scope, out)
                    if span is not None:
                        out.spans.append(span)
    except (TypeError, AttributeError, ValueError) as exc:
        if isinstance(exc, DecodeError):
            raise
        raise DecodeError(f"malformed OTLP/JSON: {exc}") from exc
    return out


def _json_span(s: dict[str, Any], resource: Resource, scope: Scope, out: Decoded) -> Span | None:
    trace_id = _json_id(_get(s, "traceId", "trace_id"), 32)
    span_id = _json_id(_get(s, "spanId", "span_id"), 16)
    reason = invalid_ids(trace_id, span_id)
    if reason:
        out.reject(reason)
        return None
    status = s.get("status") or {}
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=_parent(_json_id(_get(s, "parentSpanId", "parent_span_id"), 16)),
        name=str(s.get("name") or ""),
        kind=_json_enum(s.get("kind"), _KIND_NAMES, "SPAN_KIND_"),
        start_time_ns=_json_int(_get(s, "startTimeUnixNano", "start_time_unix_nano")),
        end_time_ns=_json_int(_get(s, "endTimeUnixNano", "end_time_unix_nano")),
        attributes=_json_attributes(s.get("attributes")),
        resource=resource,
        scope=scope,
        events=[
            SpanEvent(
                str(e.get("name") or ""),
                _json_int(_get(e, "timeUnixNano", "time_unix_nano")),
                _json_attributes(e.get("attributes")),
            )
            for e in _list_of_objects(s.get("events"), "events")
        ],
        links=[
            SpanLink(
                _json_id(_get(link, "traceId", "trace_id"), 32),
                _json_id(_get(link, "spanId", "span_id"), 16),
                str(_get(link, "traceState", "trace_state") or ""),
                _json_attributes(link.get("attributes")),
            )
            for link in _list_of_objects(s.get("links"), "links")
        ],
        status_code=_json_enum(status.get("code"), _STATUS_NAMES, "STATUS_CODE_"),
        status_message=str(status.get("message") or ""),
        trace_state=str(_get(s, "traceState", "trace_state") or ""),
        flags=_json_int(s.get("flags"), _UINT32),
    )


def decode_logs_json(body: bytes) -> Decoded:
    out = Decoded()
    try:
        for block in _load_json(body, "resourceLogs", "resource_logs"):
            resource = _json_resource(block)
            scope_blocks = _get(block, "scopeLogs", "scope_logs")
            for scope_block in _list_of_objects(scope_blocks, "scopeLogs"):
                scope = _json_scope(scope_block)
                records = _get(scope_block, "logRecords", "log_records")
                for r in _list_of_objects(records, "logRecords"):
                    out.logs.append(_json_log(r, resource, scope))
    except (TypeError, AttributeError, ValueError) as exc:
        if isinstance(exc, DecodeError):
            raise
        raise DecodeError(f"malformed OTLP/JSON: {exc}") from exc
    return out


def _json_log(r: dict[str, Any], resource: Resource, scope: Scope) -> LogRecord:
    return LogRecord(
        time_ns=_json_int(_get(r, "timeUnixNano", "time_unix_nano")),
        observed_time_ns=_json_int(_get(r, "observedTimeUnixNano", "observed_time_unix_nano")),
        trace_id=_optional_id(_json_id(_get(r, "traceId", "trace_id"), 32), _ZERO_TRACE_ID),
        span_id=_optional_id(_json_id(_get(r, "spanId", "span_id"), 16), _ZERO_SPAN_ID),
        event_name=str(_get(r, "eventName", "event_name") or ""),
        severity_number=_json_enum(
            _get(r, "severityNumber", "severity_number"), _SEVERITY_NAMES, "SEVERITY_NUMBER_"
        ),
        severity_text=str(_get(r, "severityText", "severity_text") or ""),
        body=_json_value(r.get("body")),
        attributes=_json_attributes(r.get("attributes")),
        resource=resource,
        scope=scope,
        flags=_json_int(r.get("flags"), _UINT32),
    )


_SEVERITY_NAMES = (
    "UNSPECIFIED",
    *(
        f"{level}{n if n > 1 else ''}"
        for level in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
        for n in range(1, 5)
    ),
)


# --------------------------------------------------------------------------- shared rules


def invalid_ids(trace_id: str, span_id: str) -> str | None:
    if len(trace_id) != 32 or trace_id == _ZERO_TRACE_ID:
        return "span without a valid 16-byte trace id"
    if len(span_id) != 16 or span_id == _ZERO_SPAN_ID:
        return "span without a valid 8-byte span id"
    return None


def _parent(parent_hex: str) -> str | None:
    return parent_hex if len(parent_hex) == 16 and parent_hex != _ZERO_SPAN_ID else None


def _optional_id(value: str, zero: str) -> str | None:
    return value if len(value) == len(zero) and value != zero else None


def storable_time(*times: int) -> bool:
    return all(time <= _MAX_TIME_NS for time in times)


def _without_unstorable_times(decoded: Decoded) -> Decoded:
    spans = [
        span
        for span in decoded.spans
        if storable_time(span.start_time_ns, span.end_time_ns, *(e.time_ns for e in span.events))
    ]
    logs = [r for r in decoded.logs if storable_time(r.time_ns, r.observed_time_ns)]
    for _ in range(len(decoded.spans) - len(spans) + len(decoded.logs) - len(logs)):
        decoded.reject(UNSTORABLE_TIME)
    decoded.spans, decoded.logs = spans, logs
    return decoded


def decode_traces(body: bytes, *, json: bool) -> Decoded:
    return _without_unstorable_times(
        decode_traces_json(body) if json else decode_traces_protobuf(body)
    )


def decode_logs(body: bytes, *, json: bool) -> Decoded:
    return _without_unstorable_times(decode_logs_json(body) if json else decode_logs_protobuf(body))


def decode_metrics(body: bytes, *, json: bool) -> Decoded:
    """Check an ExportMetricsServiceRequest decodes; tracescore accepts and drops metrics."""
    if json:
        _load_json(body, "resourceMetrics", "resource_metrics")
        return Decoded()
    _parse(ExportMetricsServiceRequest(), body)
    return Decoded()
