"""Alerts as the dashboard shows them: firing periods for chart bands, and the alerts page.

The store keeps each rule's current state per segment (``alert_states``) and the notifications
of its transitions (``alert_events``), not a list of periods; a period is rebuilt from a
``resolved`` notification (it carries when the firing began) or from a state firing now.
A firing the cooldown kept quiet writes no notification, so once resolved it leaves no trace
in the history: the bands show what was notified and what is firing now.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from tracescore.monitor.config import AlertRule
from tracescore.monitor.silences import Silence, active_silences, covering
from tracescore.store import Connection
from tracescore.store import alerts as stored
from tracescore.store.alerts import AlertEvent, AlertState
from tracescore.store.score_reads import ScoreFilter, newest_score_at
from tracescore.web.timerange import SPLITS, ViewState, iso

HISTORY_LIMIT = 200
RUN_FILTERS = ("binding", "scorer", "version", "agent", "model", "service")
"""What the runs page can be narrowed by; a segment's ``binding`` key narrows like the rule's."""


def segment_text(segment: dict[str, Any] | None) -> str:
    """``agent=weather-bot, model=x``: a segment as rule texts and links name it."""
    return ", ".join(f"{key}={value}" for key, value in (segment or {}).items()) or "all"


def _moment(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


@dataclass(frozen=True, slots=True)
class Period:
    """One firing of a rule for one segment, drawn on ``binding``'s chart (or, for a rule on a
    scorer id, on the charts of the bindings running ``scorer``)."""

    rule: str
    segment: dict[str, Any]
    start: datetime
    end: datetime | None
    """None while it is still firing."""
    summary: str
    binding: str | None
    scorer: str | None

    def runs_url(self, now: datetime) -> str:
        """The runs of this segment scored while it fired, lowest first."""
        return runs_url(self.binding, self.scorer, self.segment, self.start, self.end or now)

    def label(self) -> str:
        until = "now" if self.end is None else f"{self.end:%H:%M:%S}"
        return (
            f"alert {self.rule} ({segment_text(self.segment)}) firing "
            f"{self.start:%Y-%m-%d %H:%M:%S} UTC → {until}: {self.summary}"
        )


def runs_url(
    binding: str | None,
    scorer: str | None,
    segment: dict[str, Any] | None,
    since: datetime,
    until: datetime,
) -> str:
    """The runs page of a binding (or scorer), optionally one segment, over ``[since, until)``."""
    params: dict[str, str | None] = {"binding": binding, "scorer": scorer}
    params.update(
        {k: str(v) for k, v in (segment or {}).items() if k in RUN_FILTERS and v is not None}
    )
    params.update(since=iso(since), until=iso(until))
    return "/ui/runs?" + urlencode({k: v for k, v in params.items() if v})


def _target(
    rule: AlertRule | None, payload: dict[str, Any] | None
) -> tuple[str | None, str | None]:
    """The binding or scorer a rule watches: from its configuration, else from a notification."""
    if rule is not None:
        return rule.binding, rule.scorer
    payload = payload or {}
    return payload.get("binding"), payload.get("scorer")


def firing_periods(
    connection: Connection,
    rules: Sequence[AlertRule],
    since: datetime,
    until: datetime,
    firing: list[AlertState] | None = None,
) -> list[Period]:
    """Firings overlapping ``[since, until)``: resolved ones from the history, current ones.

    ``firing`` is :func:`stored.firing_alerts` when the caller has read it already.
    """
    by_name = {rule.name: rule for rule in rules}
    periods = []
    for event in stored.alert_events(
        connection, since=since.timestamp(), status="resolved", limit=1000
    ):
        payload = event["payload"] or {}
        started = _parse(payload.get("since")) or _moment(event["at"])
        if started >= until:
            continue
        binding, scorer = _target(by_name.get(event["rule"]), payload)
        periods.append(
            Period(
                event["rule"],
                event["segment"] or {},
                started,
                _moment(event["at"]),
                str(payload.get("summary", "")),
                binding,
                scorer,
            )
        )
    for state in stored.firing_alerts(connection) if firing is None else firing:
        started = _moment(state["since"])
        if started >= until:
            continue
        binding, scorer = _target(by_name.get(state["rule"]), None)
        if binding is None and scorer is None:
            continue  # a rule no longer configured: nothing says which chart it was about
        periods.append(
            Period(
                state["rule"],
                state["segment"] or {},
                started,
                None,
                state["summary"],
                binding,
                scorer,
            )
        )
    return sorted(periods, key=lambda p: (p.start, p.rule))


def _parse(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def periods_of(periods: Iterable[Period], binding: str, scorers: set[str]) -> list[Period]:
    """The periods drawn on ``binding``'s chart: its rules', and those of a scorer it runs.

    A rule on a scorer segmented by binding fires for one binding at a time: its firing is
    drawn on that binding's chart only, not on every chart running the scorer.
    """
    return [
        p
        for p in periods
        if p.segment.get("binding", binding) == binding
        and (p.binding == binding or (p.binding is None and p.scorer in scorers))
    ]


_SEGMENT_COLUMNS = {"binding", "agent", "service", "model", "scorer_version"}
"""Segment keys that are score columns: the ones a segment's traffic can be looked up by."""


