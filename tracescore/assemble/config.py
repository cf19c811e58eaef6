"""The ``assembly:`` section: when a trace is complete enough to score."""

from __future__ import annotations

from pydantic import Field

from tracescore.settings import Duration, Section
from tracescore.store.trace_queue import ReadinessRules


class AssemblyConfig(Section):
    """When a trace counts as complete and ready to score."""

    idle_timeout: float = Field(5.0, gt=0)
    """Seconds without a new span, once the root span has arrived."""
    max_wait: float = Field(300.0, gt=0)
    """Seconds after the first span after which a trace is ready regardless."""
    lease_seconds: float = Field(60.0, gt=0)
    """How long a worker's claim on a trace lasts unrenewed before another may take it."""
    max_clock_skew: Duration = 86_400.0
    """How far in the future of its arrival a span's time may be. One further (an exporter's
    clock set wrong, a span dated 2100) is kept and shown as sent, but its trace is timed by
    the span's arrival instead: otherwise it would sort first for ever and outlive retention."""

    def readiness(self) -> ReadinessRules:
        """The trace queue's rules for these settings."""
        return ReadinessRules(
            idle_timeout=self.idle_timeout,
            max_wait=self.max_wait,
            max_clock_skew=self.max_clock_skew,
        )
