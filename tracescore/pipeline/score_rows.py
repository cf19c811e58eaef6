"""The rows the scoring worker stores: a binding's score of a run, a row standing for one the
database refused, and a binding's sampling decision on a run.

Their ids are deterministic (:func:`~tracescore.store.scores.score_id`), which is what makes
scoring a trace twice (a lease that expired mid-trace) write the same rows again rather than
new ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeGuard

from pydantic_core import to_jsonable_python

from tracescore.extract.model import AgentRun
from tracescore.pipeline.bindings import CompiledBinding
from tracescore.pipeline.budget import InputCut
from tracescore.scorers.results import ScoreResult
from tracescore.store.score_reads import PASSING_LABELS
from tracescore.store.scores import SamplingDecision, StoredScore, score_id

_MAX_PROMPT_CHARS = 20_000
"""A step's prompt is stored up to this many characters: it repeats the whole run."""
RECOMPUTE = "r"
"""Set (to 1) in a stored score's ``steps`` whose step results were left out because they are a
pure function of the run and the scorer's version (see :func:`recomputable`): readers compute
them again from the trace (:mod:`tracescore.pipeline.recomputed_steps`). Those steps were two
thirds of a code score's row (657 bytes of ~1 KB, each step result twice). One letter, as nearly
every code score carries it: ``{"recompute":true}``, which rows written before it hold
(:data:`RECOMPUTE_BEFORE`, read alike), cost PostgreSQL 47 bytes a trace of three scores."""
RECOMPUTE_BEFORE = "recompute"
"""The marker as rows written before :data:`RECOMPUTE` hold it (revision ``0018_compact_storage``
wrote it too): read, never written."""
KEPT_STEPS = ("input_cut", "cascade", "trigger", "trace_cut")
"""What a score's ``steps`` record besides its step results, which no recomputation gives
back: they are stored beside the marker."""
_KEPT_BY_SQL = frozenset(("consistency",))
"""Scorers whose stored steps a query reads (insights reads ``consistency``'s failed checks
from the database, :func:`~tracescore.store.score_reads.failed_scores`, of its failing scores
only)."""


def score_row(
    binding: CompiledBinding,
    run: AgentRun,
    *,
    status: str,
    result: ScoreResult | None = None,
    error: str | None = None,
    now: datetime | None = None,
    cut: InputCut | None = None,
) -> StoredScore:
    """The ``scores`` row of one binding on one run; ``cut`` (what the input budget cut of the
    run) is recorded in its steps as ``input_cut``, and the run's ``trace_cut`` (it was rebuilt
    from part of its trace) as ``trace_cut``."""
    now = now or datetime.now(UTC)
    row: StoredScore = {
        "id": score_id(run.trace_id, run.span_id, binding.name, binding.scorer.version),
        "trace_id": run.trace_id,
        "span_id": run.span_id,
        "binding": binding.name,
        "scorer_id": binding.scorer.id,
        "scorer_version": binding.scorer.version,
        "status": status,
        "score": None,
        "label": None,
        "reason": None,
        "error": error,
        "steps": None,
        "judge_model": None,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "latency_ms": 0.0,
        "run_kind": run.kind,
        "service": run.service_name,
        "agent": run.agent_name,
        "model": run.model,
        "created_at": now,
        "updated_at": now,
    }
    if result is not None:
        row["status"] = result.status
        row["score"] = result.score
        row["label"] = result.label or binding.label(result.score)
        row["reason"] = result.reason
        row["error"] = result.error
        steps: dict[str, Any] = (
            {RECOMPUTE: 1} if recomputable(binding, result, row["label"]) else steps_json(result)
        )
        row["steps"] = steps
        row["judge_model"] = result.judge_calls[0].model if result.judge_calls else None
        row["input_tokens"] = result.input_tokens
        row["output_tokens"] = result.output_tokens
        row["cost_usd"] = result.cost_usd
        row["latency_ms"] = result.duration_ms
        if result.status == "error" and run.warnings:
            row["error"] = f"{result.error} (extraction warnings: {'; '.join(run.warnings[:5])})"
        if cut is not None:
            steps["input_cut"] = cut.to_json()
        if run.trace_cut is not None:
            steps["trace_cut"] = run.trace_cut
    return row


