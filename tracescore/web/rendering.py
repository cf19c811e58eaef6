"""Jinja2 set up for the dashboard: autoescaping always on, and the formatting filters pages use.

Autoescaping is what keeps untrusted trace content (prompts, tool results, reasons) inert:
every ``{{ value }}`` is HTML-escaped unless it is :class:`markupsafe.Markup` made by our own
code (the SVG charts), and nothing from a trace ever becomes Markup.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from tracescore import nested_json
from tracescore.store.dialect import as_utc
from tracescore.store.score_reads import PASSING_LABELS


def pretty(value: Any) -> str:
    """JSON indented for reading; strings holding JSON (as tool arguments often do) are parsed,
    to a bounded depth (:mod:`tracescore.nested_json`): a deeper part shows as its text."""
    if isinstance(value, str):
        text = value
        try:
            value = nested_json.loads(text)
        except ValueError:
            return text
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def when(value: datetime | float | int | None) -> str:
    if value is None:
        return "–"
    if isinstance(value, int | float):
        value = datetime.fromtimestamp(value, UTC)
    return as_utc(value).strftime("%Y-%m-%d %H:%M:%S UTC")


def score(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def verdict(label: str | None) -> str:
    """The badge colour of a score, from its label: ``pass`` (green) when it passed (a
    binding's ``pass``, a scorer's own ``ok``), ``fail`` (red) for any other label (``fail``,
    the checks a consistency score failed). Every score of a binding with a pass threshold is
    labelled (``pipeline.bindings.pass_threshold``); one without stays neutral, rather than
    coloured by a cut that means nothing for its scorer (content-similarity's 0.3 is no
    worse an answer than its 0.9)."""
    if not label:
        return ""
    return "pass" if label in PASSING_LABELS else "fail"


def elapsed(milliseconds: float | None) -> str:
    """How long a scorer took, or "" when nothing was measured. A code scorer's fraction of a
    millisecond reads "under 1 ms": "0 ms" on every card said nothing."""
    if not milliseconds:
        return ""
    if milliseconds < 1:
        return "under 1 ms"
    return f"{milliseconds:.1f} ms" if milliseconds < 10 else f"{milliseconds:.0f} ms"


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def duration(value: timedelta | float) -> str:
    """``90s`` → ``1m30s``: the way windows and buckets are written in the URL and config.

    Plain numbers are seconds, as rule windows are stored once parsed."""
    if not isinstance(value, timedelta):
        value = timedelta(seconds=value)
    seconds, parts = int(value.total_seconds()), []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts) or "0s"


def ns_time(value: int | None) -> str:
    return "–" if not value else when(value / 1e9)


def is_records(value: Any) -> bool:
    """A non-empty list of objects: shown as a table (judge verdicts, claims with reasons…)."""
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def record_keys(value: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(key for item in value for key in item))


_environment = Environment(
    loader=PackageLoader("tracescore.web", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_environment.filters.update(
    pretty=pretty,
    when=when,
    score=score,
    percent=percent,
    ns_time=ns_time,
    duration=duration,
    verdict=verdict,
    elapsed=elapsed,
)
_environment.tests.update(
    records=is_records,
    mapping=lambda v: isinstance(v, dict),
    sequence=lambda v: isinstance(v, list),
)
_environment.globals.update(record_keys=record_keys)


def render(template: str, **context: Any) -> str:
    return _environment.get_template(template).render(**context)
