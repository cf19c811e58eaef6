"""Hallucination: the share of the answer's claims the context does not back (Mastra's ``hallucination-scorer``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
    "You detect hallucinations: statements in an AI agent's answer that its context (retrieved "
    "documents, tool results, provided facts) does not back or that contradict it. Judge only "
    "from that context, never from your own knowledge."
)

GetContext = Callable[[StepContext, str], Sequence[str]]
"""``(ctx, step) -> context``, step being ``"analyze"`` or ``"generate_reason"`` (Mastra's ``getContext``)."""


class HallucinationClaims(Wire):
    claims: list[str]


class HallucinationVerdict(Wire):
    statement: str = ""
    verdict: str
    reason: str = ""


class HallucinationVerdicts(Wire):
    verdicts: list[HallucinationVerdict]


def create_hallucination_scorer(
    *,
    model: JudgeSpec,
    context: Sequence[str] | None = None,
    get_context: GetContext | None = None,
    scale: float = 1.0,
) -> Scorer:
    """Share of claims that are hallucinated (``yes``), times ``scale``: higher is worse.

    Context comes from ``get_context`` (sync, unlike Mastra's, which may be async), else
    ``context``, else the run's own retrieved documents and tool results.
    """
    check_context_option(context)

    def context_for(ctx: StepContext, step: str) -> list[str]:
        if get_context is not None:
            return [str(piece) for piece in get_context(ctx, step) or []]
        return run_context(ctx, context)

    def claims_prompt(ctx: StepContext) -> str:
        return judge_prompt(
            """List every factual statement in the agent's final answer as a short claim that
stands on its own. Include numbers, names, dates and causal statements; leave out greetings,
questions and offers of help.""",
            section("user", user_text(ctx.run)),
            section("final_answer", response_text(ctx.run)),
        )

    def verdicts_prompt(ctx: StepContext) -> str:
        claims = ctx.results["preprocess_step_result"].claims
        return judge_prompt(
            """For each claim, in order, decide whether it is a hallucination with respect to the
context: verdict "yes" when the context contradicts it or does not contain it, "no" when the
context backs it. Repeat the claim as "statement" and give a one-sentence reason. One verdict per
claim.""",
            section("context", numbered(context_for(ctx, "analyze"))),
            section("claims", numbered(claims)),
        )

    def reason_prompt(ctx: StepContext) -> str:
        verdicts = ctx.results["analyze_step_result"].verdicts
        return judge_prompt(
            f"""The agent's answer scored {ctx.score} for hallucination on a 0 to {scale:g} scale
(the share of its claims the context does not back; higher is worse). Explain the score in two or
three sentences, naming the hallucinated claims.""",
            section("context", numbered(context_for(ctx, "generate_reason"))),
            section("final_answer", response_text(ctx.run)),
            section(
                "verdicts", numbered([f"{v.verdict}: {v.statement} — {v.reason}" for v in verdicts])
            ),
        )

    return share_of_yes_scorer(
        id="hallucination-scorer",
        description="Share of the answer's claims not backed by, or contradicting, the context",
        model=model,
        instructions=INSTRUCTIONS,
        preprocess=PromptStep(
            "Extract the answer's claims",
            claims_prompt,
            HallucinationClaims,
            sketch=answer_items(HallucinationClaims),
        ),
        analyze=PromptStep(
            "Find claims the context does not back",
            verdicts_prompt,
            HallucinationVerdicts,
            sketch=lambda ctx: HallucinationVerdicts(verdicts=judged(
                ctx.results["preprocess_step_result"].claims,
                lambda claim, reason: HallucinationVerdict(statement=claim, verdict="no", reason=reason),
            )),  # fmt: skip
        ),
        verdicts=lambda analysis: [v.verdict for v in analysis.verdicts],
        scale=scale,
        reason=reason_prompt,
        reason_sentences=2.5,
    )
