"""A binding's ``after:`` compiled: given the upstream binding's score row on a run, whether
the run is *flagged* (the upstream condition holds), *explored* (not flagged, but in the
``explore`` share) or not triggered, and why.

Exploration is decided as sampling is (:mod:`tracescore.pipeline.sampling`): a hash of the run,
so every process and instance agrees and a re-scored trace gets the same answer. The key is
salted with the binding's name and the run's span: keyed by the trace id alone, exploration
would nest inside the binding's own sampling band and pick the sampled runs again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tracescore.extract.model import AgentRun
from tracescore.pipeline.cascade_config import CascadeConfig
from tracescore.pipeline.sampling import sampled_at, unit_hash
from tracescore.store.scores import StoredScore

TriggerKind = Literal["flagged", "explored"]
NOT_TRIGGERED = "skipped_cascade"
"""The status of a cascade binding's row on a run it did not score."""


@dataclass(frozen=True, slots=True)
class Trigger:
    """What a cascade decided for one run."""

    kind: TriggerKind | None
    """None: not triggered (:attr:`reason` says why)."""
    upstream: str
    upstream_status: str | None
    """The upstream row's status; None when the upstream has no row for the run."""
    upstream_score: float | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        """As recorded in the row's ``steps.cascade`` (the coverage of each stage counts it)."""
        return {
            "after": self.upstream,
            "trigger": self.kind or "none",
            "upstream_status": self.upstream_status,
            "upstream_score": self.upstream_score,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Gate:
    """``after:`` of one binding, compiled once when the binding is."""

    binding: str
    config: CascadeConfig

    @property
    def upstream(self) -> str:
        return self.config.binding

    def decide(self, rows: Sequence[StoredScore], run: AgentRun) -> Trigger:
        """The decision on ``run`` from the upstream's row among ``rows`` (the trace's rows so
        far), if it has one."""
        upstream = self.upstream
        row = next(
            (
                r
                for r in rows
                if r["binding"] == upstream
                and r["span_id"] == run.span_id
                and r["trace_id"] == run.trace_id
            ),
            None,
        )
        if row is None:
            return Trigger(
                None,
                upstream,
                None,
                None,
                f"{upstream} has no score for this run (its filter, when: or sampling left it out)",
            )
        status, score = row["status"], row["score"]
        if status not in ("ok", "error"):
            return Trigger(
                None, upstream, status, None, f"{upstream} did not score this run ({status})"
            )
        if (flag := self._flag(status, score)) is not None:
            return Trigger("flagged", upstream, status, score, flag)
        config = self.config
        explored = config.explore > 0.0 and sampled_at(
            unit_hash(f"{run.trace_id}\x1f{run.span_id}\x1fexplore\x1f{self.binding}"),
            config.explore,
        )
        seen = "errored" if status == "error" else f"scored {score:.3g}"
        if explored:
            return Trigger(
                "explored",
                upstream,
                status,
                score,
                f"{upstream} {seen}: explored ({config.explore:g} of such runs)",
            )
        return Trigger(None, upstream, status, score, f"{upstream} {seen}: {self._wanted()}")

    def _flag(self, status: str, score: float | None) -> str | None:
        """Why the upstream row flags the run, or None."""
        config, upstream = self.config, self.upstream
        if status == "error":
            return f"{upstream} errored" if config.errored else None
        if score is None:
            return None
        if config.below is not None and score < config.below:
            return f"{upstream} scored {score:.3g}, below {config.below:g}"
        if config.above is not None and score > config.above:
            return f"{upstream} scored {score:.3g}, above {config.above:g}"
        return None

    def _wanted(self) -> str:
        """What would have flagged the run, for a not-triggered row's reason."""
        config = self.config
        wanted = [
            *([f"below {config.below:g}"] if config.below is not None else []),
            *([f"above {config.above:g}"] if config.above is not None else []),
            *(["errored"] if config.errored else []),
        ]
        return f"not flagged (flags {' or '.join(wanted)})"


def compile_gate(binding: str, config: CascadeConfig | None) -> Gate | None:
    return Gate(binding, config) if config is not None else None
