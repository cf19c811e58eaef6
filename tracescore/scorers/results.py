"""What scoring a run records: the verdict (:class:`ScoreResult`), each step's trace and each judge
call with what it cost.
"""

from __future__ import annotations

import time
from typing import Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, Field


class JudgeCall(BaseModel):
    step: str
    prompt: str
    output: str = ""
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    attempts: int = 1
    duration_ms: float = 0.0
    cached: bool = False
    repairs: int = 0
    """Repair requests sent within the call (an invalid answer, a wrong number of verdicts)."""
    error: str | None = None
    """Why the call failed; a failed call still counts what it spent."""


class StepTrace(BaseModel):
    name: str
    result: Any = None
    duration_ms: float = 0.0
    prompt: str | None = None
    judge_calls: list[JudgeCall] = Field(default_factory=list)
    error: str | None = None


ScoreStatus: TypeAlias = Literal["ok", "not_scorable", "error"]


class ScoreResult(BaseModel):
    """One scorer's verdict on one run, with every step's result and the judge telemetry."""

    scorer_id: str
    scorer_version: str
    status: ScoreStatus
    score: float | None = None
    reason: str | None = None
    label: str | None = None
    """The scorer's own name for the verdict (``consistency``: the checks that failed), stored
    in place of the binding's ``pass``/``fail``; None for most scorers."""
    error: str | None = None
    failed_step: str | None = None  # the step that raised the error or declared not scorable
    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    generate_score_step_result: Any = None
    steps: list[StepTrace] = Field(default_factory=list)
    judge_calls: list[JudgeCall] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    duration_ms: float = 0.0


def step_trace(
    name: str,
    result: Any,
    started: float,
    prompt: str | None,
    calls: list[JudgeCall],
    error: str | None,
) -> StepTrace:
    duration_ms = (time.perf_counter() - started) * 1000
    return constructed(
        StepTrace,
        {
            "name": name,
            "result": result,
            "duration_ms": duration_ms,
            "prompt": prompt,
            "judge_calls": calls,
            "error": error,
        },
    )


Model = TypeVar("Model", bound=BaseModel)
_new, _set_attribute = object.__new__, object.__setattr__


def constructed(model: type[Model], values: dict[str, Any]) -> Model:
    """``model.model_construct(**values)`` given every field, in declaration order, for a model
    without aliases, extra fields, private attributes, ``model_post_init`` or ``__new__``: the
    same instance (its ``__dict__``, fields set, no extra, no private state), built in a fifth of
    the time, as each scored run builds one ``ScoreResult`` and a ``StepTrace`` per step.
    ``tests/scorers/test_scorer_framework.py`` checks it against ``model_construct``.
    """
    instance = _new(model)
    _set_attribute(instance, "__dict__", values)
    _set_attribute(instance, "__pydantic_fields_set__", set(values))
    _set_attribute(instance, "__pydantic_extra__", None)
    _set_attribute(instance, "__pydantic_private__", None)
    return instance


def error_message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
