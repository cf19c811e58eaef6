"""The ``assembly:`` section: when a trace is complete enough to score."""

from __future__ import annotations

from pydantic import Field

from tracescore.settings import Duration, Section
from tracescore.store.trace_cut import DEFAULT_SPANS, DEFAULT_TEXT_BYTES, ReadLimit
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

    max_trace_spans: int = Field(DEFAULT_SPANS, ge=1)
    """Spans of one trace that a read loads (scoring, re-scoring, a backfill, the runs API,
    the trace page; insights passes read with the defaults): the first ones by start time,
    so the root and the agent spans come first. A trace with more is read in part and says
    so (the runs API's ``cut``, each run's ``traceCut``, a note on the trace page, the
    scores' ``steps.trace_cut``): ``read the first 4,000 of 143,211 spans
    (assembly.max_trace_spans: 4000)``. With ``max_trace_bytes`` it bounds what one read of
    a trace adds to a process's memory whatever the trace holds: under 100 MB at the
    defaults (docs/benchmarks.md, Reading one huge trace); each 1,000 spans more add
    10-20 MB."""
    max_trace_bytes: int = Field(DEFAULT_TEXT_BYTES, ge=1)
    """Bytes of stored span and log text (attributes, events, log bodies) of one trace that
    a read loads, spans first in the same order and with the same note as
    ``max_trace_spans``: a read holds that text many times over (decoded, in the runs built
    from it, an agent run holding all its steps', their JSON), so a trace of long prompts is
    bounded too. The first span is always read; if it alone is larger, its values are cut
    (as ``server.max_attribute_chars`` cuts them) to fit. A run the cut may have shortened
    is left unscored with the cut as reason: agents whose traces carry long contexts (a few
    calls of 100k-token prompts pass 2 MiB) need it raised, at ~10-20 MB of a read's memory
    per MiB (the runs API's pages ~22)."""

    def read_limit(self) -> ReadLimit:
        """How much of one trace a read loads, for the store."""
        return ReadLimit(spans=self.max_trace_spans, text_bytes=self.max_trace_bytes)

    def readiness(self) -> ReadinessRules:
        """The trace queue's rules for these settings."""
        return ReadinessRules(
            idle_timeout=self.idle_timeout,
            max_wait=self.max_wait,
            max_clock_skew=self.max_clock_skew,
        )
