"""Alert rule evaluation: verdicts from SQL aggregates, persisted state, notifications.

One round (:meth:`AlertEvaluator.run_once`) takes or renews the leader lease, evaluates every
rule into per-segment verdicts, applies state transitions (``ok`` ⇄ ``firing``) and writes a
notification to the outbox for each transition in the same transaction, then delivers the
outbox. Because state and outbox are in the database, a restart neither re-fires nor loses a
notification, and only the instance holding the lease evaluates.

The clock is injected, so tests and the benchmark replay days of windows without sleeping.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
from sqlalchemy import Engine, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection

from tracescore.monitor import metrics
from tracescore.monitor.channels import Channel, build_channels
from tracescore.monitor.config import (
    AlertRule,
    AlertsConfig,
    ErrorRateRule,
    MonitorConfig,
    RegressionRule,
    ThresholdRule,
)
from tracescore.monitor.queries import ScoreFilter, aggregate_scores
from tracescore.monitor.stats import Moments, welch_p_value
from tracescore.store.alerts import AlertEventRow, AlertLeaderRow, AlertStateRow

logger = logging.getLogger("tracescore.alerts")

Clock = Callable[[], datetime]
STATES = AlertStateRow.__table__
EVENTS = AlertEventRow.__table__
LEADER = AlertLeaderRow.__table__
LEASE_NAME = "alerts"


def system_clock() -> datetime:
    return datetime.now(timezone.utc)


def _span(seconds: float) -> str:
    """``3600`` → ``1h``: windows as people write them, for alert texts."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _finite(value: float | None) -> float | None:
    """JSON columns (PostgreSQL) refuse NaN and infinities."""
    return value if value is not None and math.isfinite(value) else None


# --- verdicts -------------------------------------------------------------------------------


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
        scorer=rule.scorer, scorer_version=rule.scorer_version, binding=rule.binding,
        agent=rule.agent, service=rule.service, model=rule.model, since=since, until=until,
    )  # fmt: skip


def _threshold(connection: Connection, rule: ThresholdRule, now: datetime) -> list[Verdict]:
    window = timedelta(seconds=rule.window)
    quantile = rule.quantile
    groups = aggregate_scores(
        connection, _filter(rule, now - window, now), rule.segment_by,
        quantiles=[quantile] if quantile is not None else [],
    )  # fmt: skip
    verdicts = []
    for group in groups:
        n = group.moments.n
        if n < rule.min_samples:
            continue
        value = group.moments.mean if quantile is None else group.quantiles[quantile]
        bound, word = (rule.below, "below") if rule.below is not None else (rule.above, "above")
        firing = value < bound if rule.below is not None else value > bound
        verdicts.append(
            Verdict(
                segment=dict(zip(rule.segment_by, group.group, strict=True)),
                firing=firing,
                value=value,
                summary=(
                    f"{rule.scorer} {rule.stat} {value:.3f} over the last {_span(rule.window)} "
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
        for group in aggregate_scores(connection, where, self.rule.segment_by, bucket_seconds=self.part):
            assert group.bucket is not None
            self.parts[int(group.bucket.timestamp())][group.group] = group.moments


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, timezone.utc)


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
                    f"{rule.scorer} mean {cur.mean:.3f} over the last {_span(rule.window)} vs "
                    f"{base.mean:.3f} over the previous {_span(rule.baseline)} ({change:+.3f}); "
                    f"Welch's t-test one-sided p={p_value:.2g} (n={cur.n} vs {base.n})"
                ),
                details={
                    "test": "welch_t",
                    "alternative": "less" if rule.direction == "decrease" else "greater",
                    "p_value": _finite(p_value),
                    "alpha": rule.alpha,
                    "delta": change,
                    "min_delta": rule.min_delta,
                    "current": {**cur.to_dict(), "since": window_start.isoformat()},
                    "baseline": {**base.to_dict(), "since": baseline_start.isoformat()},
                },
            )
        )
    return verdicts


