"""Faithfulness: how much of the answer the run's context supports (Mastra's ``faithfulness-scorer``)."""

from __future__ import annotations

from collections.abc import Sequence

from tracescore.scorers.base import Scorer
from tracescore.scorers.llm.common import (
    JudgeSpec,
    Wire,
    check_context_option,
    claims_against_context,
    claims_task,
    judge_instructions,
    judge_prompt,
    one_per_item,
    per_claim,
    reason_task,
    run_context,
    share_of_yes_scorer,
)
from tracescore.scorers.llm.run_text import numbered, response_text, section, user_text
from tracescore.scorers.llm.typical_answers import answer_items, judged
from tracescore.scorers.steps import PromptStep, StepContext

VERSION = "4"
"""4 (issue 32, request budget): every request fits the judge's input budget: when it would not, the
longest values from the run (answer, user message, system prompt, tool arguments and results,
ground truth) are cut to fair shares, each ending in a marker saying which characters were cut;
tool results in the trajectory are no longer cut at 4,000 characters when they fit.

3 (issue 32): run text in the prompts is neutralised data and the system prompt says so; the verdict count is checked (one repair, then an error); a failed reason keeps the score.

2: the prompts carry every decision rule of Mastra's (speculative claims are kept and judged
"unsure", "no" only for a direct contradiction), with examples; runs that failed before
answering are not scorable."""

INSTRUCTIONS = judge_instructions(
    "You check whether an AI agent's answer is backed by the information it had: retrieved "
    "documents and tool results. You judge against that context only, never against your own "
    "knowledge: a claim you know to be true is still unsupported when the context does not say it."
)

CLAIMS_TASK = claims_task(
    ": they are judged too",
    """Example. Answer: "The parcel left Lyon on Monday and weighs 2.5 kg. It might arrive by Friday.
Do you want tracking updates?" Claims: ["The parcel left Lyon on Monday.", "The parcel weighs
2.5 kg.", "The parcel might arrive by Friday."]""",
)

VERDICTS_TASK = """For each claim, in order, decide whether the context backs it. Use the context
only, never your own knowledge.
- "yes": the context states the claim or plainly implies it.
- "no": only when the claim directly contradicts the context.
- "unsure": the context does not mention it, so it can be neither confirmed nor refuted. A
  speculative claim ("may", "might", "could") is "unsure", even when its subject is in the context.
Give exactly one verdict per claim — as many verdicts as there are claims — each with a
one-sentence reason.

Example. Context: "The pool opens at 7:00 and closes at 21:00. Lanes cost $6 per hour."
- "The pool opens at 7:00." -> yes
- "A lane costs $8 per hour." -> no (the context says $6)
- "The pool has a sauna." -> unsure (not mentioned)
- "The pool might be crowded in the evening." -> unsure (speculation)"""


PART_VERDICTS = """"yes" when this part supports the claim, "no" only when this part
directly contradicts it, "unsure" when this part does not mention it."""


class FaithfulnessClaims(Wire):
    claims: list[str]


def claims_of(ctx: StepContext) -> list[str]:
    extracted: FaithfulnessClaims = ctx.results["preprocess_step_result"]
    return extracted.claims


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
            CLAIMS_TASK,
            section("user", user_text(ctx.run)),
            section("final_answer", response_text(ctx.run)),
        )

    def verdicts_prompt(ctx: StepContext) -> str | list[str]:
        return claims_against_context(
            ctx,
            VERDICTS_TASK,
            PART_VERDICTS,
            claims_of(ctx),
            run_context(ctx, context),
            INSTRUCTIONS,
        )

    def reason_prompt(ctx: StepContext) -> str:
        verdicts = ctx.results["analyze_step_result"].verdicts
        task = reason_task(
            ctx.score,
            f"""The agent's answer scored {ctx.score} for faithfulness on a 0 to {scale:g}
scale (the share of its claims the context supports). Name the claims that were contradicted or
not supported.""",
        )
        return judge_prompt(
            task,
            section("user", user_text(ctx.run)),
            section("final_answer", response_text(ctx.run)),
            section("context", numbered(run_context(ctx, context))),
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
            check=one_per_item(claims_of, lambda answer: answer.verdicts, "claim"),
            # A contradiction in any part of a long context decides, else support in any part.
            combine=lambda ctx, answers: per_claim(answers, ("no", "yes")),
            sketch=lambda ctx: FaithfulnessVerdicts(
                verdicts=judged(
                    ctx.results["preprocess_step_result"].claims,
                    lambda claim, reason: FaithfulnessVerdict(verdict="yes", reason=reason),
                )
            ),
        ),
        verdicts=lambda analysis: [v.verdict for v in analysis.verdicts],
        scale=scale,
        reason=reason_prompt,
        reason_sentences=2.5,
        version=VERSION,
    )
