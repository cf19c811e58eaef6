"""consistency: tracescore's own code scorer, checking an answer against the run's own evidence.

Seven checks, each cheap and deterministic (tens of microseconds a run): values found nowhere in
the evidence, values contradicting a tool result, entities that differ between the request, the
tool calls and the answer, non-answers, truncation, a change of language and a system prompt
leak. The score is 1 when every enabled check passes, less by each failed check's share of the
weights; the label names the failed checks (``grounding+contradiction``), the reason says what
each found, and the ``checks`` step holds every check's findings. Meant as the upstream of a
cascade (``after: {binding: consistency, below: 1}``): it sees most of what goes wrong, so the
judge sees those runs and few others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tracescore.language import detect_language
from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.code.consistency import CHECKS, CheckName, answer_checks, value_checks
from tracescore.scorers.code.consistency.evidence import Evidence, evidence_of
from tracescore.scorers.code.consistency.value_checks import ValueEvidence
from tracescore.scorers.steps import StepContext

ID = "consistency"
VERSION = "1"


_CHECK: dict[CheckName, Callable[[ValueEvidence, int], list[str]]] = {
    "grounding": lambda values, _: value_checks.grounding(values),
    "contradiction": lambda values, _: value_checks.contradiction(values),
    "entities": lambda values, _: value_checks.entities(values),
    "non_answer": lambda values, _: answer_checks.non_answer(values.evidence),
    "truncation": lambda values, _: answer_checks.truncation(values.evidence),
    "language": lambda values, _: answer_checks.language(values.evidence),
    "leak": lambda values, leak_words: answer_checks.leak(values.evidence, leak_words),
}
"""Each check, given the run's values and the leak check's run length."""


def _run_checks(
    evidence: Evidence, enabled: Sequence[CheckName], leak_words: int
) -> dict[str, dict[str, Any]]:
    values = ValueEvidence(evidence)
    results: dict[str, dict[str, Any]] = {}
    for name in enabled:
        findings = _CHECK[name](values, leak_words)
        results[name] = {"passed": not findings, "findings": findings}
    return results


def failed_checks(checks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The failed checks of a ``checks`` step result, in :data:`CHECKS` order."""
    return [name for name in CHECKS if name in checks and not checks[name]["passed"]]


def create_consistency_scorer(
    checks: Sequence[CheckName] | None = None,
    weights: Mapping[str, float] | None = None,
    leak_words: int = answer_checks.LEAK_WORDS,
) -> Scorer:
    """The answer checked against the run's own evidence by seven deterministic checks:
    ``grounding`` (values found nowhere in the evidence), ``contradiction`` (a tool result's
    field stated with another value), ``entities`` (the request, the tool arguments and the
    answer name different things), ``non_answer`` (an unwarranted refusal, an empty answer, a
    failed tool call answered as a success), ``truncation``, ``language`` (not the user's) and
    ``leak`` (the system prompt repeated). The score is 1 when every check in ``checks``
    (default: all) passes, less each failed check's share of ``weights`` (1 each); the label is
    ``ok`` or the failed checks joined by ``+``, and the ``checks`` step holds every check's
    findings. What each check can and cannot see is in docs/scorers.md."""
    enabled = [name for name in CHECKS if checks is None or name in checks]
    unknown = sorted({*(checks or ()), *(weights or {})} - set(CHECKS))
    if unknown:
        raise ValueError(f"unknown checks {unknown}; known: {', '.join(CHECKS)}")
    if not enabled:
        raise ValueError("consistency needs at least one check")
    weight: dict[str, float] = {name: float((weights or {}).get(name, 1.0)) for name in enabled}
    if any(value < 0 for value in weight.values()) or not sum(weight.values()):
        raise ValueError("check weights must be >= 0 and not all 0")
    total = sum(weight.values())
    if "language" in enabled:
        # The identifier's model takes about a second to load: here, when bindings are built,
        # not inside the first scored run's time budget (workers.budget.scorer_seconds).
        detect_language("the model loads now")

    all_passed = f"every check passed ({', '.join(enabled)})"

    def analyze(ctx: StepContext) -> dict[str, dict[str, Any]]:
        return _run_checks(evidence_of(ctx.run), enabled, leak_words)

    def generate_score(ctx: StepContext) -> float:
        failed = failed_checks(ctx.results["analyze_step_result"])
        return max(0.0, 1.0 - sum(weight[name] for name in failed) / total)

    def generate_reason(ctx: StepContext) -> str:
        results = ctx.results["analyze_step_result"]
        failed = failed_checks(results)
        if not failed:
            return all_passed
        return "; ".join(f"{name}: {', '.join(results[name]['findings'])}" for name in failed)

    def label(results: dict[str, Any]) -> str:
        return "+".join(failed_checks(results["analyze_step_result"])) or "ok"

    return (
        create_scorer(
            id=ID,
            name="Consistency Scorer",
            description="Checks the answer against the run's own evidence: grounded values, "
            "tool results, entities, non-answers, truncation, language, system prompt leaks.",
            version=VERSION,
            needs_answer=True,
        )
        .analyze(analyze, trace_name="checks")
        .generate_score(generate_score)
        .generate_reason(generate_reason)
        .labelled(label)
    )
