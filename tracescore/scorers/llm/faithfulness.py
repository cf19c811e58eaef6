"""Faithfulness: how much of the answer the run's context supports (Mastra's ``faithfulness-scorer``)."""

from __future__ import annotations

from collections.abc import Sequence

from tracescore.scorers.base import PromptStep, Scorer, StepContext
from tracescore.scorers.llm.common import (
    JudgeSpec,
    Wire,
    check_context_option,
    judge_prompt,
    run_context,
    share_of_yes_scorer,
)
from tracescore.scorers.llm.sketch import answer_items, judged
from tracescore.scorers.llm.view import numbered, response_text, section, user_text

INSTRUCTIONS = (
    "You check whether an AI agent's answer is backed by the information it had: retrieved "
    "documents and tool results. You are literal: a claim is supported only when that context "
    "states it or plainly implies it. Your own knowledge does not count."
)


class FaithfulnessClaims(Wire):
    claims: list[str]


class FaithfulnessVerdict(Wire):
    verdict: str
    reason: str = ""


class FaithfulnessVerdicts(Wire):
    verdicts: list[FaithfulnessVerdict]


def create_faithfulness_scorer(
    *, model: JudgeSpec, context: Sequence[str] | None = None, scale: float = 1.0
) -> Scorer:
    """Share of the answer's claims the context supports, times ``scale``.

    ``context`` defaults to the run's own grounding: retrieved documents and every tool result,
    whether the tool call sits in message parts or in the legacy list.
    """
    check_context_option(context)

    def claims_prompt(ctx: StepContext) -> str:
        return judge_prompt(
            """Split the agent's final answer into short factual claims. Each claim states one
fact and makes sense on its own (replace pronouns with what they refer to). Leave out greetings,
questions, opinions and offers of help. An answer without factual content has no claims.""",
            section("user", user_text(ctx.run)),
            section("final_answer", response_text(ctx.run)),
        )

    def verdicts_prompt(ctx: StepContext) -> str:
        claims = ctx.results["preprocess_step_result"].claims
        return judge_prompt(
            """For each claim, in order, decide whether the context backs it:
"yes" when the context states or plainly implies it, "no" when the context contradicts it,
"unsure" when the context says nothing either way. Give exactly one verdict per claim, each with
a one-sentence reason.""",
            section("context", numbered(run_context(ctx, context))),
            section("claims", numbered(claims)),
        )

    def reason_prompt(ctx: StepContext) -> str:
        verdicts = ctx.results["analyze_step_result"].verdicts
        return judge_prompt(
            f"""The agent's answer scored {ctx.score} for faithfulness on a 0 to {scale:g} scale
(the share of its claims the context supports). Explain the score in two or three sentences,
naming the claims that were not supported.""",
            section("user", user_text(ctx.run)),
            section("final_answer", response_text(ctx.run)),
            section("verdicts", numbered([f"{v.verdict}: {v.reason}" for v in verdicts])),
        )

    return share_of_yes_scorer(
        id="faithfulness-scorer",
        description="How much of the answer is supported by the retrieved context and tool results",
        model=model,
        instructions=INSTRUCTIONS,
        preprocess=PromptStep(
            "Extract the answer's claims",
            claims_prompt,
            FaithfulnessClaims,
            sketch=answer_items(FaithfulnessClaims),
        ),
        analyze=PromptStep(
            "Check each claim against the context",
            verdicts_prompt,
            FaithfulnessVerdicts,
            sketch=lambda ctx: FaithfulnessVerdicts(verdicts=judged(
                ctx.results["preprocess_step_result"].claims,
                lambda claim, reason: FaithfulnessVerdict(verdict="yes", reason=reason),
            )),  # fmt: skip
        ),
        verdicts=lambda analysis: [v.verdict for v in analysis.verdicts],
        scale=scale,
        reason=reason_prompt,
        reason_sentences=2.5,
    )