def unstorable_score(row: StoredScore, error: BaseException) -> StoredScore:
    """The ``error`` row that stands for a score row the database refused."""
    replacement = row.copy()
    replacement["status"] = "error"
    replacement["score"] = replacement["label"] = replacement["reason"] = replacement["steps"] = (
        None
    )
    replacement["input_tokens"] = replacement["output_tokens"] = 0
    replacement["cost_usd"] = 0.0
    replacement["error"] = f"the score could not be stored: {type(error).__name__}: {error}"[:2000]
    return replacement


def decision_row(
    binding: CompiledBinding, run: AgentRun, sampled: bool, now: datetime
) -> SamplingDecision:
    """The ``sampling_decisions`` row of one binding on one run."""
    return {
        "id": score_id(run.trace_id, run.span_id, binding.name, "sampling"),
        "trace_id": run.trace_id,
        "span_id": run.span_id,
        "binding": binding.name,
        "sampled": sampled,
        "created_at": now,
    }


def marked_for_recompute(steps: object) -> TypeGuard[Mapping[str, Any]]:
    """Whether stored ``steps`` carry the marker (either spelling) in place of step results."""
    return isinstance(steps, Mapping) and bool(steps.get(RECOMPUTE) or steps.get(RECOMPUTE_BEFORE))


def recomputable(binding: CompiledBinding, result: ScoreResult, label: str | None) -> bool:
    """Whether ``result``'s step results can be left out of its row: a run's (not a
    conversation's) ``ok`` result of a scorer without a judge, which gives the same steps on
    the same run again. A judge's steps cost money and are not reproducible; an error's may
    come from a time budget a read would not apply. (Migration ``0018_compact_storage`` applies
    the same rule to stored rows: ``ok``, no judge model, no tokens, no conversation.) A
    scorer whose steps a query reads (:data:`_KEPT_BY_SQL`) keeps them only where that query
    reads them: when its ``label`` says it failed; a passing one's were 320 of its row's
    ~430 bytes, compressed."""
    return (
        result.status == "ok"
        and not result.judge_calls
        and result.input_tokens == 0
        and binding.config.target != "conversation"
        and not binding.scorer.uses_judge
        and (binding.scorer.id not in _KEPT_BY_SQL or label in PASSING_LABELS)
    )


def steps_json(result: ScoreResult) -> dict[str, Any]:
    """Step results and judge calls as stored (prompts capped: they repeat the whole run), what
    ``model_dump(mode="json")`` of those fields gives, built field by field: the whole-model
    dump cost more than a code scorer's run. A step's result is usually the very object the
    result repeats as ``preprocess_step_result`` (or the others): it is converted once."""
    converted: dict[int, Any] = {}

    def plain(value: Any) -> Any:
        if value is None or type(value) in _SCALARS:
            return value
        if (found := converted.get(id(value))) is None:
            found = converted[id(value)] = to_jsonable_python(value)
        return found

    return {
        "failed_step": result.failed_step,
        "preprocess_step_result": plain(result.preprocess_step_result),
        "analyze_step_result": plain(result.analyze_step_result),
        "generate_score_step_result": plain(result.generate_score_step_result),
        "steps": [
            {
                "name": step.name,
                "result": plain(step.result),
                "duration_ms": step.duration_ms,
                "prompt": step.prompt
                if step.prompt is None or len(step.prompt) <= _MAX_PROMPT_CHARS
                else step.prompt[:_MAX_PROMPT_CHARS] + "…[truncated]",
                "judge_calls": [
                    call.model_dump(mode="json", exclude={"prompt"}) for call in step.judge_calls
                ]
                if step.judge_calls
                else [],
                "error": step.error,
            }
            for step in result.steps
        ],
    }


_SCALARS = frozenset((str, int, float, bool))
"""Types ``to_jsonable_python`` gives back as they are."""
