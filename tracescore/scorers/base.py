"""The scorer framework: Mastra's ``createScorer`` pipeline in Python.

A scorer is an immutable builder of up to four steps — ``preprocess``, ``analyze``,
``generate_score`` and ``generate_reason`` — run in that order over one run. A step is a plain
function (sync or async) of a :class:`StepContext`, or a :class:`PromptStep` answered by an LLM
judge. Keeping Mastra's step names and result keys lets a scorer ported from ``@mastra/evals``
keep its structure line for line, and lets stored results be compared with Mastra's.

``Scorer.run`` never raises because of a step: a pipeline scoring thousands of runs must store a
failure next to the run it concerns rather than stop, so errors become ``status="error"`` and
``not_scorable(...)`` becomes ``status="not_scorable"``.

This module holds the :class:`Scorer` (its builder and the loop that runs its steps) and the ways
to make one (:func:`create_scorer`, :func:`scorer`, :func:`measure`). What it reads is
:mod:`~tracescore.scorers.scorer_run`'s, the steps are :mod:`~tracescore.scorers.steps`', asking
the judge is :mod:`~tracescore.scorers.judging`'s, what a run records is
:mod:`~tracescore.scorers.results`' and the runs no scorer can judge are
:mod:`~tracescore.scorers.unscorable`'s.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import inspect
import math
import numbers
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from tracescore.judge.protocol import Budget
from tracescore.scorers.judging import ScorerJudge, fitted_prompts, joined_prompts
from tracescore.scorers.results import (
    JudgeCall,
    ScoreResult,
    ScoreStatus,
    StepTrace,
    constructed,
    error_message,
    step_trace,
)
from tracescore.scorers.scorer_run import Scorable, ScorerRun
from tracescore.scorers.steps import STEP_NAMES, PromptStep, Step, StepContext, StepFunction
from tracescore.scorers.unscorable import NotScorable, read_in_part, unscorable_reason
from tracescore.scorers.utils import run_input_text, run_output_text


class _StepFailed(Exception):
    def __init__(self, step: str, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.step, self.cause = step, cause


@dataclass(frozen=True)
class Scorer:
    """An immutable scorer: each builder method returns a new scorer with that step set."""

    id: str
    name: str
    description: str = ""
    version: str = "1"
    judge: Any = None
    instructions: str | None = None
    needs_answer: bool = False
    """The scorer judges the run's answer: a run that failed before answering, or a rebuilt run
    without any content, is ``not_scorable`` with the cause as reason, before any step runs
    (see :func:`unscorable_reason`)."""
    labeller: Callable[[dict[str, Any]], str | None] | None = None
    """Names the verdict from the step results (see :attr:`ScoreResult.label`), once scored."""
    trace_names: tuple[tuple[str, str], ...] = ()
    """``(step, name)``: a step recorded under a name of its own in the result's steps (what
    the result holds says more than ``analyze``); its ``*_step_result`` key keeps the step's."""
    _steps: tuple[tuple[str, Step], ...] = ()

    def preprocess(self, step: Step) -> Scorer:
        return self._with("preprocess", step)

    def analyze(self, step: Step, *, trace_name: str | None = None) -> Scorer:
        """Set the analyze step, recorded in the result's steps as ``trace_name`` if given."""
        scorer = self._with("analyze", step)
        if trace_name is None:
            return scorer
        names = (
            *(pair for pair in self.trace_names if pair[0] != "analyze"),
            ("analyze", trace_name),
        )
        return dataclasses.replace(scorer, trace_names=names)

    def labelled(self, labeller: Callable[[dict[str, Any]], str | None]) -> Scorer:
        """Name each scored run's verdict from its step results (stored as its label)."""
        return dataclasses.replace(self, labeller=labeller)

    def generate_score(self, step: Step) -> Scorer:
        return self._with("generate_score", step)

    def generate_reason(self, step: Step) -> Scorer:
        return self._with("generate_reason", step)

    @property
    def steps(self) -> tuple[tuple[str, Step], ...]:
        """``(name, step)`` pairs in run order (what cost estimates inspect)."""
        return self._steps

    @functools.cached_property
    def uses_judge(self) -> bool:
        """Whether a step prompts a judge; worked out once per scorer (asked on every run, and
        of every score row stored)."""
        return any(isinstance(step, PromptStep) for _, step in self._steps)

    def _with(self, name: str, step: Step) -> Scorer:
        if not (callable(step) or isinstance(step, PromptStep)):
            raise TypeError(
                f"{name} step must be a function or a PromptStep, got {type(step).__name__}"
            )
        steps = {**dict(self._steps), name: step}
        ordered = tuple((n, steps[n]) for n in STEP_NAMES if n in steps)
        return dataclasses.replace(self, _steps=ordered)

    async def run(self, run: Scorable) -> ScoreResult:
        """Score one run. Step errors become ``status="error"``; this never raises for them."""
        started = time.perf_counter()
        outcome = _Outcome()
        try:
            await self._execute(ScorerRun.of(run), outcome)
        except _StepFailed as failed:
            if isinstance(failed.cause, NotScorable):
                outcome.failed_step, outcome.score = failed.step, None
                outcome.status, outcome.reason = "not_scorable", failed.cause.reason
            elif failed.step == "generate_reason" and outcome.score is not None:
                # The score is finished and stands on its own: a reason that could not be
                # written must not discard it (the failure stays on the step's trace).
                outcome.reason = f"the reason could not be generated: {error_message(failed.cause)}"
            else:
                outcome.failed_step, outcome.score = failed.step, None
                outcome.status, outcome.error = "error", error_message(failed.cause)
        except Exception as exc:  # noqa: BLE001 - the run input itself was unusable
            outcome.status, outcome.error, outcome.score = "error", error_message(exc), None
        calls = [call for trace in outcome.steps for call in trace.judge_calls]
        results = outcome.results
        # Built once, unvalidated: every field was produced here with its declared type.
        return constructed(
            ScoreResult,
            {
                "scorer_id": self.id,
                "scorer_version": self.version,
                "status": outcome.status,
                "score": outcome.score,
                "reason": outcome.reason,
                "label": self.labeller(results)
                if self.labeller is not None and outcome.status == "ok"
                else None,
                "error": outcome.error,
                "failed_step": outcome.failed_step,
                "preprocess_step_result": results.get("preprocess_step_result"),
                "analyze_step_result": results.get("analyze_step_result"),
                "generate_score_step_result": results.get("generate_score_step_result"),
                "steps": outcome.steps,
                "judge_calls": calls,
                "input_tokens": sum(call.input_tokens for call in calls) if calls else 0,
                "output_tokens": sum(call.output_tokens for call in calls) if calls else 0,
                "cost_usd": float(sum(call.cost_usd for call in calls)) if calls else 0.0,
                "duration_ms": (time.perf_counter() - started) * 1000,
            },
        )

    def run_sync(self, run: Scorable) -> ScoreResult:
        """``run`` for synchronous callers, also from inside a running event loop.

        A scorer whose steps are all plain functions never suspends, so its coroutine is driven
        to completion directly: no event loop, no thread, a few microseconds of overhead.
        """
        if self.is_synchronous:
            coroutine = self.run(run)
            try:
                coroutine.send(None)
            except StopIteration as finished:
                result: ScoreResult = finished.value  # the coroutine's return value
                return result
            coroutine.close()
            raise RuntimeError(f"scorer {self.id!r}: a synchronous step returned an awaitable")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(run))
        # A loop is running in this thread: asyncio.run would refuse, so use a private thread.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.run(run)).result()

    @functools.cached_property
    def is_synchronous(self) -> bool:
        """True when no step is a prompt step or a coroutine function (worked out once per scorer:
        ``run_sync`` asks on every run)."""
        return not any(_may_suspend(step) for _, step in self._steps)

    @functools.cached_property
    def _has_score_step(self) -> bool:
        return any(name == "generate_score" for name, _ in self._steps)

    async def _execute(self, run: ScorerRun, outcome: _Outcome) -> None:
        if not self._has_score_step:
            raise ValueError(f"scorer {self.id!r} has no generate_score step")
        reason = read_in_part(run) or (unscorable_reason(run) if self.needs_answer else None)
        if reason:
            raise _StepFailed(self._steps[0][0], NotScorable(reason))
        results = outcome.results
        budget = self._budget()
        for name, step in self._steps:
            ctx = StepContext(
                run, dict(results), outcome.score if name == "generate_reason" else None, budget
            )
            prompt: str | None = None  # what a prompt step sent
            calls: list[JudgeCall] = []  # and its judge calls
            t0 = time.perf_counter()
            try:
                if isinstance(step, PromptStep):
                    asked = fitted_prompts(step, ctx, self.instructions)
                    if isinstance(asked, str):
                        prompt = asked
                        value = await self._judge.ask(name, step, ctx, prompt, calls)
                    else:
                        prompt = joined_prompts(asked)
                        value = await self._judge.ask_in_parts(name, step, ctx, asked, calls)
                else:
                    value = step(ctx)
                    if hasattr(value, "__await__"):
                        value = await value
                if name == "generate_score":
                    value = _as_score(value)
            except Exception as exc:
                shown = self._trace_name(name)
                outcome.steps.append(step_trace(shown, None, t0, prompt, calls, error_message(exc)))
                raise _StepFailed(name, exc) from exc
            outcome.steps.append(step_trace(self._trace_name(name), value, t0, prompt, calls, None))
            if name == "generate_reason":
                outcome.reason = None if value is None else str(value)
                continue
            results[f"{name}_step_result"] = value
            if name == "generate_score":
                outcome.score = value

    def _trace_name(self, step: str) -> str:
        return self._shown_names.get(step, step)

    @functools.cached_property
    def _shown_names(self) -> dict[str, str]:
        """:attr:`trace_names` as a dict (read for every step of every run)."""
        return dict(self.trace_names)

    def _budget(self) -> Budget:
        """The input budget of this scorer's judge (a judge without one gets the default)."""
        return self._judge.budget() if self.uses_judge else _DEFAULT_BUDGET

    @functools.cached_property
    def _judge(self) -> ScorerJudge:
        return ScorerJudge(self.id, self.version, self.judge, self.instructions)


