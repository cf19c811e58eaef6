"""Silences and acknowledgements of alerts: who set them, until when, and what they cover.

A silence or acknowledgement names a rule and, optionally, one of its segments (none: every
segment). Both expire on their own; an acknowledgement also ends when the firing it saw resolves,
because it was about that firing: it covers a state only while that state fires since before
the acknowledgement was made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from tracescore.restapi import Body
from tracescore.settings import parse_duration
from tracescore.store import Connection, Database
from tracescore.store import alerts as stored

Kind = stored.SilenceKind
MAX_SILENCE = timedelta(days=30)
"""The longest a silence may last: past it, an alert nobody remembers silencing stays quiet."""


class SilenceIn(Body):
    """A silence (no notification) or an acknowledgement (marked as seen) of a rule's alert."""

    rule: str = Field(min_length=1, max_length=100)
    segment: dict[str, str | None] | None = Field(
        default=None, description='one segment, e.g. {"agent": "weather-bot"}; none: every one'
    )
    kind: Kind = "silence"
    duration: Annotated[
        float, BeforeValidator(parse_duration), Field(gt=0, le=MAX_SILENCE.total_seconds())
    ] = Field(description="how long it holds: seconds, or 30m, 1h, 4h, 1d (at most 30d)")
    note: str = Field(default="", max_length=2000)
    author: str = Field(default="", max_length=200)


def _same_segment(wanted: dict[str, Any] | None, segment: dict[str, Any] | None) -> bool:
    """Whether a silence's segment covers a state's: values compared as text, as forms send them."""
    if wanted is None:
        return True
    return {k: str(v) for k, v in wanted.items()} == {k: str(v) for k, v in (segment or {}).items()}


@dataclass(frozen=True, slots=True)
class Silence:
    id: int
    rule: str
    segment: dict[str, Any] | None
    kind: Kind
    author: str
    note: str
    created_at: float
    expires_at: float

    def covers(self, state: Mapping[str, Any], now: float) -> bool:
        """Whether this holds for an alert state (``rule``, ``segment``, ``state``, ``since``)."""
        if now >= self.expires_at or state["rule"] != self.rule:
            return False
        if not _same_segment(self.segment, state["segment"]):
            return False
        if self.kind == "ack":
            return bool(state["state"] == "firing" and state["since"] <= self.created_at)
        return True


def add_silence(database: Database, asked: SilenceIn, now: float) -> Silence:
    values: stored.NewSilence = {
        "rule": asked.rule,
        "segment": asked.segment or None,
        "kind": asked.kind,
        "author": asked.author,
        "note": asked.note,
        "created_at": now,
        "expires_at": now + asked.duration,
    }
    return Silence(id=stored.add_silence(database, values), **values)


def active_silences(connection: Connection, now: float, rule: str | None = None) -> list[Silence]:
    """Silences and acknowledgements not expired at ``now``, oldest first."""
    return [Silence(**row) for row in stored.active_silences(connection, now, rule)]


def remove_silence(database: Database, silence_id: int) -> bool:
    """End a silence now, by forgetting it; False if there is none with this id."""
    return stored.remove_silence(database, silence_id)


def covering(
    silences: list[Silence], state: Mapping[str, Any], now: float, kind: Kind
) -> Silence | None:
    """The first of ``silences`` of ``kind`` that covers ``state`` at ``now``."""
    return next((s for s in silences if s.kind == kind and s.covers(state, now)), None)
