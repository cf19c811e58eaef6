"""Context precision: are the useful context pieces ranked first? (Mastra's ``context-precision-scorer``)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.llm.common import (
    ContextExtractor,
    JudgeSpec,
    Wire,
    check_context_option,
    is_yes,
    judge_instructions,
    judge_prompt,
    one_per_index,
    pieces_prompts,
    reason_step,
    reason_task,
    run_context,
)
from tracescore.scorers.llm.run_text import response_text, section, user_text
from tracescore.scorers.llm.typical_answers import typical_text
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.unscorable import not_scorable
from tracescore.scorers.utils import round_to_two_decimals

VERSION = "4"
"""4 (issue 32, request budget): every request fits the judge's input budget: when it would not, the
longest values from the run (answer, user message, system prompt, tool arguments and results,
ground truth) are cut to fair shares, each ending in a marker saying which characters were cut;
tool results in the trajectory are no longer cut at 4,000 characters when they fit.

3 (issue 32): run text in the prompts is neutralised data and the system prompt says so; the verdict count is checked (one repair, then an error); a failed reason keeps the score; "be strict: background only is no".

2: one verdict per piece required, with an example; runs that failed before answering are not
scorable."""

INSTRUCTIONS = judge_instructions(
    "You judge retrieval for an AI agent: for each context piece it was given, whether that "
    "piece was useful for producing its answer to the user."
)

VERDICTS_TASK = """For each context piece, by its index, decide whether it was useful for producing
the agent's answer to the user: "yes" when it holds information the answer needs or uses, "no"
otherwise. Be strict: a piece that only gives background or is on the topic, without anything
the answer needs, is "no". Give exactly one verdict per piece — as many verdicts as there are pieces — with
"context_index" set to the piece's index and a one-sentence reason.

Example. User: "How do I reset my router?" Answer: "Hold the reset button for 10 seconds, then
wait for the lights to blink." Context: [0] "Press and hold the reset button for ten seconds."
[1] "Our routers come in black and white." [2] "After a reset the status lights blink green."
Verdicts: 0 yes, 1 no, 2 yes."""


class PrecisionVerdict(Wire):
    context_index: int
    verdict: str
    reason: str = ""


class PrecisionVerdicts(Wire):
    verdicts: list[PrecisionVerdict] = Field(default_factory=list)


def useful_in_any_part(answers: Sequence[PrecisionVerdicts]) -> PrecisionVerdicts:
    """The parts' verdicts as one list by index: a piece shown in several parts is useful when
    any of its parts is."""
    by_index: dict[int, PrecisionVerdict] = {}
    for answer in answers:
        for verdict in answer.verdicts:
            known = by_index.get(verdict.context_index)
            if known is None or (is_yes(verdict.verdict) and not is_yes(known.verdict)):
                by_index[verdict.context_index] = verdict
    return PrecisionVerdicts(verdicts=[by_index[index] for index in sorted(by_index)])


def mean_average_precision(verdicts: Sequence[PrecisionVerdict], scale: float) -> float:
    """Mean of precision@k over the positions k holding a useful piece (0 when there is none)."""
    relevant, total = 0, 0.0
    for position, verdict in enumerate(sorted(verdicts, key=lambda v: v.context_index)):
        if is_yes(verdict.verdict):
            relevant += 1
            total += relevant / (position + 1)
    return round_to_two_decimals(total / relevant * scale) if relevant else 0.0


def create_context_precision_scorer(
    *,
    model: JudgeSpec,
    context: Sequence[str] | None = None,
    context_extractor: ContextExtractor | None = None,
    scale: float = 1.0,
) -> Scorer:
    """Mean average precision of the context's ordering, times ``scale``.

    Without ``context`` or ``context_extractor`` the run's own retrieved documents and tool
    results are judged; a run with no context at all is not scorable.
    """
    check_context_option(context)

    def verdicts_prompt(ctx: StepContext) -> str | list[str]:
        pieces = run_context(ctx, context, context_extractor)
        if not pieces:
            not_scorable("no context available for evaluation")
        return pieces_prompts(
            ctx,
            VERDICTS_TASK,
            [section("user", user_text(ctx.run)), section("final_answer", response_text(ctx.run))],
            pieces,
            INSTRUCTIONS,
        )

    def verdicts_sketch(ctx: StepContext) -> PrecisionVerdicts:
        pieces = run_context(ctx, context, context_extractor)
        return PrecisionVerdicts(
            verdicts=[
                PrecisionVerdict(context_index=index, verdict="yes", reason=typical_text())
                for index, piece in enumerate(pieces)
            ]
        )

    def score(ctx: StepContext) -> float:
        return mean_average_precision(ctx.results["analyze_step_result"].verdicts, scale)

    def reason_prompt(ctx: StepContext) -> str:
        verdicts = sorted(
            ctx.results["analyze_step_result"].verdicts, key=lambda v: v.context_index
        )
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The context scored {ctx.score} for precision on a 0 to {scale:g} scale (mean
average precision: 1 when every useful piece comes before every useless one). Say which pieces
were useful and how their positions shaped the score.""",
            ),
            section("user", user_text(ctx.run)),
            section(
                "verdicts",
                "\n".join(f"[{v.context_index}] {v.verdict}: {v.reason}" for v in verdicts),
            ),
        )

    return (
        create_scorer(
            id="context-precision-scorer",
            description="Whether the context pieces useful for the answer come first",
            judge=model,
            instructions=INSTRUCTIONS,
            version=VERSION,
            needs_answer=True,
        )
        .analyze(
            PromptStep(
                "Judge each context piece's usefulness",
                verdicts_prompt,
                PrecisionVerdicts,
                check=one_per_index(
                    lambda ctx: len(run_context(ctx, context, context_extractor)),
                    lambda answer: [v.context_index for v in answer.verdicts],
                    "context piece",
                ),
                sketch=verdicts_sketch,
                combine=lambda ctx, answers: useful_in_any_part(answers),
            )
        )
        .generate_score(score)
        .generate_reason(reason_step(reason_prompt, 2.5))
    )
