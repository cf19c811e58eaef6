"""Deterministic ratio sampling by trace id, bit-compatible with Mastra's rule.

A trace is sampled at rate ``r`` when ``uint48_be(sha256(key)[:6]) / 2**48 < r``, with the trace
id (lowercase hex) as the key. Because the hash is fixed per trace, every binding with the same
rate makes the same decision for a trace, and rates nest: a trace sampled at 10 % is also
sampled at 20 %. Every process and every instance agrees without coordination.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

from tracescore.pipeline.boost import Boosts
from tracescore.pipeline.config import ScorerBinding
from tracescore.store.trace_queue import SamplingRule, TraceQueue

_SCALE = float(2**48)


def unit_hash(key: str) -> float:
    """The trace's position in [0, 1): the first six bytes of sha256(key), big-endian, / 2**48."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:6], "big") / _SCALE


def is_sampled(key: str, rate: float) -> bool:
    return sampled_at(unit_hash(key), rate) if 0.0 < rate < 1.0 else rate >= 1.0


def sampled_at(position: float, rate: float) -> bool:
    """:func:`is_sampled` for a trace whose :func:`unit_hash` is known: the worker hashes each
    trace id once and asks for every binding's rate."""
    return rate >= 1.0 or (rate > 0.0 and position < rate)


class SkipMetrics(Protocol):
    """The metrics traces finished unsampled at promotion go to (:mod:`tracescore.metrics`, or
    a scoring process's relay)."""

    def traces_done(self, count: int) -> None: ...

    def sampling_decision(self, binding: str, sampled: bool, count: int = 1) -> None: ...


def skip_unsampled(
    queue: TraceQueue, bindings: Sequence[ScorerBinding], metrics: SkipMetrics, boosts: Boosts
) -> None:
    """Have ``queue``'s promotion finish the traces no binding of ``bindings`` samples
    (:class:`~tracescore.store.trace_queue.SamplingRule`), counting them in ``metrics``.

    Since rates nest (see above), some binding samples a trace exactly when the highest rate
    does: with ``boosts``, the highest rate a binding may sample at now (its cached alert
    state, refreshed by the worker before each claim), so a boosted binding is honoured here
    too. Nothing is skipped when a binding samples every trace, or when a binding scores
    conversations: every trace's turn must then be recorded, sampled or not.
    """
    if any(binding.target == "conversation" for binding in bindings):
        return
    if not bindings or any(binding.sampling.rate >= 1.0 for binding in bindings):
        return
    names = tuple(binding.name for binding in bindings)

    def skipped(count: int) -> None:
        metrics.traces_done(count)
        for name in names:
            metrics.sampling_decision(name, False, count)

    if boosts.active:

        def sampled(trace_id: str) -> bool:
            rate = max(boosts.ceiling(binding) for binding in bindings)
            return sampled_at(unit_hash(trace_id), rate)

    else:
        rate = max(binding.sampling.rate for binding in bindings)

        def sampled(trace_id: str) -> bool:
            return sampled_at(unit_hash(trace_id), rate)

    queue.sampling = SamplingRule(sampled, names)
    queue.on_skipped = skipped
