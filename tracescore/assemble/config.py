"""The ``assembly:`` section: when a trace is complete enough to score."""

from __future__ import annotations

from pydantic import Field

from tracescore.settings import Section
from tracescore.store.trace_queue import ReadinessRules


class AssemblyConfig(Section):
    """When a trace counts as complete and ready to score."""

    idle_timeout: float = Field(5.0, gt=0)
    """Seconds without a new span, once the root span has arrived."""
    max_wait: float = Field(300.0, gt=0)
    """Seconds after the first span after which a trace is ready regardless."""
    lease_seconds: float = Field(60.0, gt=0)
    """How long a worker's claim on a trace lasts before another may take it."""

    def readiness(self) -> ReadinessRules:
        """The trace queue's rules for these settings."""
        return ReadinessRules(idle_timeout=self.idle_timeout, max_wait=self.max_wait)
