"""Context relevance: how relevant the context was and whether the agent used it (Mastra's ``context-relevance-scorer``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.llm.common import (
    ContextExtractor,
    JudgeSpec,
    Wire,
    check_context_option,
    judge_instructions,
    judge_prompt,
    one_per_index,
    pieces_prompts,
    reason_step,
    reason_task,
    run_context,
)
from tracescore.scorers.llm.run_text import numbered, response_text, section, user_text
from tracescore.scorers.llm.typical_answers import SENTENCE_WORDS, typical_text
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.unscorable import not_scorable
from tracescore.scorers.utils import round_to_two_decimals

VERSION = "4"
"""4 (issue 32, request budget): every request fits the judge's input budget: when it would not, the
longest values from the run (answer, user message, system prompt, tool arguments and results,
ground truth) are cut to fair shares, each ending in a marker saying which characters were cut;
tool results in the trajectory are no longer cut at 4,000 characters when they fit.

3 (issue 32): run text in the prompts is neutralised data and the system prompt says so; the verdict count is checked (one repair, then an error); a failed reason keeps the score.

2: an example added; runs that failed before answering are not scorable."""

INSTRUCTIONS = judge_instructions(
    "You judge the context an AI agent was given to answer a user: how relevant each piece is "
    "to the request, whether the answer used it, and what information was missing."
)

EVALUATIONS_TASK = """Evaluate every context piece, by its index:
- "relevanceLevel": "high" when it directly answers the request, "medium" when it gives useful
  background, "low" when it is only loosely related, "none" when it is unrelated;
- "wasUsed": true when the final answer draws on it;
- "contextPiece": the piece (or its start) and "reasoning": one sentence.
Then list under "missingContext" information the answer needed that no piece provided (an empty
list when nothing was missing), and give a one-sentence "overallAssessment".

