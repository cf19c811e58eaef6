"""A binding's calibration report: its score/feedback pairs' agreement, overall and per
scorer version and judge model, which is what tells a new prompt version or a cheaper judge
apart from the old one. Shared by the API, ``tracescore calibrate`` and the agreement rule."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tracescore.feedback.config import FeedbackConfig, FeedbackSettings
from tracescore.monitor.agreement import Agreement, Pair, agreement
from tracescore.pipeline.bindings import pass_threshold
from tracescore.settings import parse_duration
from tracescore.store import Connection
from tracescore.store.dialect import as_utc
from tracescore.store.feedback import ScoredFeedback, scored_feedback
from tracescore.times import utc_text


def since_moment(text: str, now: datetime) -> datetime:
    """``7d`` (a duration back from ``now``) or an ISO date and time; ValueError otherwise."""
    try:
        return now - timedelta(seconds=parse_duration(text))
    except ValueError:
        pass
    try:
        return as_utc(datetime.fromisoformat(text))
    except ValueError:
        raise ValueError(
            "a duration such as 7d or an ISO date and time such as 2026-05-04T12:00Z"
        ) from None


@dataclass(frozen=True)
class Thresholds:
    """The pass/fail cut of each binding: its pass threshold (its ``threshold``, else its
    scorer's, :func:`~tracescore.pipeline.bindings.pass_threshold`), else the feedback
    default."""

    by_binding: dict[str, float]
    default: float

    @classmethod
    def of(cls, config: FeedbackSettings) -> Thresholds:
        return cls(
            {
                binding.name: threshold
                for binding in config.scorers
                if (threshold := pass_threshold(binding)) is not None
            },
            config.feedback.default_threshold,
        )

    def cut(self, binding: str) -> float:
        return self.by_binding.get(binding, self.default)


def figures(pairs: Sequence[ScoredFeedback], threshold: float, config: FeedbackConfig) -> Agreement:
    return agreement(
        (Pair(pair.score, pair.value, pair.label) for pair in pairs),
        threshold,
        confidence=config.confidence,
        min_ci_samples=config.min_ci_samples,
    )


def calibration_report(
    connection: Connection,
    binding: str,
    threshold: float,
    config: FeedbackConfig,
    *,
    since: datetime | None = None,
    scorer_version: str | None = None,
) -> dict[str, Any]:
    """Agreement of ``binding``'s scores with feedback recorded since ``since``: overall and
    per (scorer version, judge model), most pairs first."""
    where = {"scorer_version": scorer_version} if scorer_version is not None else {}
    pairs = scored_feedback(connection, binding, since=since, where=where)
    groups: dict[tuple[str, str | None], list[ScoredFeedback]] = defaultdict(list)
    for pair in pairs:
        groups[(pair.scorer_version, pair.judge_model)].append(pair)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0][0], item[0][1] or ""))
    return {
        "binding": binding,
        "threshold": threshold,
        "since": utc_text(since),
        "scorer_version": scorer_version,
        "confidence": config.confidence,
        "overall": figures(pairs, threshold, config).to_dict(),
        "groups": [
            {
                "scorer_version": version,
                "judge_model": model,
                **figures(members, threshold, config).to_dict(),
            }
            for (version, model), members in ordered
        ],
    }
