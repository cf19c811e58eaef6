"""Alert rule evaluation: verdicts from SQL aggregates, persisted state, notifications.

One round (:meth:`AlertEvaluator.run_once`) takes or renews the leader lease, evaluates every
rule into per-segment verdicts, applies state transitions (``ok`` ⇄ ``firing``) and writes a
notification to the outbox for each transition in the same transaction, then delivers the
outbox. Because state and outbox are in the database, a restart neither re-fires nor loses a
notification, and only the instance holding the lease evaluates.

Verdicts come from :mod:`tracescore.monitor.rules`, the lease from :mod:`tracescore.store.leases`.
The clock is injected, so tests and the benchmark replay days of windows without sleeping.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from tracescore import metrics
from tracescore.monitor.channels import Channel, build_channels
from tracescore.monitor.config import AlertRule, AlertsConfig, MonitorConfig, RegressionRule
from tracescore.monitor.rules import BaselineCache, Verdict, evaluate_rule, finite
from tracescore.monitor.silences import Silence, active_silences, covering
from tracescore.owners import owner_id
from tracescore.store import Connection, Database
from tracescore.store import alerts as stored
from tracescore.store.alerts import AlertState, NewAlertEvent, StateChange
from tracescore.store.leases import acquire_lease, release_lease
from tracescore.store.outage import database_unavailable
from tracescore.times import utc_text

logger = logging.getLogger("tracescore.alerts")

Clock = Callable[[], datetime]
LEASE_NAME = "alerts"
"""The evaluator's lease (:mod:`tracescore.store.leases`): one instance evaluates the rules."""


def system_clock() -> datetime:
    return datetime.now(UTC)


# --- state transitions ----------------------------------------------------------------------


