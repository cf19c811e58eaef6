"""Alert rule verdicts: per segment, from SQL aggregates over the rule's windows.

Pure reads: a verdict says whether a rule's condition holds for a segment at a given time;
what that changes (state, notifications) is :mod:`tracescore.monitor.alerts`' business.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tracescore.monitor.agreement import Pair, agreement
from tracescore.monitor.config import (
    AgreementRule,
    AlertRule,
    ErrorRateRule,
    FailRateRule,
    FailureModeRule,
    RegressionRule,
    ThresholdRule,
)
from tracescore.monitor.stats import welch_p_value
from tracescore.store import Connection
from tracescore.store.feedback import scored_feedback
from tracescore.store.insights import current_groups
from tracescore.store.score_aggregates import GroupStats, Moments, aggregate_scores
from tracescore.store.score_reads import ScoreFilter
from tracescore.times import utc_text


def _duration_text(seconds: float) -> str:
    """``3600`` → ``1h``: windows as people write them, for alert texts."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def finite(value: float | None) -> float | None:
    """JSON columns (PostgreSQL) refuse NaN and infinities."""
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A rule's finding for one segment at one evaluation."""

    segment: dict[str, Any]
    firing: bool
    value: float | None
    summary: str
    details: dict[str, Any]


def _filter(rule: AlertRule, since: datetime, until: datetime) -> ScoreFilter:
    return ScoreFilter(
        scorer=rule.scorer,
        scorer_version=rule.scorer_version,
        binding=rule.binding,
        agent=rule.agent,
        service=rule.service,
        model=rule.model,
        since=since,
        until=until,
    )


def _threshold(connection: Connection, rule: ThresholdRule, now: datetime) -> list[Verdict]:
    window = timedelta(seconds=rule.window)
    quantile = rule.quantile
    groups = aggregate_scores(
        connection,
        _filter(rule, now - window, now),
        rule.segment_by,
        quantiles=[quantile] if quantile is not None else [],
    )
    verdicts = []
    for group in groups:
        n = group.moments.n
        if n < rule.min_samples:
            continue
        value = group.moments.mean if quantile is None else group.quantiles[quantile]
        word, bound = rule.side
        firing = rule.crossed_by(value)
        verdicts.append(
            Verdict(
                segment=dict(zip(rule.segment_by, group.group, strict=True)),
                firing=firing,
                value=value,
                summary=(
                    f"{rule.subject} {rule.stat} {value:.3f} over the last {_duration_text(rule.window)} "
                    f"is {'' if firing else 'not '}{word} {bound:g} (n={n})"
                ),
                details={"stat": rule.stat, word: bound, "n": n, "window_seconds": rule.window},
            )
        )
    return verdicts


def _segment_moments(
    connection: Connection, rule: AlertRule, since: datetime, until: datetime
) -> dict[tuple[Any, ...], Moments]:
    groups = aggregate_scores(connection, _filter(rule, since, until), rule.segment_by)
    return {group.group: group.moments for group in groups}


