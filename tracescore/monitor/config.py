"""Configuration of monitoring: the ``alerts:`` section (rules and channels) and ``monitor:``.

Rules are plain data validated at start, so a typo in a rule fails the service at boot rather
than silently never firing. Windows and cooldowns accept seconds or durations like ``15m``,
``1h``, ``7d``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Annotated, Literal

from pydantic import Field, HttpUrl, field_validator, model_validator

from tracescore.settings import Duration, Problem, Section

SegmentColumn = Literal["agent", "model", "service", "binding"]
"""Score columns a rule may split its evaluation by: each distinct combination is a segment."""

_STAT = re.compile(r"^(mean|p(\d{1,2}(?:\.\d+)?))$")


class _RuleBase(Section):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    """Unique; alert state is keyed by it, so renaming a rule starts its state afresh."""
    binding: str | None = None
    """A binding name of ``scorers``: the usual way to say which scores a rule watches."""
    scorer: str | None = None
    """A scorer id as stored in ``scores.scorer_id`` (``answer-relevancy-scorer``), across bindings."""
    scorer_version: str | None = None
    """Restrict to one scorer version, so a new version's shift is not taken for a regression."""
    agent: str | None = None
    service: str | None = None
    model: str | None = None
    segment_by: list[SegmentColumn] = Field(default_factory=list)
    window: Duration = 3600.0
    """The evaluated window ends at the evaluation time."""
    min_samples: int = Field(20, ge=1)
    """Fewer values than this in a segment's window: no verdict, the state is left unchanged."""
    cooldown: Duration | None = None
    """Least time between two firing notifications of one segment; defaults to ``alerts.cooldown``."""
    channels: list[str] | None = None
    """Names of ``alerts.channels`` to notify; all channels when omitted."""

    @field_validator("segment_by")
    @classmethod
    def _distinct_columns(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("segment_by lists a column twice")
        return value

    @property
    def subject(self) -> str:
        """What the rule watches, for alert texts."""
        return self.binding or self.scorer or "all scores"


class _ScoreRule(_RuleBase):
    """A rule on score values: mixing scorers makes no sense, so it names a binding or scorer."""

    @model_validator(mode="after")
    def _names_scores(self) -> _ScoreRule:
        if self.binding is None and self.scorer is None:
            raise ValueError("give 'binding' (a scorers entry) or 'scorer' (a scorer id)")
        return self


class _Bounds(Section):
    below: float | None = None
    above: float | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> _Bounds:
        if (self.below is None) == (self.above is None):
            raise ValueError("give exactly one of 'below' or 'above'")
        return self

    @property
    def side(self) -> tuple[Literal["below", "above"], float]:
        """The side the rule watches and its bound, typed as set: ``_one_bound`` leaves one."""
        if self.below is not None:
            return "below", self.below
        assert self.above is not None, "_one_bound leaves exactly one of below and above"
        return "above", self.above

    def crossed_by(self, value: float) -> bool:
        word, bound = self.side
        return value < bound if word == "below" else value > bound


class ThresholdRule(_ScoreRule, _Bounds):
    """Fires when a statistic of a scorer's scores over the window crosses a bound."""

    type: Literal["threshold"]
    stat: str = "mean"
    """``mean`` or a percentile ``pNN`` (``p10``, ``p50``, ``p99.9``)."""

    @field_validator("stat")
    @classmethod
    def _known_stat(cls, value: str) -> str:
        match = _STAT.match(value)
        if not match or (match.group(2) is not None and not 0 <= float(match.group(2)) <= 100):
            raise ValueError("stat is 'mean' or a percentile like 'p10', 'p50', 'p90'")
        return value

    @property
    def quantile(self) -> float | None:
        """The percentile as a fraction, or None for the mean."""
        return None if self.stat == "mean" else float(self.stat[1:]) / 100.0


class RegressionRule(_ScoreRule):
    """Fires when a segment's current window is worse than its baseline, by a margin and significantly.

    The test is Welch's two-sample t-test (unequal variances), one-sided in the bad direction,
    computed from per-window count, mean and variance aggregated in SQL.
    """

    type: Literal["regression"]
    baseline: Duration = 7 * 86400.0
    """The window just before the current one that the current window is compared against."""
    min_baseline_samples: int = Field(50, ge=2)
    min_delta: float = Field(0.1, gt=0)
    """Smallest change of the mean (in score units) worth an alert, however significant."""
    alpha: float = Field(0.01, gt=0, lt=1)
    """The p-value must be below this."""
    direction: Literal["decrease", "increase"] = "decrease"
    """Which change is bad: ``increase`` for scorers where higher is worse (toxicity, bias)."""
    min_samples: int = Field(30, ge=2)


class ErrorRateRule(_RuleBase):
    """Fires when the share of failed scorings (judge errors) and failed runs of a binding
    crosses ``above``.

    The rate is ``error`` rows plus runs that ended in error before answering (stored
    ``not_scorable``: a failing agent is the signal) over attempted rows (``ok``, ``error`` and
    ``not_scorable``); runs skipped by budget or rate limits were never attempted and do not count.
    """

    type: Literal["error_rate"]
    binding: str
    above: float = Field(ge=0, le=1)


class FailRateRule(_RuleBase):
    """Fires when the share of a binding's scored runs that fail its pass threshold (the
    ``fail`` badges: the binding's ``threshold``, learnt one or scorer's) crosses ``above``:
    "more than 20 % of the answers fail" needs no bound of its own on the score.

    ``min_samples`` counts scored runs; the binding must have a pass threshold (a scorer that
    states one, or a ``threshold``), or nothing would ever fail."""

    type: Literal["fail_rate"]
    binding: str
    above: float = Field(ge=0, lt=1)


class AgreementRule(_RuleBase, _Bounds):
    """Fires when a binding's agreement with human feedback, over the runs it scored in the
    window, crosses a bound: Cohen's ``kappa`` below a floor, or the ``mae`` above a ceiling.
    A judge's provider changing the model behind its name shows here before anywhere else.

    ``min_samples`` counts runs with both a score and feedback (a verdict for kappa, a value
    for the MAE)."""

    type: Literal["agreement"]
    binding: str
    metric: Literal["kappa", "mae"] = "kappa"
    threshold: float = 0.5
    """Score at which the judge's verdict is pass, for kappa (give the binding's threshold)."""
    window: Duration = 7 * 86400.0
    min_samples: int = Field(30, ge=2)


class FailureModeRule(_RuleBase):
    """Fires, per failure mode (``insights``), when a mode first seen within ``window`` has at
    least ``new_runs`` runs, or when a mode grew by ``growth`` times or more between the two
    latest insights passes (``min_samples`` runs at least). The segment is the mode's id."""

    type: Literal["failure_mode"]
    new_runs: int = Field(20, ge=1)
    """Runs a new mode needs to fire (``a new failure mode with ≥ 20 runs in an hour``)."""
    growth: float | None = Field(None, gt=1)
    """Size at the latest pass over size at the pass before that fires (2: doubled); unset:
    growth alone never fires."""

    @property
    def subject(self) -> str:
        return "failure modes"


AlertRule = Annotated[
    ThresholdRule | RegressionRule | ErrorRateRule | FailRateRule | AgreementRule | FailureModeRule,
    Field(discriminator="type"),
]


class WebhookChannel(Section):
    """POSTs the alert as JSON (the payload is shown in docs/monitoring.md)."""

    name: str
    type: Literal["webhook"]
    url: HttpUrl
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: Duration = 10.0


class SlackChannel(Section):
    """A Slack-compatible incoming webhook (Slack, Mattermost, Rocket.Chat): ``{"text": ...}``."""

    name: str
    type: Literal["slack"]
    url: HttpUrl
    timeout: Duration = 10.0


class LogChannel(Section):
    """Writes alerts to the ``tracescore.alerts`` logger (WARNING when firing, INFO when resolved)."""

    name: str = "log"
    type: Literal["log"]


ChannelConfig = Annotated[WebhookChannel | SlackChannel | LogChannel, Field(discriminator="type")]


class AlertsConfig(Section):
    rules: list[AlertRule] = Field(default_factory=list)
    channels: list[ChannelConfig] = Field(default_factory=list)
    cooldown: Duration = 1800.0
    """Default least time between two firing notifications of one rule and segment."""
    max_delivery_attempts: int = Field(5, ge=1)
    """A notification a channel failed to take is retried at each evaluation up to this many times."""

    @model_validator(mode="after")
    def _consistent_names(self) -> AlertsConfig:
        rule_names = [rule.name for rule in self.rules]
        if len(set(rule_names)) != len(rule_names):
            raise ValueError("rule names must be unique")
        channel_names = [channel.name for channel in self.channels]
        if len(set(channel_names)) != len(channel_names):
            raise ValueError("channel names must be unique")
        for rule in self.rules:
            unknown = set(rule.channels or ()) - set(channel_names)
            if unknown:
                raise ValueError(f"rule {rule.name!r} names unknown channels {sorted(unknown)}")
        return self

    def problems(self, bindings: Collection[str], judged: Collection[str]) -> list[Problem]:
        """Every rule that names a binding names one of ``bindings`` (the ``scorers``); a
        ``fail_rate`` rule one of ``judged``, those with a pass threshold."""
        found: list[Problem] = []
        for index, rule in enumerate(self.rules):
            where = ("alerts", "rules", str(index), "binding")
            if rule.binding is not None and rule.binding not in bindings:
                found.append((where, f"no binding named {rule.binding!r} in scorers"))
            elif isinstance(rule, FailRateRule) and rule.binding not in judged:
                found.append(
                    (
                        where,
                        f"binding {rule.binding!r} has no pass threshold, so no run fails it: "
                        "give the binding a threshold (a number or learn)",
                    )
                )
        return found


class MonitorConfig(Section):
    evaluation_interval: Duration = 60.0
    """How often the leader evaluates the alert rules."""
    gauge_interval: Duration = 10.0
    """How often each instance samples the trace backlog gauges from the database."""
    leader_lease: Duration = 180.0
    """How long the evaluating instance's lease lasts unrenewed; another instance takes over after."""
    instance_id: str | None = None
    """Lease owner name; defaults to ``hostname:pid``."""
    max_page_size: int = Field(1000, ge=1)
    """Largest ``limit`` the score list API accepts."""