def state_key(rule: str, segment: dict[str, Any]) -> str:
    encoded = json.dumps([rule, sorted(segment.items())], default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()[:32]


def _payload(
    rule: AlertRule, status: str, verdict: Verdict, at: float, since: float
) -> dict[str, Any]:
    """The webhook body; docs/monitoring.md shows one."""
    return {
        "status": status,
        "rule": rule.name,
        "type": rule.type,
        "segment": verdict.segment,
        "scorer": rule.scorer,
        "binding": rule.binding,
        "summary": verdict.summary,
        "value": finite(verdict.value),
        "details": verdict.details,
        "at": utc_text(at),
        "since": utc_text(since),
    }


@dataclass
class _Transitions:
    """What one rule's verdicts change, worked out before writing."""

    rule: AlertRule
    now: float
    cooldown: float
    channels: list[str]
    silences: list[Silence] = field(default_factory=list)
    """The rule's silences and acknowledgements in force: a silenced event goes to no channel."""
    events: list[NewAlertEvent] = field(default_factory=list)

    def apply(self, connection: Connection, verdicts: Sequence[Verdict]) -> None:
        known = stored.rule_states(connection, self.rule.name)
        for verdict in verdicts:
            key = state_key(self.rule.name, verdict.segment)
            state = known.get(key)
            if state is None:
                self._first(connection, key, verdict)
            elif state["state"] == "ok" and verdict.firing:
                self._fire(connection, state, verdict)
            elif state["state"] == "firing" and not verdict.firing:
                self._resolve(connection, state, verdict)
            elif state["state"] == "firing" and not state["notified"] and self._cooled(state):
                self._notify_late(connection, state, verdict)
            else:
                stored.observe_state(connection, key, self._observed(verdict))

    def _observed(self, verdict: Verdict) -> StateChange:
        """What this evaluation saw, as the start of the row change it makes."""
        return {
            "evaluated_at": self.now,
            "value": finite(verdict.value),
            "summary": verdict.summary,
            "details": verdict.details,
        }

    def _event(self, key: str, status: str, verdict: Verdict, since: float) -> None:
        """Write a notification to the outbox, or, while a silence covers the segment, to the
        history only: the payload then says which silence kept it from the channels."""
        payload = _payload(self.rule, status, verdict, self.now, since)
        state = {
            "rule": self.rule.name,
            "segment": verdict.segment,
            "state": status,
            "since": since,
        }
        silence = covering(self.silences, state, self.now, "silence")
        channels = [] if silence is not None else list(self.channels)
        if silence is not None:
            payload["silenced"] = {
                "id": silence.id,
                "until": utc_text(silence.expires_at),
                "author": silence.author,
                "note": silence.note,
            }
        self.events.append(
            {
                "key": key,
                "rule": self.rule.name,
                "segment": verdict.segment,
                "status": status,
                "at": self.now,
                "payload": payload,
                "pending": bool(channels),
                "pending_channels": channels,
                "attempts": 0,
            }
        )

    def _first(self, connection: Connection, key: str, verdict: Verdict) -> None:
        values: AlertState = {
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
        if stored.insert_state(connection, values) and verdict.firing:
            self._event(key, "firing", verdict, self.now)

    def _cooled(self, state: AlertState) -> bool:
        """Whether a firing of this segment may be notified: none was within the cooldown."""
        last = state["last_fired_at"]
        return last is None or self.now - last >= self.cooldown

    def _fire(self, connection: Connection, state: AlertState, verdict: Verdict) -> None:
        notify = self._cooled(state)
        values = self._observed(verdict)
        values["state"] = "firing"
        values["since"] = self.now
        values["notified"] = notify
        if notify:
            values["last_fired_at"] = self.now
        if stored.transition_state(connection, state, values) and notify:
            self._event(state["key"], "firing", verdict, self.now)

    def _notify_late(self, connection: Connection, state: AlertState, verdict: Verdict) -> None:
        """A firing held back by the cooldown that still holds once the cooldown is over."""
        values = self._observed(verdict)
        values["notified"] = True
        values["last_fired_at"] = self.now
        if stored.transition_state(connection, state, values):
            self._event(state["key"], "firing", verdict, state["since"])

    def _resolve(self, connection: Connection, state: AlertState, verdict: Verdict) -> None:
        values = self._observed(verdict)
        values["state"] = "ok"
        values["since"] = self.now
        values["notified"] = False
        if stored.transition_state(connection, state, values) and state["notified"]:
            self._event(state["key"], "resolved", verdict, state["since"])


# --- the evaluator --------------------------------------------------------------------------


@dataclass
class EvaluationReport:
    leader: bool
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    """Payloads of the transitions this round wrote to the outbox."""
    failed_rules: list[str] = field(default_factory=list)


class AlertEvaluator:
    """Evaluates the configured rules on a schedule, as leader among instances sharing a database."""

    def __init__(
        self,
        engine: Database,
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
        self.owner = self.monitor.instance_id or owner_id()
        self._http = httpx.Client()
        self.channels = (
            channels if channels is not None else build_channels(alerts.channels, self._http)
        )
        self._caches = {
            rule.name: BaselineCache(rule)
            for rule in alerts.rules
            if isinstance(rule, RegressionRule)
        }

    def close(self) -> None:
        self._http.close()

    def run_once(self) -> EvaluationReport:
        """One round: lease, verdicts, transitions with their outbox rows, delivery."""
        now = self.clock()
        stamp = now.timestamp()
        with self.engine.begin() as connection:
            leader = acquire_lease(
                connection, self.owner, stamp, self.monitor.leader_lease, LEASE_NAME
            )
        report = EvaluationReport(leader=leader)
        if not leader:
            return report
        started = time.perf_counter()
        for rule in self.alerts.rules:
            try:
                self._evaluate(rule, now, report)
            except Exception as exc:
                if database_unavailable(exc):
                    raise  # the round's loop waits the outage out, logging it once
                # one broken rule must not stop the rest
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
            transitions.silences = active_silences(connection, now.timestamp(), rule.name)
            transitions.apply(connection, verdicts)
            stored.add_events(connection, transitions.events)
        report.verdicts[rule.name] = verdicts
        report.notifications += [event["payload"] for event in transitions.events]

    def deliver(self) -> None:
        """Send every pending notification to the channels that have not taken it yet.

        A channel that fails is not tried again in the same round: a receiver that is down
        costs one timeout per round, not one per pending notification.
        """
        down: set[str] = set()
        for event in stored.pending_events(self.engine):
            if event["pending_channels"] and down.issuperset(event["pending_channels"]):
                continue  # left for the next round, without spending one of its attempts
            remaining, error = [], None
            for name in event["pending_channels"]:
                channel = self.channels.get(name)
                if channel is None:  # removed from the config since
                    continue
                if name in down:
                    remaining.append(name)
                    continue
                try:
                    channel.send(event["payload"])
                    metrics.alert_notifications.labels(name, "sent").inc()
                except Exception as exc:  # noqa: BLE001 - any failure: keep it for the next round
                    logger.warning("alert channel %s failed: %s", name, exc)
                    metrics.alert_notifications.labels(name, "failed").inc()
                    down.add(name)
                    remaining.append(name)
                    error = f"{name}: {exc}"
            attempts = event["attempts"] + 1
            stored.record_delivery(
                self.engine,
                event["id"],
                remaining=remaining,
                pending=bool(remaining) and attempts < self.alerts.max_delivery_attempts,
                attempts=attempts,
                error=error,
            )

    def _export_firing(self) -> None:
        firing = stored.firing_per_rule(self.engine)
        for rule in self.alerts.rules:
            metrics.alerts_firing.labels(rule.name).set(firing.get(rule.name, 0))

    def release(self) -> None:
        with self.engine.begin() as connection:
            release_lease(connection, self.owner, LEASE_NAME)