@dataclass(slots=True)
class _Outcome:
    """A run in progress (plain attributes: pydantic assignment is too slow for the hot path)."""

    status: ScoreStatus = "ok"
    score: float | None = None
    reason: str | None = None
    error: str | None = None
    failed_step: str | None = None
    results: dict[str, Any] = field(default_factory=dict)
    steps: list[StepTrace] = field(default_factory=list)


def _may_suspend(step: Step) -> bool:
    return isinstance(step, PromptStep) or _is_async_callable(step)


def _is_async_callable(fn: Callable[..., object]) -> bool:
    return (
        inspect.iscoroutinefunction(fn)
        or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004 - a callable object's own method
    )


_DEFAULT_BUDGET = Budget()
"""The budget of a scorer without a judge (frozen: one instance serves every run)."""


def _as_score(value: Any) -> float:
    if type(value) is float and not math.isnan(value):
        return value  # the common case, without the ABC check below
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"generate_score must return a number, got {value!r}")
    score = float(value)
    if math.isnan(score):
        raise ValueError("generate_score returned NaN")
    return score


def create_scorer(
    *,
    id: str,
    description: str = "",
    judge: Any = None,
    version: str = "1",
    name: str | None = None,
    instructions: str | None = None,
    needs_answer: bool = False,
) -> Scorer:
    """Start a scorer (Mastra's ``createScorer``); add steps with the builder methods.

    ``needs_answer=True`` for a scorer that judges the run's answer: runs that failed before
    answering, and rebuilt runs without any content, are then ``not_scorable`` instead of
    scored as an empty answer.
    """
    if not id:
        raise ValueError("a scorer needs an id")
    return Scorer(
        id=id,
        name=name or id,
        description=description,
        version=version,
        judge=judge,
        instructions=instructions,
        needs_answer=needs_answer,
    )


