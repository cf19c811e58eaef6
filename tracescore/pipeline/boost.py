"""Alert-driven sampling: a binding's ``sampling.boost`` raises its rate while an alert fires.

The firing state lives in the database (``alert_states``, written by whichever instance
evaluates the rules), so every process reads it, at most every ``workers.boost_refresh``
seconds and never per trace: one small query per few seconds against a hash per trace. Between reads the
cached state is used, so a boost starts and ends within a few seconds of the alert.

Sampling stays deterministic by trace id (:mod:`tracescore.pipeline.sampling`): a boosted
rate only widens the band of positions sampled, so the traces sampled before the alert are
sampled during it too. A trace is first decided at the *ceiling* (the highest rate any run of
it could get, its agent not yet known), then each run at the rate for its own agent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tracescore.pipeline.config import SamplingConfig, ScorerBinding
from tracescore.store import Database
from tracescore.store.alerts import firing_segments

log = logging.getLogger(__name__)

Segments = Sequence[Mapping[str, Any]]
"""The firing segments of one rule (``{"agent": "support"}``, or ``{}`` unsplit)."""

ReadFiring = Callable[[Sequence[str]], dict[str, list[dict[str, Any]]]]
"""Reads the firing segments of the named rules (:func:`tracescore.store.alerts.firing_segments`)."""


def boosted_rate(sampling: SamplingConfig, firing: Segments, agent: str | None) -> float:
    """The rate a run of ``agent`` is sampled at, given its boost rule's firing segments.

    A segment that names an agent (the rule is split by agent) boosts that agent's runs only;
    one that does not boosts every run. A boost never lowers the binding's own rate.
    """
    boost = sampling.boost
    if boost is None or not any(
        "agent" not in segment or segment["agent"] == agent for segment in firing
    ):
        return sampling.rate
    return max(sampling.rate, boost.rate)


def ceiling_rate(sampling: SamplingConfig, firing: Segments) -> float:
    """The highest rate any run of a trace may be sampled at now: what a trace is decided at
    before it is loaded and its runs' agents are known."""
    boost = sampling.boost
    if boost is None or not firing:
        return sampling.rate
    return max(sampling.rate, boost.rate)


class Boosts:
    """The firing state of the rules the bindings' boosts name, cached per process."""

    def __init__(
        self,
        bindings: Sequence[ScorerBinding],
        read: ReadFiring | None,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rules = sorted(
            {b.sampling.boost.while_ for b in bindings if b.sampling.boost is not None}
        )
        self._read = read if self._rules else None
        self._interval = interval
        self._clock = clock
        self._read_at: float | None = None
        self._firing: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Some binding has a boost to watch."""
        return self._read is not None

    def refresh(self) -> None:
        """Read the firing state if the cached one is older than the interval; a failed read
        keeps the last state (the database may be restarting) and is tried again next time."""
        if self._read is None:
            return
        now = self._clock()
        with self._lock:
            if self._read_at is not None and now - self._read_at < self._interval:
                return
            self._read_at = now
        try:
            firing = self._read(self._rules)
        except Exception as exc:  # noqa: BLE001 - sampling goes on at the last known rates
            log.warning("reading alert states for sampling boosts failed: %s", exc)
            return
        self._firing = firing

    def firing(self, binding: ScorerBinding) -> Segments:
        boost = binding.sampling.boost
        return self._firing.get(boost.while_, ()) if boost is not None else ()

    def rate(self, binding: ScorerBinding, agent: str | None) -> float:
        return boosted_rate(binding.sampling, self.firing(binding), agent)

    def ceiling(self, binding: ScorerBinding) -> float:
        return ceiling_rate(binding.sampling, self.firing(binding))


def store_boosts(
    bindings: Sequence[ScorerBinding], database: Database | None, interval: float
) -> Boosts:
    """The boosts of ``bindings``, read from ``database``'s alert states (none without one) at
    most every ``interval`` seconds."""
    if database is None:
        return Boosts(bindings, None, interval)
    return Boosts(bindings, lambda rules: firing_segments(database, rules), interval)
