"""Answer relevancy: how much of the answer addresses the user's request (Mastra's ``answer-relevancy-scorer``)."""

from __future__ import annotations

import json

from tracescore.scorers.base import PromptStep, Scorer, StepContext, create_scorer
from tracescore.scorers.llm.common import (
    JudgeSpec,
    Wire,
    is_yes,
    judge_prompt,
    reason_step,
)
from tracescore.scorers.llm.sketch import answer_items, judged
from tracescore.scorers.llm.view import (
    describe_run,
    numbered,
    response_text,
    section,
    user_text,
)
from tracescore.scorers.utils import round_to_two_decimals

INSTRUCTIONS = (
    "You judge whether what an AI agent said answers what its user asked. A statement is "
    "relevant when it helps answer the request, even briefly; it is irrelevant when it is off "
    "topic or answers a different question."
)


class AnswerStatements(Wire):
    statements: list[str]


class RelevancyResult(Wire):
    result: str
    reason: str = ""


class RelevancyResults(Wire):
    results: list[RelevancyResult]


def create_answer_relevancy_scorer(
    *, model: JudgeSpec, uncertainty_weight: float = 0.3, scale: float = 1.0
) -> Scorer:
    """``(relevant + uncertainty_weight × unsure) / statements × scale``.

    Each option keeps its default when not given (Mastra replaces its whole options object, so
    passing only ``scale`` made the score NaN).
    """

    def statements_prompt(ctx: StepContext) -> str:
        return judge_prompt(
            """Split the agent's final answer into its statements: one sentence or clause per
statement, each carrying one point. Keep their order. Include every statement, relevant or not.""",
            section("final_answer", response_text(ctx.run)),
        )

    def results_prompt(ctx: StepContext) -> str:
        statements = ctx.results["preprocess_step_result"].statements
        return judge_prompt(
            f"""Decide, for each statement in order, whether it is relevant to the user's request
{json.dumps(user_text(ctx.run), ensure_ascii=False)}: "yes" when it helps answer it, "no" when it
does not, "unsure" when it is related but does not clearly help. The run below shows what the
agent was asked and did. Give one result per statement, each with a one-sentence reason.""",
            describe_run(ctx.run, steps=False),
            section("statements", numbered(statements)),
        )

    def score(ctx: StepContext) -> float:
        results = ctx.results["analyze_step_result"].results
        if not results:
            return 0.0
        relevant = sum(is_yes(r.result) for r in results)
        unsure = sum(r.result.strip().lower() == "unsure" for r in results)
        return round_to_two_decimals(
            (relevant + uncertainty_weight * unsure) / len(results) * scale
        )

    def reason_prompt(ctx: StepContext) -> str:
        results = ctx.results["analyze_step_result"].results
        return judge_prompt(
            f"""The agent's answer scored {ctx.score} for relevancy on a 0 to {scale:g} scale.
Explain the score in two or three sentences: what in the answer addressed the request and what
did not.""",
            section("user", user_text(ctx.run)),
            section("final_answer", response_text(ctx.run)),
            section("results", numbered([f"{r.result}: {r.reason}" for r in results])),
        )

    return (
        create_scorer(
            id="answer-relevancy-scorer",
            description="How well the answer addresses the user's request",
            judge=model,
            instructions=INSTRUCTIONS,
        )
        .preprocess(
            PromptStep(
                "Split the answer into statements",
                statements_prompt,
                AnswerStatements,
                sketch=answer_items(AnswerStatements),
            )
        )
        .analyze(
            PromptStep(
                "Judge each statement's relevance",
                results_prompt,
                RelevancyResults,
                sketch=lambda ctx: RelevancyResults(results=judged(
                    ctx.results["preprocess_step_result"].statements,
                    lambda statement, reason: RelevancyResult(result="yes", reason=reason),
                )),  # fmt: skip
            )
        )
        .generate_score(score)
        .generate_reason(reason_step(reason_prompt, 2.5))
    )
