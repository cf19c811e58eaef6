"""The life of a trace between its first span and its scores.

``pending`` (spans arriving) -> ``ready`` (complete by the readiness rules) -> ``claimed`` (a
worker holds a lease) -> ``scored``. A span or log record arriving for a ``ready``, ``scored``
or ``failed`` trace puts it back to ``pending`` (so it is rescored once complete again); one
arriving while the trace is ``claimed`` bumps its generation, and completing that claim then
sends the trace back to ``pending`` instead of ``scored``. A lease that expires (the worker died)
makes the trace claimable again. Releasing with an error too many times parks it as ``failed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TraceState(StrEnum):
    PENDING = "pending"
    READY = "ready"
    CLAIMED = "claimed"
    SCORED = "scored"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ReadinessRules:
    """When a pending trace counts as complete (all times in seconds)."""

    idle_timeout: float = 5.0
    """The root span has arrived and no span came for this long."""
    max_wait: float = 300.0
    """This long after the trace became pending, whatever else holds."""
    max_attempts: int = 5
    """Releases with an error after which the trace is parked as ``failed``."""


@dataclass(frozen=True, slots=True)
class TraceClaim:
    """A worker's lease on one ready trace; hand it back to ``complete`` or ``release``."""

    trace_id: str
    generation: int
    """The trace's write generation when claimed; later writes make ``complete`` rescore."""
    span_count: int
    owner: str
    token: str
    """Unique per claim, so a worker whose lease expired and was re-claimed cannot complete it."""
    lease_expires: float
