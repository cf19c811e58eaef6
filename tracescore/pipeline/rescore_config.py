"""``scorers[].rescore_on_change``: what a binding re-scores when its scorer changes.

Its own module so that :mod:`tracescore.pipeline.config` only names it; the re-scoring itself is
:mod:`tracescore.pipeline.rescore`.
"""

from __future__ import annotations

from pydantic import Field

from tracescore.settings import Duration, Section


class RescoreOnChange(Section):
    """On start, when the binding's scorer version, rendered prompts or judge model differ from
    those it last started with, re-score a sample of the runs the old one scored, beside the
    old scores, within the binding's ``limits``. See [Re-scoring when a scorer
    changes](../configuration.md#re-scoring-when-a-scorer-changes)."""

    sample: int = Field(200, ge=1, le=100_000)
    """Most runs re-scored: a deterministic sample (by run) of those the old version scored."""
    since: Duration = 7 * 86400.0
    """How far back the runs sampled were scored (a duration: ``7d``, ``12h``)."""
    lease: Duration = 15.0
    """How long a process that stopped renewing the binding's re-score (a hung one, or one on
    another machine that died) keeps the others from taking it over. One killed on this machine
    is seen to have ended, and its re-score taken over at once."""
    poll: Duration = 5.0
    """How often a process waiting on another's re-score looks whether it ended or lapsed."""
