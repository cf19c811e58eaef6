"""Configuration of the scoring pipeline: scorer bindings, filters, sampling, limits, export.

A *binding* ties one scorer (prebuilt by name, or a custom ``module:attr``) with its options to
the runs it should score. Bindings have names of their own because the same scorer often runs
twice with different options or filters (``faithfulness-prod`` and ``faithfulness-canary``), and
stored scores, metrics and alerts are per binding.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from tracescore.assemble.config import AssemblyConfig
from tracescore.config_report import did_you_mean, validation_problems
from tracescore.conversations.config import ConversationsConfig
from tracescore.emit.config import ExportConfig
from tracescore.extract.declared_config import ConventionConfig
from tracescore.judge.config import JudgeConfig, judges_missing
from tracescore.pipeline.cascade_config import CascadeConfig
from tracescore.pipeline.rescore_config import RescoreOnChange
from tracescore.settings import Duration, Problem, Section, compile_pattern

Target = Literal["agent", "llm", "tool", "trace", "conversation"]
PatternList = list[str]


class FilterConfig(Section):
    """Which runs a binding sees. Each pattern is exact, a glob (``support-*``) or ``re:<regex>``.

    A list matches when any of its patterns matches; all given fields must match.
    """

    service: PatternList = Field(default_factory=list)
    agent: PatternList = Field(default_factory=list)
    model: PatternList = Field(default_factory=list)
    attributes: dict[str, str | int | float | bool | PatternList] = Field(default_factory=dict)
    """Span attributes of the run, falling back to resource attributes (``deployment.environment``)."""


def _valid_patterns(value: str | list[str] | None) -> str | list[str] | None:
    """Patterns that compile; a bad regex fails at start, named by its key."""
    for pattern in [value] if isinstance(value, str) else value or []:
        try:
            compile_pattern(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regex {pattern!r}: {exc}") from None
    return value


class Bounds(Section):
    """A number within inclusive bounds: ``{min: 3}``, ``{max: 10}`` or both."""

    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _bounded(self) -> Bounds:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        return self


class DurationBounds(Bounds):
    """A duration within inclusive bounds, each a number of seconds or ``20s``, ``2m``."""

    min: Duration | None = None
    max: Duration | None = None


class SpanCondition(Section):
    """True when some span of the run's trace has the attribute and it passes every test
    given (no test given: the attribute exists). Resource attributes count as the span's."""

    attribute: str = Field(min_length=1)
    """The attribute's key, such as ``gen_ai.request.model`` or ``http.status_code``."""
    name: str | None = None
    """Only spans whose name matches this pattern (exact, glob or ``re:<regex>``)."""
    equals: str | int | float | bool | None = None
    """The value, compared as text (``true``/``false`` for booleans)."""
    matches: str | None = None
    """A pattern (exact, glob or ``re:<regex>``) the value, as text, must match."""
    exists: bool | None = None
    """``false``: true when NO span of the trace has the attribute."""
    min: float | None = None
    """The value, as a number, is at least this (a value that is not a number fails)."""
    max: float | None = None
    """The value, as a number, is at most this."""

    _patterns = field_validator("name", "matches")(_valid_patterns)

    @model_validator(mode="after")
    def _one_meaning(self) -> SpanCondition:
        tests = (self.equals, self.matches, self.min, self.max)
        if self.exists is False and any(test is not None for test in tests):
            raise ValueError("exists: false takes no other test of the value")
        return self


class Condition(Section):
    """``scorers[].when``: which runs a binding scores, by what happened in them.

    Every key given must hold (as in ``filter``); ``any``, ``all`` and ``not`` combine
    conditions. A figure the run does not have (no token counts, an unpriced model) passes no
    bound. Validated at start and compiled once per binding
    (:mod:`tracescore.pipeline.conditions`).
    """

    # ``not`` is a Python keyword, so its field is ``not_``: dumped (for scoring processes)
    # under the key the file uses, which is the only one read back.
    model_config = ConfigDict(extra="forbid", serialize_by_alias=True)

    tool_called: str | list[str] | None = None
    """The run called a tool whose name matches (exact, glob ``search_*`` or ``re:<regex>``;
    a list: any of them)."""
    tool_calls: Bounds | None = None
    """How many tool calls the run made."""
    failed: bool | None = None
    """The run ended in an error (``true``) or did not (``false``)."""
    tool_failed: bool | None = None
    """Some tool call of the run failed (``true``) or none did (``false``)."""
    duration: DurationBounds | None = None
    """The run's wall time, from its span's start to its end."""
    input_tokens: Bounds | None = None
    output_tokens: Bounds | None = None
    tokens: Bounds | None = None
    """Total tokens (input and output) the run's model calls used."""
    cost_usd: Bounds | None = None
    """What the run's model calls cost, its tokens priced with litellm's bundled price map."""
    input_chars: Bounds | None = None
    """Characters of the user's messages the run answered (its input, without remembered
    history)."""
    output_chars: Bounds | None = None
    """Characters of the run's answer."""
    span: SpanCondition | None = None
    """An attribute of any span of the run's trace."""
    all: list[Condition] | None = None
    """Every condition of the list holds."""
    any: list[Condition] | None = None
    """At least one condition of the list holds."""
    not_: Condition | None = Field(None, alias="not")
    """The condition does not hold."""

    _patterns = field_validator("tool_called")(_valid_patterns)

    @model_validator(mode="after")
    def _not_empty(self) -> Condition:
        if all(getattr(self, name) is None for name in type(self).model_fields):
            raise ValueError("an empty condition: give at least one key")
        for combinator in ("all", "any"):
            if getattr(self, combinator) == []:
                raise ValueError(f"{combinator}: an empty list")
        return self


