"""Silences and acknowledgements of alerts: who set them, until when, and what they cover.

A silence or acknowledgement names a rule and, optionally, one of its segments (none: every
segment). Both expire on their own; an acknowledgement also ends when the firing it saw resolves,
because it was about that firing: it covers a state only while that state fires since before
the acknowledgement was made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field
from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from tracescore.settings import parse_duration
from tracescore.store.alerts import AlertSilenceRow
from tracescore.store.table_of import table_of

SILENCES = table_of(AlertSilenceRow)
Kind = Literal["silence", "ack"]
MAX_SILENCE = timedelta(days=30)
"""The longest a silence may last: past it, an alert nobody remembers silencing stays quiet."""


class SilenceIn(BaseModel):
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
    return {k: str(v) for k, v in wanted.items()} == {
        k: str(v) for k, v in (segment or {}).items()
    }


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

    def covers(self, state: dict[str, Any], now: float) -> bool:
        """Whether this holds for an alert state (``rule``, ``segment``, ``state``, ``since``)."""
        if now >= self.expires_at or state["rule"] != self.rule:
            return False
        if not _same_segment(self.segment, state["segment"]):
            return False
        if self.kind == "ack":
            return bool(state["state"] == "firing" and state["since"] <= self.created_at)
        return True


def add_silence(connection: Connection, asked: SilenceIn, now: float) -> Silence:
    values = {"rule": asked.rule, "segment": asked.segment or None, "kind": asked.kind,
              "author": asked.author, "note": asked.note, "created_at": now,
              "expires_at": now + asked.duration}  # fmt: skip
    new_id = connection.execute(
        SILENCES.insert().values(values).returning(SILENCES.c.id)
    ).scalar_one()
    return Silence(id=new_id, **values)  # type: ignore[arg-type]


def active_silences(connection: Connection, now: float, rule: str | None = None) -> list[Silence]:
    """Silences and acknowledgements not expired at ``now``, oldest first."""
    query = select(SILENCES).where(SILENCES.c.expires_at > now).order_by(SILENCES.c.id)
    if rule is not None:
        query = query.where(SILENCES.c.rule == rule)
    return [Silence(**row._mapping) for row in connection.execute(query)]


def remove_silence(connection: Connection, silence_id: int) -> bool:
    """End a silence now, by forgetting it; False if there is none with this id."""
    result = connection.execute(delete(SILENCES).where(SILENCES.c.id == silence_id))
    return result.rowcount == 1


def covering(
    silences: list[Silence], state: dict[str, Any], now: float, kind: Kind
) -> Silence | None:
    """The first of ``silences`` of ``kind`` that covers ``state`` at ``now``."""
    return next((s for s in silences if s.kind == kind and s.covers(state, now)), None)
