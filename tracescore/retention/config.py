"""The ``retention:`` section: how long each kind of data is kept, and how often it is pruned.

A leaf module apart from :mod:`tracescore.settings`, so the top-level config composes it
without importing the pruning code.
"""

from __future__ import annotations

from pydantic import Field

from tracescore.settings import Duration, Section

KINDS = (
    "spans",
    "logs",
    "scores",
    "sampling_decisions",
    "judge_cache",
    "alerts",
    "conversations",
    "feedback",
    "quarantine",
    "insights",
)
"""The kinds of data a duration can be set for, in the order a pass prunes them."""


class RetentionConfig(Section):
    """Each kind is kept forever unless given a duration (``90``, ``15m``, ``7d``)."""

    spans: Duration | None = None
    """Age by the span's end time. A trace's spans go together, once the last of them is this
    old and the trace is no longer waiting to be scored; its scores stay."""
    logs: Duration | None = None
    """Age by the log record's time (records of a trace still waiting to be scored wait too)."""
    scores: Duration | None = None
    """Age by the score's creation time."""
    sampling_decisions: Duration | None = None
    """Age by the decision's time (and the per-minute tallies of unsampled traces by minute)."""
    judge_cache: Duration | None = None
    """Age by the time the verdict was cached."""
    alerts: Duration | None = None
    """Alert events (delivered ones) by their time, and resolved alert states not evaluated
    since; firing states and undelivered notifications are kept."""
    conversations: Duration | None = None
    """Age by when the conversation's last turn was recorded: the conversation goes whole, its
    turns (what its users said) with it, unless it is being scored; its scores stay."""
    feedback: Duration | None = None
    """Human feedback (API and OTLP) by the time it was recorded."""
    quarantine: Duration | None = None
    """Ingest journal entries set aside as unstorable (``/api/ingest/quarantine``), by when the
    request was received: the request bodies, spans and text included."""
    insights: Duration | None = None
    """Failure modes (``/api/v1/insights``) no insights pass has found for this long, by the
    last pass that did, and the stored texts of failed runs by when they failed. The latest
    pass's groups and their runs stay whatever their age."""
    interval: Duration = 3600.0
    """Time between the starts of two pruning passes (run by one replica at a time)."""
    batch_size: int = Field(1000, ge=1, le=100_000)
    """Rows deleted per transaction: small, so ingest and scoring writes wait a few ms at most."""
    leader_lease: Duration = 180.0
    """How long the pruning replica's lease lasts unrenewed; another replica continues after."""

    def durations(self) -> dict[str, float]:
        """The kinds with a retention, and their durations in seconds."""
        return {kind: seconds for kind in KINDS if (seconds := getattr(self, kind)) is not None}
