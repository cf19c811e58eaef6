"""What a convention module is, and the attribute readers every convention module shares.

A convention module (``tracescore.extract.genai``, ``.openinference``, …) is a plain module
with three names, matched structurally by :class:`Convention`:

* ``NAME: str`` — the convention's name, copied onto ``SpanInfo.convention`` and ``AgentRun``;
* ``detect(span) -> bool`` — cheap: looks at a few attribute keys or the scope name only;
* optionally ``in_scope(scope_name) -> bool`` — False when the module claims no span of that
  instrumentation scope, whatever its attributes (a module whose ``detect`` requires its
  scope). It is asked once per scope name, not per span
  (:func:`tracescore.extract.registry.claimants`), so a span is offered only to the modules
  that may claim it;
* ``read(span, logs) -> SpanInfo`` — reads the span (and the log records emitted in its
  context) into convention-neutral facts. It must not raise: whatever it cannot read goes into
  ``SpanInfo.warnings``. :func:`safe_read` enforces that for modules that slip.

Optionally, ``refine(read: list[tuple[Span, SpanInfo]]) -> None`` — called once per trace with
every span the module read, for conventions that spread one fact over several spans (Mastra
puts a step's input on the step span, its usage on the ``chat`` span below). It may amend the
infos in place, never raise (:func:`safe_refine` enforces it), and must leave the run model
convention-neutral.

The helpers below exist because every convention meets the same dirt: JSON encoded as strings
(sometimes twice), truncated values, enormous values, numbers sent as strings.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from tracescore import nested_json
from tracescore.extract.model import SpanInfo, SpanStatus, TokenUsage
from tracescore.spans import STATUS_ERROR, STATUS_OK, LogRecord, Span

# Values above this many characters are not parsed as JSON: a multi-megabyte attribute is
# almost always a raw request body or a base64 blob, and parsing it would cost more than the
# whole rest of the trace. The text is kept (cut to this length) and a warning says so.
MAX_VALUE_CHARS = 1_000_000

# A Python literal longer than this stays text: literal_eval's cost grows with nesting depth.
_MAX_LITERAL_CHARS = 100_000

_STATUS_NAMES: dict[int, SpanStatus] = {STATUS_OK: "ok", STATUS_ERROR: "error"}


class Convention(Protocol):
    """The module protocol of a span convention (modules satisfy it structurally)."""

    NAME: str

    def detect(self, span: Span) -> bool: ...

    def read(self, span: Span, logs: list[LogRecord]) -> SpanInfo: ...


def new_info(span: Span, convention: str) -> SpanInfo:
    """A ``SpanInfo`` holding what every span has regardless of convention.

    ``error.type`` (the general OTel attribute for a failed operation) marks a failure even when
    the instrumentation left the span status unset.
    """
    status: SpanStatus = _STATUS_NAMES.get(span.status_code, "unset")
    error_type = as_str(span.attributes.get("error.type"))
    if error_type is not None and status == "unset":
        status = "error"
    error = None
    if status == "error":
        error = span.status_message or _exception_message(span) or error_type or "error"
    return SpanInfo(
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        convention=convention,
        name=span.name,
        start_time_ns=span.start_time_ns,
        end_time_ns=span.end_time_ns,
        status=status,
        error=error,
    )


def _exception_message(span: Span) -> str | None:
    """``type: message`` of the span's first ``exception`` event (the SDK's record_exception)."""
    for event in span.events:
        if event.name == "exception":
            kind = as_str(event.attributes.get("exception.type"))
            message = as_str(event.attributes.get("exception.message"))
            return ": ".join(t for t in (kind, message) if t) or None
    return None


def safe_read(convention: Convention, span: Span, logs: list[LogRecord]) -> SpanInfo:
    """``convention.read`` with the no-raise guarantee enforced: a crash becomes a warning."""
    try:
        return convention.read(span, logs)
    except Exception as exc:  # noqa: BLE001 - one bad span must never lose the trace
        info = new_info(span, convention.NAME)
        info.warnings.append(f"{convention.NAME}: could not read span {span.name!r}: {exc!r}")
        return info


def safe_refine(convention: Convention, read: list[tuple[Span, SpanInfo]]) -> None:
    """The module's optional ``refine`` over its spans of one trace; a crash becomes a warning."""
    refine = getattr(convention, "refine", None)
    if refine is None or not read:
        return
    try:
        refine(read)
    except Exception as exc:  # noqa: BLE001 - the spans as read are still usable
        read[0][1].warnings.append(f"{convention.NAME}: could not refine the trace: {exc!r}")


