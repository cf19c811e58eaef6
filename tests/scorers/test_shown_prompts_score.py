"""``tracescore scorers --show``'s prompts: the reason prompt sees the score a bare score step
would give (mypy found the sketched answer object passed where the score goes)."""

from tracescore.scorers.base import create_scorer
from tracescore.scorers.judging import ScoreOutput
from tracescore.scorers.llm.shown_prompts import shown_prompts
from tracescore.scorers.steps import PromptStep, StepContext

RUN = {"input": "What is the capital of France?", "output": "Paris."}


def _reason_prompt(ctx: StepContext) -> str:
    return f"Explain why the answer scored {ctx.score}."


def test_the_reason_prompt_shows_the_sketched_score_as_a_number() -> None:
    judged = (
        create_scorer(id="judged-correctness", instructions="You grade answers.")
        .generate_score(
            PromptStep(
                description="grade the answer",
                create_prompt=lambda ctx: f"Grade: {ctx.run.output}",
                sketch=lambda ctx: ScoreOutput(score=0.8),
            )
        )
        .generate_reason(PromptStep(description="explain", create_prompt=_reason_prompt))
    )

    score_prompt, reason_prompt = shown_prompts(judged, RUN)

    assert (score_prompt.step, score_prompt.schema) == ("generate_score", "ScoreOutput")
    assert reason_prompt.messages[-1]["content"].endswith("Explain why the answer scored 0.8.")


def test_a_score_step_without_a_sketch_leaves_the_score_unknown() -> None:
    judged = (
        create_scorer(id="judged-correctness")
        .generate_score(PromptStep(description="grade", create_prompt=lambda ctx: "Grade it"))
        .generate_reason(PromptStep(description="explain", create_prompt=_reason_prompt))
    )

    reason_prompt = shown_prompts(judged, RUN)[1]

    assert reason_prompt.messages[-1]["content"].endswith("Explain why the answer scored None.")
