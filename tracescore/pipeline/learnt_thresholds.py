"""Pass thresholds, and where each comes from: a binding's own, one learnt from people's
verdicts (``threshold: learn``), the scorer's stated one.

A scorer states what a good run scores from its meaning (``passes_at``); people reviewing runs
may disagree with where that cut falls for their traffic. Once a binding that asks for it has
enough verdicts of both kinds, the cut that agrees with them most replaces the scorer's. The
learning reads the binding's score/verdict pairs (human verdicts are few: hundreds, not the
millions of scores), and each reader keeps what it learnt for ``refresh``: labels in the
scoring processes, calibration in the API, never once per request or per score.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tracescore.monitor.agreement import human_passes
from tracescore.pipeline.bindings import CompiledBinding, pass_threshold, stated_direction
from tracescore.pipeline.config import LearntThreshold, ScorerBinding
from tracescore.store import Database, connect
from tracescore.store.feedback import scored_feedback

Source = Literal["binding", "learnt", "scorer", "default", "asked"]
"""``asked``: the request's own (``?threshold=``, ``--threshold``)."""


@dataclass(frozen=True, slots=True)
class PassThreshold:
    """A binding's pass threshold and where it came from, as answers and pages say it."""

    value: float | None
    source: Source | None
    verdicts: int = 0
    """The human verdicts a learnt threshold was learnt from."""

    @property
    def origin(self) -> str | None:
        """``binding``, ``learnt from 34 verdicts``, ``scorer default``, ``feedback default``,
        ``asked``."""
        if self.source == "learnt":
            return f"learnt from {self.verdicts} verdicts"
        if self.source in ("scorer", "default"):
            return {"scorer": "scorer default", "default": "feedback default"}[self.source]
        return self.source


def learn_threshold(
    pairs: Sequence[tuple[float, bool]],
    stated: float,
    higher_is_better: bool,
    min_verdicts: int,
) -> tuple[float, int] | None:
    """The cut that agrees most with people's verdicts on ``(score, person passed it)`` pairs,
    and how many verdicts it was learnt from; None with fewer than ``min_verdicts`` of either
    kind. The candidates are the scores themselves and ``stated``; among equally good cuts the
    one nearest ``stated`` wins (then the lower), so the answer is the same for the same
    verdicts and moves from the scorer's only as far as people's verdicts say."""
    passed = sorted(score for score, person_passed in pairs if person_passed)
    failed = sorted(score for score, person_passed in pairs if not person_passed)
    if len(passed) < min_verdicts or len(failed) < min_verdicts:
        return None

    def agreeing(cut: float) -> int:
        """Verdicts the cut agrees with, by bisection: O(log n) a candidate, so thousands
        of verdicts are learnt from in milliseconds."""
        if higher_is_better:
            return len(passed) - bisect_left(passed, cut) + bisect_left(failed, cut)
        return bisect_right(passed, cut) + len(failed) - bisect_right(failed, cut)

    candidates = sorted({*passed, *failed, stated})
    best = min(candidates, key=lambda cut: (-agreeing(cut), abs(cut - stated), cut))
    return best, len(passed) + len(failed)


def _human_cut(binding: ScorerBinding, stated: float | None) -> float:
    """Where a person's value (not a label) passes: the scorer's threshold, else the middle
    of the binding's scale."""
    if stated is not None:
        return stated
    return 0.5 * float(binding.options.get("scale", 1.0))


def learn_for(database: Database, binding: ScorerBinding) -> PassThreshold:
    """``binding``'s threshold now: learnt when it asks to learn and the verdicts allow,
    else its stated one (:func:`stated_threshold`)."""
    stated = stated_threshold(binding)
    learning = binding.threshold
    if not isinstance(learning, LearntThreshold):
        return stated
    cut = _human_cut(binding, stated.value)
    with connect(database) as connection:
        found = scored_feedback(connection, binding.name)
    pairs = [
        (pair.score, passed)
        for pair in found
        if (passed := human_passes(pair.value, pair.label, cut)) is not None
    ]
    learnt = learn_threshold(pairs, cut, stated_direction(binding), learning.min_verdicts)
    if learnt is None:
        return stated
    return PassThreshold(learnt[0], "learnt", learnt[1])


def stated_threshold(binding: ScorerBinding) -> PassThreshold:
    """The threshold the configuration states: the binding's number, else the scorer's."""
    value = pass_threshold(binding)
    if value is None:
        return PassThreshold(None, None)
    return PassThreshold(value, "binding" if isinstance(binding.threshold, float) else "scorer")


class LearntThresholds:
    """Every binding's :class:`PassThreshold`, each learnt one kept for its ``refresh``: what
    the API and the scoring processes ask, from any thread."""

    def __init__(
        self,
        database: Database,
        bindings: Sequence[ScorerBinding],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.database = database
        self.bindings = {binding.name: binding for binding in bindings}
        self.clock = clock
        self._kept: dict[str, tuple[float, PassThreshold]] = {}
        self._lock = threading.Lock()

    @property
    def learning(self) -> list[ScorerBinding]:
        """The bindings that learn their threshold."""
        return [b for b in self.bindings.values() if isinstance(b.threshold, LearntThreshold)]

    def get(self, name: str) -> PassThreshold:
        """The named binding's threshold (none for a name not configured)."""
        binding = self.bindings.get(name)
        if binding is None:
            return PassThreshold(None, None)
        learning = binding.threshold
        if not isinstance(learning, LearntThreshold):
            return stated_threshold(binding)
        now = self.clock()
        with self._lock:
            kept = self._kept.get(name)
        if kept is not None and now - kept[0] < learning.refresh:
            return kept[1]
        found = learn_for(self.database, binding)
        with self._lock:
            self._kept[name] = (now, found)
        return found


def label_with_learnt(database: Database, bindings: Sequence[CompiledBinding]) -> None:
    """Set each ``threshold: learn`` binding's threshold to what people's verdicts give now:
    what a one-off command (``tracescore rescore``) labels with, as the service's scoring
    processes do. Bindings that do not learn keep theirs."""
    learnt = LearntThresholds(database, [binding.config for binding in bindings])
    for binding in bindings:
        if isinstance(binding.config.threshold, LearntThreshold):
            binding.threshold = learnt.get(binding.name).value
