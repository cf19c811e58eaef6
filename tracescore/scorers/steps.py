"""A scorer's steps: what each sees (:class:`StepContext`), and the two kinds of step, a plain
function or a :class:`PromptStep` answered by an LLM judge.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pydantic import BaseModel

from tracescore.judge.protocol import Budget
from tracescore.scorers.scorer_run import ScorerRun

STEP_NAMES = ("preprocess", "analyze", "generate_score", "generate_reason")


@dataclass
class StepContext:
    """What a step sees: the run, the results of earlier steps and (for ``generate_reason``) the score.

    ``results`` keys: ``preprocess_step_result``, ``analyze_step_result``,
    ``generate_score_step_result`` — present once the step ran.
    """

    run: ScorerRun
    results: dict[str, Any] = field(default_factory=dict)
    score: float | None = None
    budget: Budget = field(default_factory=Budget)
    """What one request to the scorer's judge may hold (its model's window, less the answer)."""
    part: int | None = None
    """Which of a step's several requests is being checked (from 0), when it sent several."""
    memo: dict[str, Any] = field(default_factory=dict)
    """What a step's prompt worked out for its own check and combine (the parts' contents),
    shared by the copies of the context each part is checked with."""


@dataclass(frozen=True)
class PromptStep:
    """A step answered by an LLM judge instead of code.

    With ``output_schema`` the judge must answer JSON validating against it and the step result
    is the validated model instance; without it the answer is plain text. As ``generate_score``,
    a schema-less prompt step asks for ``{score: number}``.

    ``sketch`` gives a plausible answer of typical size (a schema instance, or the text), used to
    price the step before any judge is called: ``rescore --dry-run`` counts its output tokens and
    renders the later steps with it. Steps without one are priced with a generic answer.
    """

    description: str
    create_prompt: Callable[[StepContext], str | list[str]]
    output_schema: type[BaseModel] | None = None
    judge: Any = None
    instructions: str | None = None
    sketch: Callable[[StepContext], BaseModel | str] | None = None
    check: Callable[[StepContext, Any], str | None] | None = None
    """What the validated answer must also satisfy (as many verdicts as claims...): the problem
    in words, or None. The judge is sent one repair request naming it, then the step fails."""
    combine: Callable[[StepContext, list[Any]], Any] | None = None
    """For a step whose ``create_prompt`` may return several prompts (material too long for one
    request, judged part by part): merges their answers, in order, into the step's result."""


StepFunction: TypeAlias = Callable[[StepContext], Any | Awaitable[Any]]
Step: TypeAlias = StepFunction | PromptStep
