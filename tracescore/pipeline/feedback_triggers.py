"""Feedback triggers (``scorers[].on_feedback``): which bindings a verdict has judge its run.

A run someone said went wrong is judged now, sampled or not, once, within the binding's caps.
Two halves, joined by the ``feedback_triggers`` table (:mod:`tracescore.store.feedback_triggers`):

* :func:`verdict_triggers` (here) tells which bindings a verdict triggers; the feedback store
  writes those triggers in the verdict's own transaction, whether it came over
  ``POST /api/feedback``, the review page or OTLP (:mod:`tracescore.feedback.scan`). A verdict
  acknowledged is a trigger stored: a restart, or a kill, between the verdict and its judging
  loses nothing.
* :class:`~tracescore.pipeline.trigger_judging.FeedbackTriggers`, a loop of every scoring
  process, judges them.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracescore.pipeline.config import FeedbackTrigger, ScorerBinding
from tracescore.store.feedback import Feedback, TriggersOf
from tracescore.store.feedback_triggers import NewTrigger


def is_negative(rule: FeedbackTrigger, verdict: Feedback) -> bool:
    """The verdict says the run went wrong, by ``rule``: a negative label (case aside) or a
    value below ``rule.below``, under one of ``rule.names`` when it lists any."""
    if rule.names and verdict.name not in rule.names:
        return False
    labels = {label.casefold() for label in rule.labels}
    if verdict.label is not None and verdict.label.casefold() in labels:
        return True
    return rule.below is not None and verdict.value is not None and verdict.value < rule.below


def verdict_triggers(bindings: Sequence[ScorerBinding]) -> TriggersOf | None:
    """What verdicts trigger, for the feedback store (None: no binding has ``on_feedback``)."""
    watching = [(b.name, b.on_feedback) for b in bindings if b.on_feedback is not None]
    if not watching:
        return None

    def triggers(verdicts: Sequence[Feedback]) -> list[NewTrigger]:
        return [
            NewTrigger(verdict.trace_id, verdict.span_id, name, verdict.id)
            for verdict in verdicts
            for name, rule in watching
            if is_negative(rule, verdict)
        ]

    return triggers