def as_str(value: Any) -> str | None:
    """A non-empty string, or None. Bytes are decoded; numbers are not strings here."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value if isinstance(value, str) and value else None


MAX_COUNT = 10**12
"""The largest count (of tokens) read from a span: a span's text may claim 1e26, which no
JSON writer, column or sum of a trace's spans can hold."""


def as_int(value: Any) -> int | None:
    """An integer from an int, a float or a numeric string (some SDKs stringify counts), or
    None for anything else, NaN and infinities too, and for a count past ±:data:`MAX_COUNT`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value)
    if isinstance(value, int) and -MAX_COUNT <= value <= MAX_COUNT:
        return value
    return None


def first(attributes: Mapping[str, Any], *keys: str) -> Any:
    """The value of the first key present (conventions renamed keys across versions)."""
    for key in keys:
        value = attributes.get(key)
        if value is not None and value != "":
            return value
    return None


def first_str(attributes: Mapping[str, Any], *keys: str) -> str | None:
    return as_str(first(attributes, *keys))


def load_json(value: Any, warnings: list[str], what: str) -> Any:
    """Decode a JSON-string attribute, tolerating everything real exporters send.

    Structured values (OTLP arrays/kvlists, as on log events) are returned as they are. A
    string that does not look like JSON is plain text and returned unchanged. A string that
    looks like JSON but does not parse (typically cut by ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``)
    is returned as text with a warning, as is an oversized value (cut to ``MAX_VALUE_CHARS``).
    """
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return value
    if len(value) > MAX_VALUE_CHARS:
        warnings.append(
            f"{what}: {len(value)}-character value exceeds {MAX_VALUE_CHARS}; "
            "kept as truncated text, not parsed"
        )
        return value[:MAX_VALUE_CHARS]
    stripped = value.lstrip()
    if not stripped or stripped[0] not in '[{"':
        return value
    try:
        return nested_json.loads(stripped)
    except orjson.JSONDecodeError as exc:
        warnings.append(f"{what}: invalid JSON ({exc}); kept as text")
        return value


def usage_from(attributes: Mapping[str, Any], **keys: tuple[str, ...]) -> TokenUsage | None:
    """Token usage from the attribute keys given per ``TokenUsage`` field, None when absent.

    ``total_tokens`` is derived from input + output when the convention does not send it.
    """
    found: dict[str, int] = {}
    for field, candidates in keys.items():
        # ``first`` inlined: this runs for every field of every span, most of them absent.
        for key in candidates:
            raw = attributes.get(key)
            if raw is not None and raw != "":
                value = as_int(raw)
                if value is not None:
                    found[field] = value
                break
    if not found:
        return None
    if "total_tokens" not in found:
        found["total_tokens"] = found.get("input_tokens", 0) + found.get("output_tokens", 0)
    return TokenUsage(**found)


def json_text(value: Any) -> str:
    """Text for a value that may be structured (documents, tool results shown as context)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:
        return str(value)


@functools.lru_cache(maxsize=4096)
def timestamp(time_ns: int) -> datetime | None:
    """A UTC datetime for an OTLP nanosecond timestamp (0 = unknown).

    Remembered (bounded): a run asks for each of its spans' times several times (its start and
    end, each message's time), and building a datetime costs nine times the look-up. Datetimes
    are immutable, so the runs sharing one see no difference."""
    return datetime.fromtimestamp(time_ns / 1e9, tz=UTC) if time_ns else None


def indexed(
    attributes: Mapping[str, Any], prefix: str, warnings: list[str] | None = None
) -> list[dict[str, Any]]:
    """Re-assemble flattened ``{prefix}{i}.{rest}`` keys into ``[{rest: value}]`` by index.

    OpenInference and OpenLLMetry ≤0.54 flatten lists into one attribute per leaf. Indexes are
    sorted numerically (``10`` after ``9``); gaps are closed up and, when ``warnings`` is given,
    reported, since a dropped element (LangChain drops reasoning parts) changes what was sent.
    """
    groups: dict[int, dict[str, Any]] = {}
    size = len(prefix)
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[size:].partition(".")
        if index.isdigit():
            groups.setdefault(int(index), {})[rest] = value
    order = sorted(groups)
    if warnings is not None and order and order[-1] != len(order) - 1:
        missing = sorted(set(range(order[-1] + 1)) - set(order))
        warnings.append(f"{prefix}N: index {', '.join(map(str, missing))} missing; skipped")
    return [groups[i] for i in order]


def python_literal(value: Any) -> Any:
    """A dict or list written as a Python literal (``str()`` of it), as that value; else as is."""
    if not isinstance(value, str) or len(value) > _MAX_LITERAL_CHARS:
        return value
    text = value.strip()
    if not text or text[0] + text[-1] not in ("{}", "[]"):
        return value
    try:
        decoded = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return value
    return decoded if isinstance(decoded, (dict, list)) else value