def stale_since(
    connection: Connection, rule: AlertRule | None, state: AlertState, now: datetime
) -> datetime | None:
    """When the traffic of a firing alert's segment stopped, if it did; None while it flows.

    A verdict is only re-evaluated on new scores: once a segment's runs stop (the agent was
    taken down, a deploy renamed it), its alert keeps "firing" on scores a window old, which
    says nothing about now. Stale is no score of the segment within the rule's window; the
    answer is the newest score's time (or the firing's start when there is none)."""
    if state["state"] != "firing" or rule is None or rule.type in ("agreement", "failure_mode"):
        # agreement rules read reviewers' verdicts, which come in slowly anyway; failure-mode
        # rules read insights passes, which run whether scores arrive or not
        return None
    segment: dict[str, str] = {
        key: str(value)
        for key, value in (state["segment"] or {}).items()
        if key in _SEGMENT_COLUMNS and value is not None
    }
    where = ScoreFilter(
        binding=segment.get("binding", rule.binding),
        scorer=rule.scorer,
        scorer_version=segment.get("scorer_version"),
        agent=segment.get("agent"),
        service=segment.get("service"),
        model=segment.get("model"),
    )
    newest = newest_score_at(connection, where)
    if newest is not None and now - newest <= timedelta(seconds=rule.window):
        return None
    return newest or _moment(state["since"])


# --- the alerts page -----------------------------------------------------------------------


def delivery(event: AlertEvent | None) -> tuple[str, str]:
    """A notification's outcome as ``(kind, text)``: sent, pending, failed, or no channel."""
    if event is None:
        return "none", "no notification"
    silenced = (event["payload"] or {}).get("silenced")
    if silenced:
        return "silenced", f"silenced until {silenced['until'][:16].replace('T', ' ')} UTC"
    attempts, error = event["attempts"], event["last_error"]
    remaining = event["pending_channels"] or []
    if event["pending"]:
        detail = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
        return "pending", f"pending{detail}" + (f": {error}" if error else "")
    if remaining:
        return "failed", f"failed after {attempts} attempts: {error or 'no channel took it'}"
    if attempts == 0:
        return "none", "no channel configured"
    return "sent", "sent" + (f" (after {attempts} attempts)" if attempts > 1 else "")


@dataclass
class SegmentState:
    """One row of a rule's table on the alerts page."""

    state: AlertState
    last: AlertEvent | None
    outcome: tuple[str, str]
    runs_url: str
    chart_url: str
    stale: datetime | None = None
    """When the segment's traffic stopped, for a firing alert whose traffic did."""
    silence: Silence | None = None
    """The silence that keeps this segment's notifications from the channels now."""
    ack: Silence | None = None
    """Who acknowledged this firing, until when."""

    @property
    def held_back(self) -> bool:
        """Firing, but not notified: the cooldown since the segment's last notified firing holds
        it back (it is notified late if it still fires when the cooldown is over). Without
        saying so, the row would show the previous recovery as its last notification."""
        return self.state["state"] == "firing" and not self.state["notified"]


@dataclass
class RuleView:
    """A rule's card on the alerts page: configured rules show even before their first verdict."""

    name: str
    rule: AlertRule | None
    """None for a rule no longer in the configuration whose state is still stored."""
    segments: list[SegmentState] = field(default_factory=list)

    @property
    def firing(self) -> int:
        return sum(s.state["state"] == "firing" for s in self.segments)


def chart_url(rule: AlertRule | None, segment: dict[str, Any], since: datetime) -> str:
    """The overview focused on the rule's chart (or its segment's, for a rule on a scorer per
    binding), split by its segment column, from ``since``."""
    split = next((key for key in segment if key in SPLITS), None)
    binding = (rule.binding if rule is not None else None) or segment.get("binding")
    return ViewState(since=iso(since), split=split, binding=binding).url("/")


def alerts_page(
    connection: Connection, rules: Sequence[AlertRule], now: datetime, rule_filter: str | None
) -> dict[str, Any]:
    """Every rule with its state per segment and last notification, and the history."""
    states = stored.alert_states(connection)
    silences = active_silences(connection, now.timestamp())
    last = stored.last_alert_events(connection)
    views = {rule.name: RuleView(rule.name, rule) for rule in rules}
    by_name = {rule.name: rule for rule in rules}
    for state in states:
        rule = by_name.get(state["rule"])
        view = views.setdefault(state["rule"], RuleView(state["rule"], None))
        event = last.get(state["key"])
        window = timedelta(seconds=rule.window) if rule is not None else timedelta(hours=1)
        binding, scorer = _target(rule, event["payload"] if event else None)
        started = _moment(state["since"])
        # The runs that made the verdict: the rule's window before it began firing, up to now
        # (or, once resolved, the window that resolved it).
        since = (
            started - window
            if state["state"] == "firing"
            else _moment(state["evaluated_at"]) - window
        )
        until = now if state["state"] == "firing" else _moment(state["evaluated_at"])
        view.segments.append(
            SegmentState(
                state=state,
                last=event,
                outcome=delivery(event),
                runs_url=runs_url(binding, scorer, state["segment"], since, until),
                chart_url=chart_url(rule, state["segment"] or {}, started - 4 * window),
                stale=stale_since(connection, rule, state, now),
                silence=covering(silences, state, now.timestamp(), "silence"),
                ack=covering(silences, state, now.timestamp(), "ack"),
            )
        )
    history = stored.alert_events(connection, rule=rule_filter, limit=HISTORY_LIMIT)
    shown = [views[name] for name in sorted(views) if rule_filter in (None, name)]
    return {
        "rules": shown,
        "history": [dict(event, outcome=delivery(event)) for event in history],
        "history_limit": HISTORY_LIMIT,
        "rule_filter": rule_filter,
    }
