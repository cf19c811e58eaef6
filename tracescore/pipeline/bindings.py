"""Bindings compiled for the hot path: the scorer built once, the filter compiled once.

Building a scorer can be costly (an LLM scorer resolves its judge, a code scorer may load a stop
list), so it happens when the service starts, where a bad option also fails loudly with the
binding's name rather than on the first trace.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracescore.extract.model import AgentRun
from tracescore.judge.config import judges_missing
from tracescore.pipeline.cascade_gate import Gate, compile_gate
from tracescore.pipeline.conditions import Predicate, Subject, compile_condition
from tracescore.pipeline.config import ScorerBinding
from tracescore.pipeline.limits import BindingLimiter
from tracescore.pipeline.routing import RunFilter
from tracescore.scorers import registry
from tracescore.scorers.base import Scorer
from tracescore.spans import Trace
from tracescore.store import Database

DEFAULT_JUDGE = "default"


class BindingError(ValueError):
    """A binding that cannot be built; the message names the binding."""


def load_custom_scorer(reference: str, options: Mapping[str, Any], judge: Any) -> Scorer:
    """``module:attr`` naming a ``Scorer``, or a factory returning one (called with the options)."""
    module_name, _, attribute = reference.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if isinstance(target, Scorer):
        if options:
            raise BindingError(f"{reference} is a ready scorer and takes no options")
        return target
    if not callable(target):
        raise BindingError(f"{reference} is neither a Scorer nor a factory of one")
    kwargs = dict(options)
    if judge is not None:
        kwargs.setdefault("model", judge)
    built = target(**kwargs)
    if not isinstance(built, Scorer):
        raise BindingError(f"{reference}() returned {type(built).__name__}, not a Scorer")
    return built


def _require_judges(binding: ScorerBinding) -> None:
    """Refuse, at start, a binding that asks a judge where litellm is not installed: its first
    judge call would fail on every run instead."""
    if problem := judges_missing(binding.scorer):
        raise BindingError(problem)


def pass_threshold(binding: ScorerBinding) -> float | None:
    """The score that makes a run of ``binding`` pass as the configuration states it: its
    ``threshold``, else what its scorer says a good run scores (``passes_at``, times the
    binding's ``options.scale``); None for a custom scorer without a threshold and for the
    scorers whose score alone means no pass or fail. What labels scores, colours badges and
    orders the lowest lists; a binding with ``threshold: learn`` starts from the scorer's
    and :mod:`~tracescore.pipeline.learnt_thresholds` replaces it once people's verdicts
    allow."""
    if isinstance(binding.threshold, float):
        return binding.threshold
    if ":" in binding.scorer:
        return None
    try:
        passes_at = registry.get(binding.scorer).passes_at
    except KeyError:
        return None
    if passes_at is None:
        return None
    return passes_at * float(binding.options.get("scale", 1.0))


def has_pass_threshold(binding: ScorerBinding) -> bool:
    """Some run of ``binding`` can fail: it states a threshold, its scorer does, or it learns
    one from people's verdicts."""
    return binding.threshold is not None or pass_threshold(binding) is not None


def stated_direction(binding: ScorerBinding) -> bool:
    """Whether a higher score of ``binding`` is better, known before its scorer is built (a
    custom scorer's are: it says nothing otherwise)."""
    if ":" in binding.scorer:
        return True
    try:
        return registry.get(binding.scorer).higher_is_better
    except KeyError:
        return True


def build_scorer(binding: ScorerBinding, judges: Mapping[str, Any]) -> tuple[Scorer, bool]:
    """The binding's scorer and whether a higher score is better."""
    judge_name = binding.judge
    if ":" in binding.scorer:
        judge = judges.get(judge_name) if judge_name else None
        if judge is not None:
            _require_judges(binding)
        return load_custom_scorer(binding.scorer, binding.options, judge), True
    entry = registry.get(binding.scorer)
    options = dict(binding.options)
    if entry.uses_judge:
        judge_name = judge_name or DEFAULT_JUDGE
        if judge_name not in judges:
            raise BindingError(
                f"scorer {binding.scorer!r} needs a judge: define judges.{judge_name} "
                "or name one with 'judge:'"
            )
        _require_judges(binding)
        options["model"] = judges[judge_name]
    return entry.factory(**options), entry.higher_is_better


@dataclass
class CompiledBinding:
    config: ScorerBinding
    scorer: Scorer
    higher_is_better: bool
    filter: RunFilter
    limiter: BindingLimiter | None
    """Set when the binding has limits and a database to count against."""
    threshold: float | None = field(init=False)
    """:func:`pass_threshold`, worked out once."""
    condition: Predicate | None = field(init=False)
    """The binding's ``when:``, compiled once here so every way of building a binding
    (service, offline commands) applies it."""
    gate: Gate | None = field(init=False)
    """The binding's ``after:`` (a cascade), compiled once here likewise."""

    def __post_init__(self) -> None:
        when = self.config.when
        self.condition = compile_condition(when) if when is not None else None
        self.gate = compile_gate(self.config.name, self.config.after)
        self.threshold = pass_threshold(self.config)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def sampling_rate(self) -> float:
        return self.config.sampling.rate

    def label(self, score: float | None) -> str | None:
        """``pass``/``fail`` against the binding's :func:`pass_threshold`, in the scorer's
        direction."""
        threshold = self.threshold
        if score is None or threshold is None:
            return None
        passed = score >= threshold if self.higher_is_better else score <= threshold
        return "pass" if passed else "fail"

    def eligible(self, runs: Sequence[AgentRun], trace: Trace | None = None) -> list[AgentRun]:
        """The runs of one trace this binding's target, filter and ``when:`` select; ``trace``
        holds the spans ``when:`` span conditions read (without it, each run's own)."""
        return [run for run in select_target(runs, self.config.target) if self.matches(run, trace)]

    def matches(self, run: AgentRun, trace: Trace | None = None) -> bool:
        """The run passes the binding's filter and ``when:``: a run that does not is not the
        binding's at all (no sampling decision, so coverage counts only the runs it chose)."""
        if not self.filter.matches(run):
            return False
        condition = self.condition
        return condition is None or condition(Subject(run, trace.spans if trace else ()))


def primary_only(bindings: Sequence[CompiledBinding]) -> bool:
    """No binding scores LLM or tool runs (a conversation's turns are primary runs too): runs
    can be extracted with ``only_primary``, which skips building the others."""
    return all(binding.config.target in ("agent", "trace", "conversation") for binding in bindings)


def select_target(runs: Sequence[AgentRun], target: str) -> list[AgentRun]:
    """``agent``: every run standing for an agent (an LLM run where no agent span exists);
    ``llm`` / ``tool``: every run of that kind; ``trace``: the outermost agent run only."""
    if target in ("llm", "tool"):
        return [run for run in runs if run.kind == target]
    primary = [run for run in runs if run.primary]
    if target == "trace" and primary:
        return [min(primary, key=lambda run: (run.start_time is None, run.start_time))]
    return primary


def compile_bindings(
    bindings: Sequence[ScorerBinding], judges: Mapping[str, Any], engine: Database | None
) -> list[CompiledBinding]:
    compiled = []
    for binding in bindings:
        try:
            scorer, higher_is_better = build_scorer(binding, judges)
        except Exception as exc:
            raise BindingError(f"scorer binding {binding.name!r}: {exc}") from exc
        limiter = BindingLimiter(engine, binding.name, binding.limits) if engine else None
        compiled.append(
            CompiledBinding(
                binding,
                scorer,
                higher_is_better,
                RunFilter(binding.filter),
                limiter if limiter is not None and limiter.active else None,
            )
        )
    return compiled
