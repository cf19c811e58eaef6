"""Hallucination: the share of the answer's claims the context does not back (Mastra's ``hallucination-scorer``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

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

2: the prompts carry every decision rule of Mastra's (what is and is not a hallucination:
approximate dates and numbers, subjective praise, speculation inside vs outside the context, no
context at all), with examples; runs that failed before answering are not scorable."""

INSTRUCTIONS = judge_instructions(
    "You detect hallucinations: claims in an AI agent's answer that its context (retrieved "
    "documents, tool results, provided facts) contradicts or does not support. Judge only from "
    "that context, never from your own knowledge."
)

CLAIMS_TASK = claims_task(
    ', and evaluative ones ("a leading firm")',
    """Example. Answer: "Ada Lovelace, a pioneering mathematician, published her notes in 1843. They
could have inspired Turing." Claims: ["Ada Lovelace was a pioneering mathematician.", "Ada
Lovelace published her notes in 1843.", "Ada Lovelace's notes could have inspired Turing."]""",
)

VERDICTS_TASK = """For each claim, in order, decide whether it is a hallucination with respect to
the context. Repeat the claim as "statement", give the verdict and a one-sentence reason; one
verdict per claim.
- "yes" (hallucinated): the claim contradicts the context, or asserts something the context does
  not support.
- "no" (not hallucinated): the context supports the claim. These are NOT hallucinations: a less
  precise date than the context gives (the year when the context gives the month and year), a
  reasonable approximation of a number ("about 3 million" for 2.94 million), leaving details out.
- Speculation ("may", "might", "could") about facts that ARE in the context is not a
  hallucination ("no"); speculation about facts that are NOT in the context is ("yes").
- Subjective praise or significance ("pioneering", "made history", "leading", "world-class") is
  a hallucination ("yes") unless the context says so.
- When the context is empty (shown as "(none)"), nothing supports any claim: every verdict is
  "yes".

Example. Context: "The museum opened in March 1998 and received 2.94 million visitors in 2023."
- "The museum opened in 1998." -> no (less precise date)
- "About 3 million people visited in 2023." -> no (reasonable approximation)
- "The museum opened in 2001." -> yes (contradicts the context)
- "Visitor numbers may keep growing after 2023." -> no (speculation about visitors, which the
  context covers)
- "The museum may add a new wing." -> yes (speculation about something the context never
  mentions)
- "It is the city's leading museum." -> yes (praise the context does not give)"""


PART_VERDICTS = """"yes" when this part contradicts the claim, "no" when this part supports
it (the allowances above apply), "unsure" when this part does not mention it: a claim no part
supports counts as a hallucination once the parts are combined."""


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
            CLAIMS_TASK,
            section("user", user_text(ctx.run)),
            section("final_answer", response_text(ctx.run)),
        )

    def verdicts_prompt(ctx: StepContext) -> str | list[str]:
        claims = ctx.results["preprocess_step_result"].claims
        return claims_against_context(
            ctx, VERDICTS_TASK, PART_VERDICTS, claims, context_for(ctx, "analyze"), INSTRUCTIONS
        )

    def reason_prompt(ctx: StepContext) -> str:
        verdicts = ctx.results["analyze_step_result"].verdicts
        task = reason_task(
            ctx.score,
            f"""The agent's answer scored {ctx.score} for hallucination on a 0 to {scale:g}
scale (the share of its claims the context contradicts or does not support; higher is worse).
Name the hallucinated claims.""",
        )
        return judge_prompt(
            task,
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
            # Contradicted in any part of a long context: hallucinated; else supported in any
            # part: not; mentioned in none: unsupported, so hallucinated.
            combine=lambda ctx, answers: per_claim(answers, ("yes", "no"), unseen="yes"),
            check=one_per_item(
                lambda ctx: ctx.results["preprocess_step_result"].claims,
                lambda answer: answer.verdicts,
                "claim",
            ),
            sketch=lambda ctx: HallucinationVerdicts(
                verdicts=judged(
                    ctx.results["preprocess_step_result"].claims,
                    lambda claim, reason: HallucinationVerdict(
                        statement=claim, verdict="no", reason=reason
                    ),
                )
            ),
        ),
        verdicts=lambda analysis: [v.verdict for v in analysis.verdicts],
        scale=scale,
        reason=reason_prompt,
        reason_sentences=2.5,
        version=VERSION,
    )
