"""How a scorer's prompt steps ask its judge: the prompts fitted to the judge's budget, the request,
the answer validated against the step's schema and check, and the call recorded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from tracescore.judge.protocol import Budget, Judge, JudgeRequest, JudgeResponse
from tracescore.scorers.material import fit_request
from tracescore.scorers.results import JudgeCall, error_message
from tracescore.scorers.steps import PromptStep, StepContext


def fitted_prompts(step: PromptStep, ctx: StepContext, instructions: str | None) -> str | list[str]:
    """What ``step`` sends its judge: its prompt(s), each cut to the judge's budget when it would
    not fit (the run's longest values shortened fairly, each cut marked; see
    :mod:`tracescore.scorers.material`)."""
    asked = step.create_prompt(ctx)
    told = step.instructions if step.instructions is not None else instructions
    if isinstance(asked, str):
        return fit_request(asked, told, ctx.budget)
    return [fit_request(prompt, told, ctx.budget) for prompt in asked]


def resolve_judge(spec: Any) -> Judge:
    """Turn a judge spec (a ``Judge``, a model string or a judge config) into a ``Judge``.

    ``tracescore.judge`` is imported only here, on first use, because the LLM client stack is
    slow to import and code-only scorers never need it.
    """
    if spec is None:
        raise ValueError("this step needs an LLM judge but none was configured (pass judge=...)")
    if isinstance(spec, Judge):
        return spec
    try:
        from tracescore.judge import get_judge
    except ImportError as exc:
        raise RuntimeError(
            f"cannot build a judge from {spec!r}: tracescore.judge.get_judge is not available ({exc})"
        ) from exc
    return get_judge(spec)


class ScoreOutput(BaseModel):
    """What a prompt ``generate_score`` step asks the judge for."""

    score: float


@dataclass(frozen=True)
class ScorerJudge:
    """A scorer's side of its judge: what every request of its prompt steps carries (the
    scorer's id, version and instructions), and the judge a step without its own asks."""

    scorer_id: str
    scorer_version: str
    judge: Any = None
    instructions: str | None = None

    def budget(self) -> Budget:
        """The input budget of the scorer's judge (a judge without one gets the default)."""
        if self.judge is None:
            return Budget()
        budget = getattr(resolve_judge(self.judge), "budget", None)
        return budget if isinstance(budget, Budget) else Budget()

    async def ask_in_parts(
        self,
        name: str,
        step: PromptStep,
        ctx: StepContext,
        prompts: list[str],
        calls: list[JudgeCall],
    ) -> Any:
        """Ask every part's prompt (concurrently: the judge paces them) and combine the answers."""
        if step.combine is None:
            raise TypeError(
                f"scorer {self.scorer_id!r}: step {name} returned several prompts but has no combine"
            )
        answers = await asyncio.gather(
            *(
                self.ask(name, step, dataclasses.replace(ctx, part=number), prompt, calls)
                for number, prompt in enumerate(prompts)
            )
        )
        return step.combine(ctx, list(answers))

    async def ask(
        self, name: str, step: PromptStep, ctx: StepContext, prompt: str, calls: list[JudgeCall]
    ) -> Any:
        """A prompt step's answer: the judge's validated output (its call appended to ``calls``,
        also when it failed)."""
        schema = step.output_schema
        check = None if step.check is None else functools.partial(step.check, ctx)
        if schema is None and name == "generate_score":
            schema = ScoreOutput
        judge = resolve_judge(step.judge if step.judge is not None else self.judge)
        request = JudgeRequest(
            prompt=prompt,
            instructions=step.instructions if step.instructions is not None else self.instructions,
            schema=schema,
            scorer_id=self.scorer_id,
            scorer_version=self.scorer_version,
            step=name,
            check=check,
        )
        try:
            response = await judge.complete(request)
        except Exception as exc:
            spent = getattr(exc, "spent", None)
            if isinstance(spent, JudgeResponse):  # a failed call is paid for all the same
                calls.append(_judge_call(name, prompt, spent, error=error_message(exc)))
            raise
        calls.append(_judge_call(name, prompt, response))
        output = response.output
        if schema is not None and not isinstance(output, schema):
            try:
                output = schema.model_validate(output)
            except ValidationError as exc:
                raise ValueError(f"judge answer does not match {schema.__name__}: {exc}") from exc
        if check is not None and (problem := check(output)) is not None:
            # A judge that does not repair (a custom one) or a served verdict: still refused.
            raise ValueError(
                f"judge {response.model} answered the {name} step with an answer "
                f"that does not fit the task: {problem}"
            )
        if name == "generate_score" and step.output_schema is None:
            return output.score
        return output


def joined_prompts(prompts: list[str]) -> str:
    """Several requests' prompts as one step trace's text."""
    return "\n\n".join(
        f"--- request {number} of {len(prompts)} ---\n{prompt}"
        for number, prompt in enumerate(prompts, 1)
    )


_CALL_FIGURES = (
    "model",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "attempts",
    "duration_ms",
    "cached",
    "repairs",
)
"""What a ``JudgeCall`` copies from the judge's response as it is."""


def _judge_call(
    step: str, prompt: str, response: JudgeResponse, error: str | None = None
) -> JudgeCall:
    figures = {name: getattr(response, name) for name in _CALL_FIGURES}
    return JudgeCall(step=step, prompt=prompt, output=response.text, error=error, **figures)