class BaselineCache:
    """Moments of a regression rule's baseline in aligned parts, kept between rounds.

    A 7-day baseline re-aggregated every minute would scan a week of rows each round. Its
    complete parts (an hour, or the window if shorter, aligned to the epoch) no longer change
    once past, so each round only queries the parts not seen yet and the two partial edges:
    about three windows' worth of rows however long the baseline. Scores rescored in place
    after their part was cached are not seen until the evaluator restarts; for a baseline this
    is immaterial.
    """

    SETTLE_SECONDS = 600.0
    """A part is cached only once it ended this long ago. A score's ``created_at`` is taken when
    its scorer finishes but the row is committed with the trace's other scores, after the
    slowest judge; rows committed later than this after their time are missed by the cache."""

    def __init__(self, rule: RegressionRule) -> None:
        self.rule = rule
        self.part = int(max(60.0, min(rule.window, 3600.0)))
        self.parts: dict[int, dict[tuple[Any, ...], Moments]] = {}

    def moments(
        self, connection: Connection, since: datetime, until: datetime, now: datetime
    ) -> dict[tuple[Any, ...], Moments]:
        start, end = since.timestamp(), until.timestamp()
        first = math.ceil(start / self.part) * self.part
        last = math.floor(min(end, now.timestamp() - self.SETTLE_SECONDS) / self.part) * self.part
        if last <= first:
            return _segment_moments(connection, self.rule, since, until)
        self.parts = {key: value for key, value in self.parts.items() if key >= first}
        missing = [key for key in range(first, last, self.part) if key not in self.parts]
        if missing:
            self._fetch(connection, missing[0], missing[-1] + self.part)
        total: dict[tuple[Any, ...], Moments] = defaultdict(Moments)
        for key in range(first, last, self.part):
            for segment, part in self.parts[key].items():
                total[segment] += part
        for edge_start, edge_end in ((start, first), (last, end)):
            if edge_end > edge_start:
                edge = _segment_moments(connection, self.rule, _at(edge_start), _at(edge_end))
                for segment, part in edge.items():
                    total[segment] += part
        return dict(total)

    def _fetch(self, connection: Connection, start: int, end: int) -> None:
        for key in range(start, end, self.part):
            self.parts.setdefault(key, {})
        where = _filter(self.rule, _at(start), _at(end))
        for group in aggregate_scores(
            connection, where, self.rule.segment_by, bucket_seconds=self.part
        ):
            assert group.bucket is not None
            self.parts[int(group.bucket.timestamp())][group.group] = group.moments


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _regression(
    connection: Connection, rule: RegressionRule, now: datetime, cache: BaselineCache | None
) -> list[Verdict]:
    window_start = now - timedelta(seconds=rule.window)
    baseline_start = window_start - timedelta(seconds=rule.baseline)
    current = _segment_moments(connection, rule, window_start, now)
    baseline = (
        cache.moments(connection, baseline_start, window_start, now)
        if cache is not None
        else _segment_moments(connection, rule, baseline_start, window_start)
    )
    verdicts = []
    for segment, cur in current.items():
        base = baseline.get(segment)
        if cur.n < rule.min_samples or base is None or base.n < rule.min_baseline_samples:
            continue
        change = cur.mean - base.mean
        worse_by = -change if rule.direction == "decrease" else change
        p_value = welch_p_value(cur, base, rule.direction)
        firing = worse_by >= rule.min_delta and p_value < rule.alpha
        verdicts.append(
            Verdict(
                segment=dict(zip(rule.segment_by, segment, strict=True)),
                firing=firing,
                value=cur.mean,
                summary=(
                    f"{rule.subject} mean {cur.mean:.3f} over the last {_duration_text(rule.window)} vs "
                    f"{base.mean:.3f} over the previous {_duration_text(rule.baseline)} "
                    f"({change:+.3f}); "
                    f"Welch's t-test one-sided p={p_value:.2g} (n={cur.n} vs {base.n})"
                ),
                details={
                    "test": "welch_t",
                    "alternative": "less" if rule.direction == "decrease" else "greater",
                    "p_value": finite(p_value),
                    "alpha": rule.alpha,
                    "delta": change,
                    "min_delta": rule.min_delta,
                    "current": {**cur.to_dict(), "since": utc_text(window_start)},
                    "baseline": {**base.to_dict(), "since": utc_text(baseline_start)},
                },
            )
        )
    return verdicts


def _failed_runs_note(count: int) -> str:
    """Which of the errors were runs that failed before answering, when any were."""
    return f", {count} of them runs that failed before answering" if count else ""


@dataclass(frozen=True, slots=True)
class _Share:
    """A segment's share that a rate rule bounds: the rate, over how many rows, what the
    summary calls it and how it counts, and the notification's details."""

    rate: float | None
    n: int
    name: str
    counted: str
    details: dict[str, Any]


def _error_share(group: GroupStats, above: float) -> _Share:
    note = _failed_runs_note(group.failed_runs)
    return _Share(
        group.error_rate,
        group.attempted,
        "error rate",
        f"{group.errors} of {group.attempted}{note}",
        {
            "errors": group.errors,
            "failed_runs": group.failed_runs,
            "attempted": group.attempted,
            "above": above,
        },
    )


def _fail_share(group: GroupStats, above: float) -> _Share:
    n = group.moments.n
    return _Share(
        group.fail_rate,
        n,
        "fail rate",
        f"{group.failed} of {n} scored runs failed their pass threshold",
        {"failed": group.failed, "scored": n, "above": above},
    )