Example. User: "When does the library open on Sundays?" Answer: "It opens at noon on Sundays."
Context: [0] "On Sundays the library opens at 12:00." [1] "The library was founded in 1921."
[2] "Weekday hours are 9:00 to 20:00." Evaluations: 0 high, used; 1 none, unused; 2 medium,
unused (related opening hours). missingContext: []."""


RELEVANCE_WEIGHTS = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}


class ContextRelevancePenalties(BaseModel):
    """Penalties (snake_case, or Mastra's camelCase keys)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    unused_high_relevance_context: float = 0.1
    missing_context_per_item: float = 0.15
    max_missing_context_penalty: float = 0.5


class RelevanceEvaluation(Wire):
    context_index: int
    context_piece: str = Field("", alias="contextPiece")
    relevance_level: Literal["high", "medium", "low", "none"] = Field(alias="relevanceLevel")
    was_used: bool = Field(alias="wasUsed")
    reasoning: str = ""


class RelevanceEvaluations(Wire):
    evaluations: list[RelevanceEvaluation] = Field(default_factory=list)
    missing_context: list[str] = Field(default_factory=list, alias="missingContext")
    overall_assessment: str = Field("", alias="overallAssessment")


PART_MISSING = """Leave "missingContext" empty: what the answer lacked can only be told from the
whole context, and this request shows part of it."""
LEVEL_ORDER = ("none", "low", "medium", "high")


def across_parts(answers: Sequence[RelevanceEvaluations]) -> RelevanceEvaluations:
    """The parts' evaluations as one by index: a piece shown in several parts takes its most
    relevant part's level, and counts as used when any part was. Parts are told to leave
    ``missingContext`` empty (each sees part of the context), so a context judged in parts has
    no missing-context penalty."""
    by_index: dict[int, RelevanceEvaluation] = {}
    for answer in answers:
        for evaluation in answer.evaluations:
            known = by_index.get(evaluation.context_index)
            if known is None:
                by_index[evaluation.context_index] = evaluation
                continue
            best = max(known, evaluation, key=lambda e: LEVEL_ORDER.index(e.relevance_level))
            by_index[evaluation.context_index] = best.model_copy(
                update={"was_used": known.was_used or evaluation.was_used}
            )
    return RelevanceEvaluations(
        evaluations=[by_index[index] for index in sorted(by_index)],
        overall_assessment=" ".join(a.overall_assessment for a in answers if a.overall_assessment),
    )


def relevance_score(
    analysis: RelevanceEvaluations, penalties: ContextRelevancePenalties, scale: float
) -> float:
    """Mean relevance weight, minus penalties for unused highly relevant and missing context."""
    if not analysis.evaluations:
        return round_to_two_decimals((0.0 if analysis.missing_context else 1.0) * scale)
    evaluations = analysis.evaluations
    relevance = sum(RELEVANCE_WEIGHTS[e.relevance_level] for e in evaluations) / len(evaluations)
    unused_high = sum(e.relevance_level == "high" and not e.was_used for e in evaluations)
    usage_penalty = unused_high * penalties.unused_high_relevance_context
    missing_penalty = min(
        len(analysis.missing_context) * penalties.missing_context_per_item,
        penalties.max_missing_context_penalty,
    )
    return round_to_two_decimals(max(0.0, relevance - usage_penalty - missing_penalty) * scale)


def create_context_relevance_scorer(
    *,
    model: JudgeSpec,
    context: Sequence[str] | None = None,
    context_extractor: ContextExtractor | None = None,
    penalties: ContextRelevancePenalties | Mapping[str, Any] | None = None,
    scale: float = 1.0,
) -> Scorer:
    """Weighted relevance of the context (high 1, medium 0.7, low 0.3, none 0) minus penalties.

    Without ``context`` or ``context_extractor`` the run's own retrieved documents and tool
    results are judged; a run with no context at all is not scorable (Mastra scores it 1).
    """
    check_context_option(context)
    rules = (
        penalties
        if isinstance(penalties, ContextRelevancePenalties)
        else ContextRelevancePenalties.model_validate(dict(penalties or {}))
    )

    def evaluations_prompt(ctx: StepContext) -> str | list[str]:
        pieces = run_context(ctx, context, context_extractor)
        if not pieces:
            not_scorable("no context available for evaluation")
        return pieces_prompts(
            ctx,
            EVALUATIONS_TASK,
            [section("user", user_text(ctx.run)), section("final_answer", response_text(ctx.run))],
            pieces,
            INSTRUCTIONS,
            PART_MISSING,
        )

    def evaluations_sketch(ctx: StepContext) -> RelevanceEvaluations:
        return RelevanceEvaluations(
            evaluations=[
                RelevanceEvaluation(
                    context_index=index,
                    context_piece=" ".join(piece.split()[:SENTENCE_WORDS]),  # "or its start"
                    relevance_level="high",
                    was_used=True,
                    reasoning=typical_text(),
                )
                for index, piece in enumerate(run_context(ctx, context, context_extractor))
            ],
            overall_assessment=typical_text(),
        )

    def score(ctx: StepContext) -> float:
        return relevance_score(ctx.results["analyze_step_result"], rules, scale)

    def reason_prompt(ctx: StepContext) -> str:
        analysis: RelevanceEvaluations = ctx.results["analyze_step_result"]
        lines = [
            f"[{e.context_index}] {e.relevance_level}, {'used' if e.was_used else 'unused'}: {e.reasoning}"
            for e in analysis.evaluations
        ]
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The context scored {ctx.score} for relevance on a 0 to {scale:g} scale (mean
relevance, less penalties for highly relevant pieces the answer ignored and for missing
information).""",
            ),
            section("user", user_text(ctx.run)),
            section("evaluations", "\n".join(lines) or "(none)"),
            section("missing_context", numbered(analysis.missing_context)),
        )

    return (
        create_scorer(
            id="context-relevance-scorer",
            description="How relevant the context was to the request and whether the answer used it",
            judge=model,
            instructions=INSTRUCTIONS,
            version=VERSION,
            needs_answer=True,
        )
        .analyze(
            PromptStep(
                "Rate each context piece's relevance and use",
                evaluations_prompt,
                RelevanceEvaluations,
                check=one_per_index(
                    lambda ctx: len(run_context(ctx, context, context_extractor)),
                    lambda answer: [e.context_index for e in answer.evaluations],
                    "context piece",
                ),
                sketch=evaluations_sketch,
                combine=lambda ctx, answers: across_parts(answers),
            )
        )
        .generate_score(score)
        .generate_reason(reason_step(reason_prompt, 2.5))
    )
