"""An LLM scorer whose prompt is an option, bound with ``module:attr`` as a user's own would
be: changing ``rubric`` changes the prompt it renders without changing its version, as editing
a judge prompt in a config file does."""

from __future__ import annotations

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.utils import get_assistant_message


def rubric_judge(rubric: str = "helpful", version: str = "1", model: object = None) -> Scorer:
    """Asks the judge for a score of the run's answer against ``rubric``; the prompt reads
    ``Answer: <answer> [rubric <rubric>]``, which the scripted judge matches on."""

    def prompt(ctx: StepContext) -> str:
        return f"Answer: {get_assistant_message(ctx.run.output) or ''} [rubric {rubric}]"

    return create_scorer(id="rubric-judge", judge=model, version=version).generate_score(
        PromptStep(description="score the answer against the rubric", create_prompt=prompt)
    )