def _rate(
    connection: Connection,
    rule: ErrorRateRule | FailRateRule,
    now: datetime,
    share: Callable[[GroupStats, float], _Share],
) -> list[Verdict]:
    """Per segment, whether a share of the window's rows (``share``) is above ``rule.above``."""
    since = now - timedelta(seconds=rule.window)
    verdicts = []
    for group in aggregate_scores(connection, _filter(rule, since, now), rule.segment_by):
        found = share(group, rule.above)
        if found.rate is None or found.n < rule.min_samples:
            continue
        firing = found.rate > rule.above
        verdicts.append(
            Verdict(
                segment=dict(zip(rule.segment_by, group.group, strict=True)),
                firing=firing,
                value=found.rate,
                summary=(
                    f"{rule.subject} {found.name} {found.rate:.1%} over the last "
                    f"{_duration_text(rule.window)} is {'' if firing else 'not '}above "
                    f"{rule.above:.1%} ({found.counted})"
                ),
                details=found.details,
            )
        )
    return verdicts


def _agreement(connection: Connection, rule: AgreementRule, now: datetime) -> list[Verdict]:
    """Kappa or MAE of the window's scored runs that have feedback, per segment."""
    where = {
        column: value
        for column in ("scorer_version", "agent", "service", "model")
        if (value := getattr(rule, column)) is not None
    }
    if rule.scorer is not None:
        where["scorer_id"] = rule.scorer
    pairs = scored_feedback(
        connection, rule.binding, since=now - timedelta(seconds=rule.window), until=now, where=where
    )
    segments: dict[tuple[Any, ...], list[Pair]] = defaultdict(list)
    for pair in pairs:
        key = tuple(getattr(pair, column) for column in rule.segment_by)
        segments[key].append(Pair(pair.score, pair.value, pair.label))
    word, bound = rule.side
    verdicts = []
    for segment, members in segments.items():
        figures = agreement(members, rule.threshold)
        n = figures.n_verdicts if rule.metric == "kappa" else figures.n_values
        value = figures.kappa if rule.metric == "kappa" else figures.mae
        if value is None or n < rule.min_samples:
            continue
        firing = rule.crossed_by(value)
        verdicts.append(
            Verdict(
                segment=dict(zip(rule.segment_by, segment, strict=True)),
                firing=firing,
                value=value,
                summary=(
                    f"{rule.binding} {rule.metric} against human feedback {value:.3f} over the runs "
                    f"scored in the last {_duration_text(rule.window)} is {'' if firing else 'not '}"
                    f"{word} {bound:g} (n={n})"
                ),
                details={
                    "metric": rule.metric,
                    word: bound,
                    "n": n,
                    "window_seconds": rule.window,
                    "agreement": figures.to_dict(),
                },
            )
        )
    return verdicts


def _failure_modes(connection: Connection, rule: FailureModeRule, now: datetime) -> list[Verdict]:
    """A verdict per failure mode of the latest insights pass: new and large enough, or
    growing fast enough."""
    since = (now - timedelta(seconds=rule.window)).timestamp()
    verdicts = []
    for group in current_groups(connection):
        size, before = group["size"], group["previous_size"]
        new = group["first_seen"] > since
        growth = size / before if before else None
        grew = (
            rule.growth is not None
            and growth is not None
            and growth >= rule.growth
            and size >= rule.min_samples
        )
        firing = (new and size >= rule.new_runs) or grew
        why = (
            f"new in the last {_duration_text(rule.window)}"
            if new
            else f"{before} → {size} runs since the pass before"
        )
        verdicts.append(
            Verdict(
                segment={"failure_mode": group["id"]},
                firing=firing,
                value=float(size),
                summary=f"failure mode {group['name']!r}: {size} runs ({group['share']:.0%} of failed runs), {why}",
                details={
                    "name": group["name"],
                    "size": size,
                    "previous_size": before,
                    "new": new,
                    "growth": finite(growth),
                    "new_runs": rule.new_runs,
                    "min_growth": rule.growth,
                },
            )
        )
    return verdicts


def evaluate_rule(
    connection: Connection, rule: AlertRule, now: datetime, *, cache: BaselineCache | None = None
) -> list[Verdict]:
    """The verdict of ``rule`` for every segment with enough data in the window ending at ``now``.

    Segments without enough samples get no verdict: their alert state stays as it was.
    ``cache`` (regression rules) carries baseline parts over from earlier rounds.
    """
    if isinstance(rule, ThresholdRule):
        return _threshold(connection, rule, now)
    if isinstance(rule, RegressionRule):
        return _regression(connection, rule, now, cache)
    if isinstance(rule, AgreementRule):
        return _agreement(connection, rule, now)
    if isinstance(rule, FailureModeRule):
        return _failure_modes(connection, rule, now)
    if isinstance(rule, FailRateRule):
        return _rate(connection, rule, now, _fail_share)
    return _rate(connection, rule, now, _error_share)
