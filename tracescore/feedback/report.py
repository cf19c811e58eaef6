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
from tracescore.pipeline.learnt_thresholds import LearntThresholds, PassThreshold
from tracescore.settings import parse_duration
from tracescore.store import Connection, Database
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
    """The pass/fail cut of each binding and where it came from: its pass threshold (its
    ``threshold``, learnt from verdicts with ``threshold: learn``, else its scorer's: see
    :mod:`~tracescore.pipeline.learnt_thresholds`), else the feedback default."""

    learnt: LearntThresholds
    default: float

    @classmethod
    def of(cls, config: FeedbackSettings, database: Database) -> Thresholds:
        return cls(LearntThresholds(database, config.scorers), config.feedback.default_threshold)

    def of_binding(self, binding: str) -> PassThreshold:
        found = self.learnt.get(binding)
        return found if found.value is not None else PassThreshold(self.default, "default")

    def cut(self, binding: str) -> float:
        value = self.of_binding(binding).value
        assert value is not None, "of_binding falls back to the default"
        return value


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
    threshold: PassThreshold,
    config: FeedbackConfig,
    *,
    since: datetime | None = None,
    scorer_version: str | None = None,
) -> dict[str, Any]:
    """Agreement of ``binding``'s scores with feedback recorded since ``since``: overall and
    per (scorer version, judge model), most pairs first, at ``threshold`` (whose origin the
    report says: ``threshold_source``)."""
    cut = threshold.value
    assert cut is not None, "calibration is always at some cut"
    where = {"scorer_version": scorer_version} if scorer_version is not None else {}
    pairs = scored_feedback(connection, binding, since=since, where=where)
    groups: dict[tuple[str, str | None], list[ScoredFeedback]] = defaultdict(list)
    for pair in pairs:
        groups[(pair.scorer_version, pair.judge_model)].append(pair)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0][0], item[0][1] or ""))
    return {
        "binding": binding,
        "threshold": cut,
        "threshold_source": threshold.origin,
        "since": utc_text(since),
        "scorer_version": scorer_version,
        "confidence": config.confidence,
        "overall": figures(pairs, cut, config).to_dict(),
        "groups": [
            {
                "scorer_version": version,
                "judge_model": model,
                **figures(members, cut, config).to_dict(),
            }
            for (version, model), members in ordered
        ],
    }
