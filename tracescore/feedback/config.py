"""The ``feedback:`` section: the OTLP feedback scan, calibration intervals and the review queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import Field

from tracescore.pipeline.config import ScorerBinding
from tracescore.settings import Duration, Section


class ReviewConfig(Section):
    """Which runs the review queue proposes (``GET /api/review-queue``, the review page)."""

    window: Duration = 7 * 86400.0
    """Scores older than this are not proposed."""
    candidates: int = Field(2000, ge=1)
    """The most recent scored runs of each binding in the window that the rules look at: a
    sample of the window, so a page of the queue costs the same however many scores it holds."""
    near_threshold: float = Field(0.1, ge=0)
    """A score within this of its binding's threshold is proposed: the judge's least sure calls."""
    disagreement: float = Field(0.5, gt=0)
    """Two bindings' scores on one run this far apart (or on opposite sides of their
    thresholds) propose the run."""
    new_version_reviews: int = Field(30, ge=0)
    """A scorer version with fewer reviewed runs than this has its runs proposed."""
    random_share: float = Field(0.2, ge=0, le=1)
    """Share of every queue drawn uniformly at random from unreviewed runs, so that calibration
    on reviewed runs is not biased towards the hard cases the other rules pick."""


class FeedbackConfig(Section):
    scan: bool = True
    """Read human feedback sent over OTLP (``gen_ai.evaluation.result`` records marked human)
    from the spans and log records ingest stores. It reads every newly stored trace, which
    costs ingest about 5 % of its CPU at full speed (17,900 against 17,000 spans per CPU-second
    in ``benchmarks/ingest.py``); false when feedback only comes through the API."""
    scan_interval: Duration = 5.0
    """How often each instance reads newly stored spans and log records for OTLP feedback."""
    default_threshold: float = 0.5
    """Pass/fail cut for calibration of a binding that has no ``threshold``."""
    confidence: float = Field(0.95, gt=0, lt=1)
    """Confidence level of the calibration intervals."""
    min_ci_samples: int = Field(10, ge=4)
    """Fewer pairs than this: figures without intervals."""
    review: ReviewConfig = Field(default_factory=ReviewConfig)


class FeedbackSettings(Protocol):
    """What feedback reads of a service's configuration: the bindings and the ``feedback:``
    section. ``tracescore.config.Config`` is one; named by this protocol rather than by that
    class, which is composed from every part's sections (this package's among them), so that
    no import, not even a type checker's, runs from here back up to it."""

    @property
    def scorers(self) -> Sequence[ScorerBinding]: ...

    @property
    def feedback(self) -> FeedbackConfig: ...