class SamplingBoost(Section):
    """``sampling.boost``: judge more where things are going wrong. While the named alert
    rule fires (for the run's agent when the rule is split by agent), the binding samples at
    ``rate`` instead; its ``limits`` still bound what is scored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    rate: float = Field(1.0, ge=0.0, le=1.0)
    while_: str = Field(alias="while", max_length=100)
    """The name of an ``alerts.rules`` entry."""


class SamplingConfig(Section):
    rate: float = Field(1.0, ge=0.0, le=1.0)
    boost: SamplingBoost | None = None
    """A higher rate while an alert fires; see [Judging more while an alert
    fires](../configuration.md#judging-more-while-an-alert-fires)."""


class LimitsConfig(Section):
    per_minute: int | None = Field(None, gt=0)
    """Most runs of this binding in any 60 s window, across all processes sharing the database
    (a run counts from its admission until a minute after it ends); runs beyond it are stored
    as skipped_rate."""
    usd_per_day: float | None = Field(None, ge=0.0)
    """Judge spend per UTC day for this binding, across all processes sharing the database;
    runs beyond it are stored as skipped_budget. Running runs count at their estimate (the
    binding's recent highest cost per run), so the spend passes it by at most one run's."""


NEGATIVE_LABELS = ["fail", "bad", "wrong", "incorrect", "negative", "thumbs_down"]
"""Labels of a verdict that says a run went wrong (as ``insights.feedback_labels``)."""


class FeedbackTrigger(Section):
    """``scorers[].on_feedback``: judge a run as soon as someone says it went wrong, sampled or
    not, once per run (:mod:`tracescore.pipeline.feedback_triggers`). ``true`` takes these
    defaults."""

    labels: list[str] = Field(default_factory=lambda: list(NEGATIVE_LABELS))
    """A verdict with one of these labels is negative."""
    below: float | None = 0.5
    """A verdict whose value is below this is negative (null: values never are)."""
    names: list[str] = Field(default_factory=list)
    """Only verdicts under these evaluation names (a binding's, or a free one such as
    ``thumbs``); empty: a negative verdict under any name."""
    wait: Duration = 600.0
    """How long a verdict waits for its run's trace to arrive and be complete before the
    trigger gives up, with that reason recorded."""


class LearntThreshold(Section):
    """``threshold: learn``: the pass threshold learnt from people's verdicts on the binding's
    runs (the cut that agrees with them most), once there are enough of both kinds; until
    then the scorer's own. See [Pass thresholds learnt from feedback](../scorers.md#pass-thresholds-learnt-from-feedback)."""

    learn: Literal[True] = True
    """Says the mapping is a learnt threshold; ``threshold: learn`` is this with the defaults."""
    min_verdicts: int = Field(10, ge=1)
    """Verdicts of each kind (pass and fail) the learning needs: with fewer of either, one
    verdict would move the cut, so the scorer's threshold stays."""
    refresh: Duration = 600.0
    """How often the scoring processes and the API learn it again from the verdicts."""


LEARN = "learn"


class ScorerBinding(Section):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    scorer: str
    """A prebuilt scorer name (``faithfulness``) or ``module:attr`` of a custom scorer."""
    judge: str | None = None
    """Name of an entry of ``judges``; LLM scorers default to the judge named ``default``."""
    options: dict[str, Any] = Field(default_factory=dict)
    target: Target = "agent"
    filter: FilterConfig = Field(default_factory=FilterConfig)
    when: Condition | None = None
    """What must have happened in a run for this binding to score it (tools called, failures,
    duration, tokens, cost, message lengths, span attributes); a run it excludes counts as
    filtered out. See [Choosing runs by what happened](../configuration.md#choosing-runs-by-what-happened)."""
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    after: CascadeConfig | None = None
    """Score a run only when another binding's score on it flags it (a cascade: a cheap scorer
    first, the judge on what it flags); see [Spending the judge budget](../judge-budget.md)."""
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    threshold: float | LearntThreshold | None = None
    """The binding's pass threshold: a score (``pass`` at or above it, ``fail`` below, in the
    scorer's direction), or ``learn`` (or ``{learn: true, min_verdicts, refresh}``) to learn it
    from people's verdicts; unset, the scorer's own (``passes_at``). Labels, badge colours,
    the lowest lists, ``fail_rate`` alerts and calibration use it."""
    on_feedback: FeedbackTrigger | None = None
    """``true`` (or ``{labels, below, names, wait}``): a negative verdict on a run, from a
    person or the application, has this binding judge it now, once, within its ``limits``.
    See [Judging runs people marked wrong](../configuration.md#judging-runs-people-marked-wrong)."""
    rescore_on_change: RescoreOnChange | None = None
    """Re-score a sample of recent runs when the scorer's version, prompts or judge model
    change (:mod:`tracescore.pipeline.rescore`)."""

    @field_validator("threshold", mode="before")
    @classmethod
    def _learn_word(cls, value: Any) -> Any:
        """``learn`` is the learnt threshold with its defaults; any other word is a mistake
        said plainly rather than as a union's three failures."""
        if value == LEARN:
            return LearntThreshold()
        if isinstance(value, str | bool):
            raise ValueError(f"a number or 'learn', not {value!r}")
        if isinstance(value, dict):
            try:
                return LearntThreshold.model_validate(value)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(map(str, first["loc"]))
                raise ValueError(f"{where}: {first['msg']}") from None
        return value

    @field_validator("on_feedback", mode="before")
    @classmethod
    def _feedback_switch(cls, value: Any) -> Any:
        """``true`` turns the trigger on with its defaults, ``false`` off."""
        if value is True:
            return {}
        return None if value is False else value

    @model_validator(mode="after")
    def _feedback_target(self) -> ScorerBinding:
        if self.on_feedback is not None and self.target == "conversation":
            raise ValueError("on_feedback: a verdict is on a run, not a conversation")
        return self

    @model_validator(mode="after")
    def _rescored_runs(self) -> ScorerBinding:
        if self.rescore_on_change is not None and self.target == "conversation":
            raise ValueError("rescore_on_change: a conversation binding is not re-scored")
        return self


class BudgetConfig(Section):
    """``workers.budget``: the input and time budgets of each scorer run."""

    max_chars: int = Field(100_000, ge=1_000)
    """Characters of text a scorer reads of each of a run's input and output; the rest is cut
    (recorded on the score as ``steps.input_cut``). At 100,000 (about 16,000 words) the slowest
    code scorer, textual-difference (quadratic, as Mastra's sequence matching is), takes about
    0.2 s on a run; at twice that, four times as long."""
    scorer_seconds: Duration = 5.0
    """Seconds a synchronous (code) scorer may take on one run before it is interrupted and
    its score stored as an ``error`` that says so."""


class WorkersConfig(Section):
    processes: int | None = Field(None, ge=0, le=16)
    """Scoring worker processes per service process (see :mod:`tracescore.pipeline.scoring_processes`):
    scoring is CPU-bound Python, and in processes of its own it runs on other cores than ingest.
    Default: one per core, at most 4 (2 on a 2-core machine: ~1,000 agent traces/s scored by
    the five code scorers on SQLite, against ~670 with one). 0 scores in the service process
    itself (one core; ~110 MB less per process)."""

    @property
    def process_count(self) -> int:
        """``processes``, or its default for this machine."""
        return self.processes if self.processes is not None else min(4, os.cpu_count() or 1)

    concurrency: int = Field(8, gt=0, le=1024)
    """Runs scored at once per instance (judge calls are further limited per judge)."""
    claim_batch: int = Field(64, gt=0, le=1000)
    """Traces claimed, loaded, scored and stored together (see :mod:`tracescore.pipeline.scoring_worker`);
    also how many traces waiting on a judge may be in flight at once. Batches amortise the
    per-trace database work: at 64 a batch's claim, load and write cost about a tenth of what
    they did per trace."""
    poll_interval: float = Field(0.25, gt=0)
    """Seconds between looks for ready traces when none was found."""
    boost_refresh: float = Field(3.0, gt=0)
    """Seconds a process's cached firing state of the alerts that boost sampling may be stale
    (:mod:`tracescore.pipeline.boost`): one small query per process this often, never per
    trace, so a boost starts and ends within about this long of its alert."""
    trigger_lease: float = Field(15.0, gt=0)
    """Seconds a feedback trigger taken by a scoring process stays its own once that process
    stops renewing it (:mod:`tracescore.pipeline.trigger_judging`): a killed process's
    triggers are judged again after this."""
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    """How much of a run each scorer reads and how long it may take (:mod:`tracescore.pipeline.budget`)."""


class ScoringConfig(Section):
    """What the scoring pipeline reads of a service's configuration.

    The service composes it from the whole file (``Config.scoring()``) and hands it down, also to
    scoring processes as JSON, so the pipeline depends on these sections and never on the
    top-level configuration that is built from every part's.
    """

    store: str
    """The database URL."""
    assembly: AssemblyConfig = Field(default_factory=AssemblyConfig)
    judges: dict[str, JudgeConfig] = Field(default_factory=dict)
    scorers: list[ScorerBinding] = Field(default_factory=list)
    export: ExportConfig = Field(default_factory=ExportConfig)
    workers: WorkersConfig = Field(default_factory=WorkersConfig)
    conversations: ConversationsConfig = Field(default_factory=ConversationsConfig)
    conventions: list[ConventionConfig] = Field(default_factory=list)
    """The declared span conventions runs are extracted with."""
    shutdown_timeout: float = Field(10.0, gt=0)
    """Seconds a scoring process has to finish or hand back its claims once the service stops."""


def binding_problems(bindings: Sequence[ScorerBinding], judges: Collection[str]) -> list[Problem]:
    """Mistakes across ``scorers`` and ``judges`` pydantic cannot see: a name given twice, a judge
    that is not in ``judges``, a judging scorer with no judge (or without litellm), a
    conversation scorer bound to single runs."""
    from tracescore.scorers import registry

    found: list[Problem] = []
    seen: set[str] = set()
    for index, binding in enumerate(bindings):
        where = ("scorers", str(index))
        if binding.name in seen:
            found.append(((*where, "name"), f"duplicate binding name {binding.name!r}"))
        seen.add(binding.name)
        if binding.judge is not None and binding.judge not in judges:
            found.append(((*where, "judge"), f"no judge named {binding.judge!r} in judges"))
        asks_judge = binding.judge is not None or (
            binding.scorer in registry.names() and registry.get(binding.scorer).uses_judge
        )
        if asks_judge and (missing := judges_missing(binding.scorer)):
            found.append(((*where, "scorer"), missing))
        if ":" in binding.scorer or binding.scorer not in registry.names():
            continue  # an unknown name is reported by written_scorer_problems
        scorer = registry.get(binding.scorer)
        if scorer.uses_judge and (binding.judge or "default") not in judges:
            found.append(
                (
                    (*where, "judge"),
                    f"scorer {binding.scorer!r} needs a judge: name one of "
                    "judges, or define judges.default",
                )
            )
        if scorer.conversation and binding.target != "conversation":
            found.append(
                (
                    (*where, "target"),
                    f"scorer {binding.scorer!r} judges whole conversations: "
                    "set target: conversation",
                )
            )
    return found


def boost_problems(bindings: Sequence[ScorerBinding], rules: Collection[str]) -> list[Problem]:
    """Every ``sampling.boost`` names one of the alert ``rules`` and samples single runs."""
    found: list[Problem] = []
    for index, binding in enumerate(bindings):
        boost = binding.sampling.boost
        if boost is None:
            continue
        key = ("scorers", str(index), "sampling", "boost")
        if boost.while_ not in rules:
            found.append(((*key, "while"), f"no alert rule named {boost.while_!r} in alerts.rules"))
        if binding.target == "conversation":
            found.append((key, "a conversation binding samples whole conversations: no boost"))
    return found


def written_scorer_problems(scorers: object) -> list[Problem]:
    """Unknown scorer names and bad scorer options of a document's ``scorers:`` as written,
    found whether or not the rest of the file validates, so one pass reports them all."""
    from tracescore.scorers import registry

    found: list[Problem] = []
    for index, binding in enumerate(scorers if isinstance(scorers, list) else []):
        if not isinstance(binding, dict) or not isinstance(binding.get("scorer"), str):
            continue
        name, where = binding["scorer"], ("scorers", str(index))
        if ":" in name:
            continue
        if name not in registry.names():
            close = did_you_mean(name, registry.names())
            found.append(
                (
                    (*where, "scorer"),
                    f"unknown scorer {name!r}; {close + ' ' if close else ''}"
                    "(`tracescore scorers` lists them; module:attr names a custom scorer)",
                )
            )
            continue
        schema, options = registry.get(name).schema, binding.get("options")
        if schema is None or not isinstance(options, dict):
            continue
        try:
            schema.model_validate(options)
        except ValidationError as exc:
            found += validation_problems(exc, schema, (*where, "options"))
    return found