def _error_rate(connection: Connection, rule: ErrorRateRule, now: datetime) -> list[Verdict]:
    since = now - timedelta(seconds=rule.window)
    verdicts = []
    for group in aggregate_scores(connection, _filter(rule, since, now), rule.segment_by):
        rate = group.error_rate
        if rate is None or group.attempted < rule.min_samples:
            continue
        firing = rate > rule.above
        verdicts.append(
            Verdict(
                segment=dict(zip(rule.segment_by, group.group, strict=True)),
                firing=firing,
                value=rate,
                summary=(
                    f"binding {rule.binding} error rate {rate:.1%} over the last "
                    f"{_span(rule.window)} is {'' if firing else 'not '}above {rule.above:.1%} "
                    f"({group.errors} of {group.attempted})"
                ),
                details={"errors": group.errors, "attempted": group.attempted, "above": rule.above},
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
    return _error_rate(connection, rule, now)


# --- lease ----------------------------------------------------------------------------------


def _insert(connection: Connection) -> Any:
    return pg_insert if connection.dialect.name == "postgresql" else sqlite_insert


def acquire_lease(connection: Connection, owner: str, now: float, duration: float) -> bool:
    """Take or renew the evaluator lease; True if ``owner`` holds it until ``now + duration``.

    One upsert, atomic on both databases: it inserts the row, or updates it only where the
    lease is already ours or has expired, and RETURNING tells whether it did.
    """
    statement = _insert(connection)(LEADER).values(
        name=LEASE_NAME, owner=owner, expires_at=now + duration
    )
    statement = statement.on_conflict_do_update(
        index_elements=["name"],
        set_={"owner": owner, "expires_at": now + duration},
        where=or_(LEADER.c.owner == owner, LEADER.c.expires_at < now),
    ).returning(LEADER.c.owner)
    return connection.execute(statement).first() is not None


def release_lease(connection: Connection, owner: str) -> None:
    """Let another instance take over at once instead of after the lease runs out."""
    connection.execute(
        update(LEADER)
        .where(LEADER.c.name == LEASE_NAME, LEADER.c.owner == owner)
        .values(expires_at=0.0)
    )


# --- state transitions ----------------------------------------------------------------------


def state_key(rule: str, segment: dict[str, Any]) -> str:
    encoded = json.dumps([rule, sorted(segment.items())], default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()[:32]


def _payload(
    rule: AlertRule, status: str, verdict: Verdict, at: float, since: float
) -> dict[str, Any]:
    """The webhook body; the README documents it."""

    def iso(moment: float) -> str:
        return datetime.fromtimestamp(moment, timezone.utc).isoformat()

    return {
        "status": status,
        "rule": rule.name,
        "type": rule.type,
        "segment": verdict.segment,
        "scorer": rule.scorer,
        "binding": rule.binding,
        "summary": verdict.summary,
        "value": _finite(verdict.value),
        "details": verdict.details,
        "at": iso(at),
        "since": iso(since),
    }


@dataclass
class _Transitions:
    """What one rule's verdicts change, worked out before writing."""

    rule: AlertRule
    now: float
    cooldown: float
    channels: list[str]
    events: list[dict[str, Any]] = field(default_factory=list)

    def apply(self, connection: Connection, verdicts: Sequence[Verdict]) -> None:
        known = {
            row.key: row
            for row in connection.execute(select(STATES).where(STATES.c.rule == self.rule.name))
        }
        for verdict in verdicts:
            key = state_key(self.rule.name, verdict.segment)
            state = known.get(key)
            if state is None:
                self._first(connection, key, verdict)
            elif state.state == "ok" and verdict.firing:
                self._fire(connection, state, verdict)
            elif state.state == "firing" and not verdict.firing:
                self._resolve(connection, state, verdict)
            else:
                connection.execute(
                    update(STATES).where(STATES.c.key == key).values(**self._observed(verdict))
                )

    def _observed(self, verdict: Verdict) -> dict[str, Any]:
        return {
            "evaluated_at": self.now,
            "value": _finite(verdict.value),
            "summary": verdict.summary,
            "details": verdict.details,
        }

    def _event(self, key: str, status: str, verdict: Verdict, since: float) -> None:
        self.events.append(
            {
                "key": key,
                "rule": self.rule.name,
                "segment": verdict.segment,
                "status": status,
                "at": self.now,
                "payload": _payload(self.rule, status, verdict, self.now, since),
                "pending": bool(self.channels),
                "pending_channels": list(self.channels),
                "attempts": 0,
            }
        )

    def _first(self, connection: Connection, key: str, verdict: Verdict) -> None:
        values = {
            "key": key,
            "rule": self.rule.name,
            "segment": verdict.segment,
            "state": "firing" if verdict.firing else "ok",
            "since": self.now,
            "notified": verdict.firing,
            "last_fired_at": self.now if verdict.firing else None,
            "version": 0,
            **self._observed(verdict),
        }
        inserted = connection.execute(
            _insert(connection)(STATES).values(values).on_conflict_do_nothing(index_elements=["key"])
        )
        if inserted.rowcount == 1 and verdict.firing:
            self._event(key, "firing", verdict, self.now)

    def _transition(self, connection: Connection, state: Any, values: dict[str, Any]) -> bool:
        """Apply a transition unless another evaluator already changed this state."""
        result = connection.execute(
            update(STATES)
            .where(STATES.c.key == state.key, STATES.c.version == state.version)
            .values(version=state.version + 1, since=self.now, **values)
        )
        return result.rowcount == 1

    def _fire(self, connection: Connection, state: Any, verdict: Verdict) -> None:
        notify = state.last_fired_at is None or self.now - state.last_fired_at >= self.cooldown
        values = {"state": "firing", "notified": notify, **self._observed(verdict)}
        if notify:
            values["last_fired_at"] = self.now
        if self._transition(connection, state, values) and notify:
            self._event(state.key, "firing", verdict, self.now)

    def _resolve(self, connection: Connection, state: Any, verdict: Verdict) -> None:
        values = {"state": "ok", "notified": False, **self._observed(verdict)}
        if self._transition(connection, state, values) and state.notified:
            self._event(state.key, "resolved", verdict, state.since)


# --- the evaluator --------------------------------------------------------------------------


@dataclass
class EvaluationReport:
    leader: bool
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    """Payloads of the transitions this round wrote to the outbox."""
    failed_rules: list[str] = field(default_factory=list)


def default_instance_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class AlertEvaluator:
    """Evaluates the configured rules on a schedule, as leader among instances sharing a database."""

    def __init__(
        self,
        engine: Engine,
        alerts: AlertsConfig,
        monitor: MonitorConfig | None = None,
        *,
        clock: Clock = system_clock,
        channels: dict[str, Channel] | None = None,
    ) -> None:
        self.engine = engine
        self.alerts = alerts
        self.monitor = monitor or MonitorConfig()
        self.clock = clock
        self.owner = self.monitor.instance_id or default_instance_id()
        self._http = httpx.Client()
        self.channels = channels if channels is not None else build_channels(alerts.channels, self._http)
        self._caches = {
            rule.name: BaselineCache(rule) for rule in alerts.rules if isinstance(rule, RegressionRule)
        }

    def close(self) -> None:
        self._http.close()

    def run_once(self) -> EvaluationReport:
        """One round: lease, verdicts, transitions with their outbox rows, delivery."""
        now = self.clock()
        stamp = now.timestamp()
        with self.engine.begin() as connection:
            leader = acquire_lease(connection, self.owner, stamp, self.monitor.leader_lease)
        report = EvaluationReport(leader=leader)
        if not leader:
            return report
        started = time.perf_counter()
        for rule in self.alerts.rules:
            try:
                self._evaluate(rule, now, report)
            except Exception:  # one broken rule (or a dropped connection) must not stop the rest
                logger.exception("alert rule %s failed to evaluate", rule.name)
                report.failed_rules.append(rule.name)
        self.deliver()
        self._export_firing()
        metrics.alert_evaluations.inc()
        metrics.alert_evaluation_seconds.observe(time.perf_counter() - started)
        return report

    def _evaluate(self, rule: AlertRule, now: datetime, report: EvaluationReport) -> None:
        with self.engine.connect() as connection:
            verdicts = evaluate_rule(connection, rule, now, cache=self._caches.get(rule.name))
        transitions = _Transitions(
            rule=rule,
            now=now.timestamp(),
            cooldown=rule.cooldown if rule.cooldown is not None else self.alerts.cooldown,
            channels=rule.channels if rule.channels is not None else list(self.channels),
        )
        with self.engine.begin() as connection:
            transitions.apply(connection, verdicts)
            if transitions.events:
                connection.execute(EVENTS.insert(), transitions.events)
        report.verdicts[rule.name] = verdicts
        report.notifications += [event["payload"] for event in transitions.events]

    def deliver(self) -> None:
        """Send every pending notification to the channels that have not taken it yet."""
        with self.engine.connect() as connection:
            pending = connection.execute(
                select(EVENTS).where(EVENTS.c.pending.is_(True)).order_by(EVENTS.c.id)
            ).all()
        for event in pending:
            remaining, error = [], None
            for name in event.pending_channels:
                channel = self.channels.get(name)
                if channel is None:  # removed from the config since
                    continue
                try:
                    channel.send(event.payload)
                    metrics.alert_notifications.labels(name, "sent").inc()
                except Exception as exc:  # any failure: keep it for the next round
                    logger.warning("alert channel %s failed: %s", name, exc)
                    metrics.alert_notifications.labels(name, "failed").inc()
                    remaining.append(name)
                    error = f"{name}: {exc}"
            attempts = event.attempts + 1
            with self.engine.begin() as connection:
                connection.execute(
                    update(EVENTS)
                    .where(EVENTS.c.id == event.id)
                    .values(
                        pending_channels=remaining,
                        pending=bool(remaining) and attempts < self.alerts.max_delivery_attempts,
                        attempts=attempts,
                        last_error=error,
                    )
                )

    def _export_firing(self) -> None:
        with self.engine.connect() as connection:
            firing = dict(
                connection.execute(
                    select(STATES.c.rule, func.count())
                    .where(STATES.c.state == "firing")
                    .group_by(STATES.c.rule)
                ).all()
            )
        for rule in self.alerts.rules:
            metrics.alerts_firing.labels(rule.name).set(firing.get(rule.name, 0))

    def release(self) -> None:
        with self.engine.begin() as connection:
            release_lease(connection, self.owner)
