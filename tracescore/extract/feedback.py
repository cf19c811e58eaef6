"""Human feedback sent over OTLP: ``gen_ai.evaluation.result`` events marked as a person's.

The GenAI semantic conventions define the ``gen_ai.evaluation.result`` event (a log record, or a
span event) for any evaluation; nothing in them says who evaluated. tracescore's own scores
travel as the same event, so a product's thumbs-up must say it came from a person:

* ``tracescore.feedback.source = "human"`` (required; any other event is not feedback);
* ``gen_ai.evaluation.name``: the binding (or another evaluation name) judged (required);
* ``gen_ai.evaluation.score.value`` (a number on the binding's scale) and/or
  ``gen_ai.evaluation.score.label`` (``pass``/``fail``, ``good``/``bad``...);
* ``gen_ai.evaluation.explanation``: the person's comment;
* ``tracescore.feedback.author``, else ``user.id``: who (one verdict per author and run);
* ``tracescore.feedback.span_id``: the judged run's span, when the event is sent from another
  span or a log record outside the run's context; else the record's (or event's) own span.

The trace is the record's trace: a record without a trace id cannot say which run it judges.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tracescore.extract.base import as_str, first_str
from tracescore.spans import EVALUATION_EVENT

SOURCE_ATTRIBUTE = "tracescore.feedback.source"
HUMAN = "human"
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True, slots=True)
class HumanVerdict:
    """A person's verdict as an OTLP record carried it."""

    trace_id: str
    span_id: str | None
    name: str
    value: float | None
    label: str | None
    comment: str | None
    author: str
    time_ns: int


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def human_verdict(
    trace_id: str | None,
    span_id: str | None,
    event_name: str,
    attributes: Mapping[str, Any],
    time_ns: int,
) -> HumanVerdict | None:
    """The verdict an evaluation event carries, or None when it is not human feedback (another
    event, a judge's evaluation, no trace, no name, neither value nor label)."""
    name_of_event = event_name or as_str(attributes.get("event.name")) or ""
    if name_of_event != EVALUATION_EVENT or not trace_id:
        return None
    source = as_str(attributes.get(SOURCE_ATTRIBUTE))
    if source is None or source.lower() != HUMAN:
        return None
    name = first_str(attributes, "gen_ai.evaluation.name")
    value = _number(attributes.get("gen_ai.evaluation.score.value"))
    label = first_str(attributes, "gen_ai.evaluation.score.label")
    if name is None or (value is None and label is None):
        return None
    target = (first_str(attributes, "tracescore.feedback.span_id") or "").lower()
    return HumanVerdict(
        trace_id=trace_id.lower(),
        span_id=target if _SPAN_ID.match(target) else (span_id.lower() if span_id else None),
        name=name[:100],
        value=value,
        label=label[:50] if label else None,
        comment=first_str(attributes, "gen_ai.evaluation.explanation"),
        author=(first_str(attributes, "tracescore.feedback.author", "user.id") or "")[:200],
        time_ns=time_ns,
    )


def log_verdict(
    trace_id: str | None,
    span_id: str | None,
    event_name: str,
    attributes: Mapping[str, Any],
    body: Any,
    time_ns: int,
) -> HumanVerdict | None:
    """A log record's verdict. Some SDKs' event APIs put an event's fields in the body rather
    than the attributes; attributes win where both have a field."""
    fields = {**body, **attributes} if isinstance(body, Mapping) else attributes
    return human_verdict(trace_id, span_id, event_name, fields, time_ns)


def span_verdicts(trace_id: str, span_id: str, events: list[list[Any]]) -> list[HumanVerdict]:
    """The verdicts among a span's events, as stored: ``[name, time_ns, attributes]`` each."""
    found = []
    for name, time_ns, attributes in events:
        verdict = human_verdict(trace_id, span_id, name, attributes or {}, time_ns)
        if verdict is not None:
            found.append(verdict)
    return found