ScoreValue: TypeAlias = float | tuple[float, str | None]


def scorer(
    *,
    id: str,
    description: str = "",
    version: str = "1",
    name: str | None = None,
    needs_answer: bool = False,
) -> Callable[[Callable[[ScorerRun], ScoreValue | Awaitable[ScoreValue]]], Scorer]:
    """Turn a function ``ScorerRun -> score`` (or ``(score, reason)``) into a scorer.

    The function's return value is the analyze step result ``{"score", "reason"}``, so stored
    results keep the reason even when the score alone is read. ``needs_answer`` as in
    :func:`create_scorer`.
    """

    def decorate(fn: Callable[[ScorerRun], ScoreValue | Awaitable[ScoreValue]]) -> Scorer:
        def split(value: ScoreValue) -> dict[str, Any]:
            score, reason = value if isinstance(value, tuple) else (value, None)
            return {"score": score, "reason": reason}

        analyze: StepFunction
        if _is_async_callable(fn):  # a callable object's async __call__ too, as _may_suspend

            async def analyze(ctx: StepContext) -> dict[str, Any]:
                value = fn(ctx.run)
                return split(await value if inspect.isawaitable(value) else value)

        else:

            def analyze(ctx: StepContext) -> dict[str, Any]:
                value = fn(ctx.run)
                if inspect.isawaitable(value):
                    raise TypeError(
                        f"scorer {id!r}: a plain function returned an awaitable; "
                        "declare it 'async def'"
                    )
                return split(value)

        built = create_scorer(
            id=id,
            description=description or (fn.__doc__ or "").strip(),
            version=version,
            name=name,
            needs_answer=needs_answer,
        )
        built = built.analyze(analyze).generate_score(
            lambda ctx: ctx.results["analyze_step_result"]["score"]
        )
        return built.generate_reason(lambda ctx: ctx.results["analyze_step_result"]["reason"])

    return decorate


def measure(
    *, id: str, description: str = "", version: str = "1", name: str | None = None
) -> Callable[[Callable[[str, str], ScoreValue]], Scorer]:
    """Turn a metric ``(input_text, output_text) -> score`` into a scorer.

    The texts are the ones all of Mastra's code scorers compare: the run's input messages and
    its output messages, each joined with ``", "`` (see :mod:`tracescore.scorers.utils`). A
    metric reads the answer, so runs that failed before answering are not scorable.
    """

    def decorate(fn: Callable[[str, str], ScoreValue]) -> Scorer:
        wrapped = scorer(
            id=id,
            description=description or (fn.__doc__ or "").strip(),
            version=version,
            name=name,
            needs_answer=True,
        )
        return wrapped(lambda run: fn(run_input_text(run.input), run_output_text(run.output)))

    return decorate
