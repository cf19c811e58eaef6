"""Pieces every judge scorer shares: verdict reading, share-of-yes scores, context, reason steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel, ConfigDict

from tracescore.scorers.base import PromptStep, Scorer, StepContext, create_scorer
from tracescore.scorers.llm.sketch import explanation
from tracescore.scorers.llm.view import default_context
from tracescore.scorers.utils import round_to_two_decimals

if TYPE_CHECKING:
    from tracescore.judge import JudgeConfig
    from tracescore.scorers.base import Judge

JudgeSpec: TypeAlias = "str | JudgeConfig | Judge"
"""A litellm model string (``openai/gpt-4o-mini``), a ``JudgeConfig``, or any ``Judge``."""

ContextExtractor = Callable[[Any, Any], Sequence[str]]
"""``(run_input, run_output) -> context pieces`` (Mastra's ``contextExtractor``)."""


class Wire(BaseModel):
    """A judge answer schema: JSON keys are Mastra's (aliases), attributes are snake_case."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)


def is_yes(verdict: str) -> bool:
    """Verdicts compare trimmed and case-folded in every scorer (Mastra mixes three rules)."""
    return verdict.strip().lower() == "yes"


def share_of_yes(verdicts: Sequence[str], scale: float) -> float:
    """``round2(yes / n * scale)``, 0 without verdicts."""
    if not verdicts:
        return 0.0
    return round_to_two_decimals(sum(map(is_yes, verdicts)) / len(verdicts) * scale)


def run_context(
    ctx: StepContext, context: Sequence[str] | None, extractor: ContextExtractor | None = None
) -> list[str]:
    """The context to judge against: the extractor's, else the option's, else the run's own
    (retrieved documents and tool results: Mastra would need an explicit option)."""
    if extractor is not None:
        return [str(piece) for piece in extractor(ctx.run.input, ctx.run.output) or []]
    if context is not None:
        return list(context)
    return default_context(ctx.run)


def check_context_option(context: Sequence[str] | None) -> None:
    if context is not None and len(context) == 0:
        raise ValueError("context must not be empty: leave it out to use the run's own context")


def reason_step(
    create_prompt: Callable[[StepContext], str],
    sentences: float | Callable[[StepContext], float],
) -> PromptStep:
    """A step asking the judge to explain the score in ``sentences`` sentences (what the prompt
    asks for; "two or three" is 2.5), which is also the size its answer is priced at."""
    return PromptStep(
        description="Explain the score in plain language",
        create_prompt=create_prompt,
        sketch=explanation(sentences),
    )


def judge_prompt(task: str, *blocks: str) -> str:
    """A step prompt: the task first, then the material it refers to."""
    return "\n\n".join([task.strip(), *blocks])


def share_of_yes_scorer(
    *,
    id: str,
    description: str,
    model: JudgeSpec,
    instructions: str,
    analyze: PromptStep,
    verdicts: Callable[[Any], Sequence[str]],
    scale: float,
    reason: Callable[[StepContext], str],
    reason_sentences: float,
    preprocess: PromptStep | None = None,
) -> Scorer:
    """A scorer whose score is the share of ``yes`` among the analysis' ``verdicts(result)``
    (faithfulness, hallucination, bias, toxicity), with a judge-written reason of
    ``reason_sentences`` sentences."""
    scorer = create_scorer(id=id, description=description, judge=model, instructions=instructions)
    if preprocess is not None:
        scorer = scorer.preprocess(preprocess)
    return (
        scorer.analyze(analyze)
        .generate_score(
            lambda ctx: share_of_yes(verdicts(ctx.results["analyze_step_result"]), scale)
        )
        .generate_reason(reason_step(reason, reason_sentences))
    )
