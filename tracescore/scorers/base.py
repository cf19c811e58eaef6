"""The scorer framework: Mastra's ``createScorer`` pipeline in Python.

A scorer is an immutable builder of up to four steps — ``preprocess``, ``analyze``,
``generate_score`` and ``generate_reason`` — run in that order over one run. A step is a plain
function (sync or async) of a :class:`StepContext`, or a :class:`PromptStep` answered by an LLM
judge. Keeping Mastra's step names and result keys lets a scorer ported from ``@mastra/evals``
keep its structure line for line, and lets stored results be compared with Mastra's.

``Scorer.run`` never raises because of a step: a pipeline scoring thousands of runs must store a
failure next to the run it concerns rather than stop, so errors become ``status="error"`` and
``not_scorable(...)`` becomes ``status="not_scorable"``.
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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, TypeAlias, TypeVar

from pydantic import BaseModel, Field, ValidationError

from tracescore.extract.content import NO_CONTENT_REASON, has_content
from tracescore.extract.conversation import Conversation
from tracescore.extract.model import AgentRun, ToolDefinition
from tracescore.judge.protocol import Budget, Judge, JudgeRequest, JudgeResponse
from tracescore.outcomes import FAILED_RUN_REASON
from tracescore.scorers.material import fit_request
from tracescore.scorers.utils import (
    get_assistant_message,
    make_test_message,
    run_input_text,
    run_output_text,
)

STEP_NAMES = ("preprocess", "analyze", "generate_score", "generate_reason")


@dataclass
class ScorerRun:
    """What a scorer judges, in Mastra's run shape plus the typed run when there is one.

    ``input`` / ``output`` are the plain dicts Mastra's utils walk (``ScorerRunInputForAgent`` and
    a ``MastraDBMessage`` list), so every ported algorithm reads exactly what Mastra reads;
    ``agent_run`` keeps the typed model for scorers that want more (timings, usage, spans).
    """

    input: Any = None
    output: Any = None
    ground_truth: Any = None
    agent_run: AgentRun | None = None
    conversation: Conversation | None = None
    """The typed turns when a conversation is scored; ``input`` / ``output`` then hold its user
    messages and its answers, one per turn, so run scorers read a conversation as one long run."""
    context: list[str] = field(default_factory=list)
    tools: list[ToolDefinition] = field(default_factory=list)
    run_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    error: str | None = None
    """Why the run itself failed (its agent span ended in error), or None when it did not.

    Kept apart from the output because a failed run's output is often empty or partial: scorers
    that read the answer must not mistake "no answer" for a poor one (see :attr:`Scorer.needs_answer`).
    """

    @functools.cached_property
    def empty(self) -> bool:
        """A rebuilt run that carries no content at all (see :func:`without_content`); worked
        out once, as every binding scoring the run asks."""
        return self.agent_run is not None and not has_content(self.agent_run)

    @classmethod
    def of(cls, run: Scorable) -> ScorerRun:
        """Accept an extracted ``AgentRun``, a ``Conversation``, a Mastra-shaped run dict, or a
        ``ScorerRun``.

        A dict run uses Mastra's keys (``input``, ``output``, ``groundTruth``, ``runId``,
        ``traceId``, ``spanId``) or their snake_case forms, plus optional ``context`` (strings),
        ``tools`` (tool definitions) and ``error`` (why the run failed, when it did).
        """
        if isinstance(run, ScorerRun):
            return run
        if isinstance(run, Conversation):
            return _conversation_run(cls, run)
        if isinstance(run, AgentRun):
            return cls(
                input=run.mastra_input(),
                output=run.mastra_output(),
                ground_truth=run.ground_truth,
                agent_run=run,
                context=[doc.content for doc in run.context],
                tools=list(run.tools),
                run_id=run.span_id,
                trace_id=run.trace_id,
                span_id=run.span_id,
                error=(run.error or "the run ended in error") if run.status == "error" else None,
            )
        if isinstance(run, Mapping):
            context, tools = run.get("context"), run.get("tools")
            return cls(
                input=run.get("input"),
                output=run.get("output"),
                ground_truth=run["groundTruth"] if "groundTruth" in run else run.get("ground_truth"),
                context=[str(text) for text in context] if context else [],
                tools=[
                    tool if isinstance(tool, ToolDefinition) else ToolDefinition.model_validate(tool)
                    for tool in tools
                ] if tools else [],
                run_id=run["runId"] if "runId" in run else run.get("run_id"),
                trace_id=run["traceId"] if "traceId" in run else run.get("trace_id"),
                span_id=run["spanId"] if "spanId" in run else run.get("span_id"),
                error=str(run["error"]) if run.get("error") else None,
            )
        raise TypeError(f"cannot score a {type(run).__name__}: expected AgentRun, Conversation, dict or ScorerRun")


Scorable: TypeAlias = "AgentRun | Conversation | Mapping[str, Any] | ScorerRun"
"""What ``Scorer.run`` accepts."""


def _conversation_run(cls: type[ScorerRun], conversation: Conversation) -> ScorerRun:
    """A conversation in Mastra's run shape: every turn's user message as input, every answer as
    output (what Mastra's code scorers would compare for a whole thread), the system prompt of
    the latest turn that had one, and the last turn's ids: a conversation's score belongs to
    where it ended."""
    turns = conversation.turns
    user = [make_test_message(t.user, "user", id=f"{t.span_id}-user") for t in turns if t.user]
    answers = [
        make_test_message(t.answer, "assistant", id=f"{t.span_id}-answer") for t in turns if t.answer
    ]
    system = next(
        (t.run.input.system_messages for t in reversed(turns) if t.run and t.run.input.system_messages),
        [],
    )
    last = conversation.last_turn
    return cls(
        input={
            "inputMessages": user,
            "rememberedMessages": [],
            "systemMessages": [m.model_dump(mode="json", by_alias=True) for m in system],
            "taggedSystemMessages": {},
        },
        output=answers,
        conversation=conversation,
        run_id=conversation.id,
        trace_id=last.trace_id if last else None,
        span_id=last.span_id if last else None,
    )


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


class NotScorable(Exception):
    """Raised by a step (via :func:`not_scorable`) when the run cannot be judged by this scorer."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def not_scorable(reason: str) -> NoReturn:
    """Stop the scorer: the run is not scorable (Mastra's ``notScorable(reason)``)."""
    raise NotScorable(reason)


def failed_without_answer(run: ScorerRun) -> str | None:
    """The not-scorable reason for a run that failed before giving an answer, else None.

    A run whose agent ended in error with no final answer has nothing an answer-reading scorer
    could judge: scoring its empty output would feed quality charts with numbers that describe
    nothing (tone 1.0, coverage 0). A failed run that still answered is judged as usual.
    """
    if run.error is None or (get_assistant_message(run.output) or "").strip():
        return None
    return f"{FAILED_RUN_REASON}{run.error}"


def without_content(run: ScorerRun) -> str | None:
    """The not-scorable reason for a rebuilt run that carries no content at all, else None.

    A run whose spans held only names and ids (content capture off) has no input, answer or
    tool arguments to judge: every code scorer would compare two empty texts and give 1.0, a
    judge would be paid to read nothing. Only rebuilt runs are checked: a run given as a dict
    (Mastra's shape, a dataset row) is scored as given, empty strings included.
    """
    return NO_CONTENT_REASON if run.empty else None


def unscorable_reason(run: ScorerRun) -> str | None:
    """Why an answer-reading scorer cannot judge the run before any step runs: it failed
    before answering (:func:`failed_without_answer`) or carries no content
    (:func:`without_content`); None when it can be judged."""
    if run.error is not None and (reason := failed_without_answer(run)):
        return reason
    return without_content(run)


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


StepFunction: TypeAlias = Callable[[StepContext], Any | Awaitable[Any]]
Step: TypeAlias = StepFunction | PromptStep


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
    _steps: tuple[tuple[str, Step], ...] = ()

    def preprocess(self, step: Step) -> Scorer:
        return self._with("preprocess", step)

    def analyze(self, step: Step) -> Scorer:
        return self._with("analyze", step)

    def generate_score(self, step: Step) -> Scorer:
        return self._with("generate_score", step)

    def generate_reason(self, step: Step) -> Scorer:
        return self._with("generate_reason", step)

    @property
    def steps(self) -> tuple[tuple[str, Step], ...]:
        """``(name, step)`` pairs in run order (what cost estimates inspect)."""
        return self._steps

    @property
    def step_names(self) -> list[str]:
        return [name for name, _ in self._steps]

    @property
    def uses_judge(self) -> bool:
        return any(isinstance(step, PromptStep) for _, step in self._steps)

    def _with(self, name: str, step: Step) -> Scorer:
        if not (callable(step) or isinstance(step, PromptStep)):
            raise TypeError(f"{name} step must be a function or a PromptStep, got {type(step).__name__}")
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
                outcome.reason = f"the reason could not be generated: {_message(failed.cause)}"
            else:
                outcome.failed_step, outcome.score = failed.step, None
                outcome.status, outcome.error = "error", _message(failed.cause)
        except Exception as exc:  # noqa: BLE001 - the run input itself was unusable
            outcome.status, outcome.error, outcome.score = "error", _message(exc), None
        calls = [call for trace in outcome.steps for call in trace.judge_calls]
        results = outcome.results
        # Built once, unvalidated: every field was produced here with its declared type.
        return _constructed(ScoreResult, {
            "scorer_id": self.id,
            "scorer_version": self.version,
            "status": outcome.status,
            "score": outcome.score,
            "reason": outcome.reason,
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
        })

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
                return finished.value
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
        if self.needs_answer and (reason := unscorable_reason(run)):
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
                        value = await self._ask_judge(name, step, ctx, prompt, calls)
                    else:
                        prompt = _joined(asked)
                        value = await self._ask_in_parts(name, step, ctx, asked, calls)
                else:
                    value = step(ctx)
                    if hasattr(value, "__await__"):
                        value = await value
                if name == "generate_score":
                    value = _as_score(value)
            except Exception as exc:
                outcome.steps.append(_trace(name, None, t0, prompt, calls, _message(exc)))
                raise _StepFailed(name, exc) from exc
            outcome.steps.append(_trace(name, value, t0, prompt, calls, None))
            if name == "generate_reason":
                outcome.reason = None if value is None else str(value)
                continue
            results[f"{name}_step_result"] = value
            if name == "generate_score":
                outcome.score = value

    def _budget(self) -> Budget:
        """The input budget of this scorer's judge (a judge without one gets the default)."""
        if not self.uses_judge or self.judge is None:
            return Budget()
        budget = getattr(resolve_judge(self.judge), "budget", None)
        return budget if isinstance(budget, Budget) else Budget()

    async def _ask_in_parts(
        self, name: str, step: PromptStep, ctx: StepContext, prompts: list[str], calls: list[JudgeCall]
    ) -> Any:
        """Ask every part's prompt (concurrently: the judge paces them) and combine the answers."""
        if step.combine is None:
            raise TypeError(f"scorer {self.id!r}: step {name} returned several prompts but has no combine")
        answers = await asyncio.gather(*(
            self._ask_judge(name, step, dataclasses.replace(ctx, part=number), prompt, calls)
            for number, prompt in enumerate(prompts)
        ))
        return step.combine(ctx, list(answers))

    async def _ask_judge(
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
            scorer_id=self.id,
            scorer_version=self.version,
            step=name,
            check=check,
        )
        try:
            response = await judge.complete(request)
        except Exception as exc:
            spent = getattr(exc, "spent", None)
            if isinstance(spent, JudgeResponse):  # a failed call is paid for all the same
                calls.append(_judge_call(name, prompt, spent, error=_message(exc)))
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
            raise ValueError(f"judge {response.model} answered the {name} step with an answer "
                             f"that does not fit the task: {problem}")
        if name == "generate_score" and step.output_schema is None:
            return output.score
        return output


def _joined(prompts: list[str]) -> str:
    """Several requests' prompts as one step trace's text."""
    return "\n\n".join(
        f"--- request {number} of {len(prompts)} ---\n{prompt}" for number, prompt in enumerate(prompts, 1)
    )


_CALL_FIGURES = ("model", "input_tokens", "output_tokens", "cost_usd", "attempts", "duration_ms",
                 "cached", "repairs")
"""What a ``JudgeCall`` copies from the judge's response as it is."""


def _judge_call(step: str, prompt: str, response: JudgeResponse, error: str | None = None) -> JudgeCall:
    figures = {name: getattr(response, name) for name in _CALL_FIGURES}
    return JudgeCall(step=step, prompt=prompt, output=response.text, error=error, **figures)


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


def _trace(
    name: str, result: Any, started: float, prompt: str | None, calls: list[JudgeCall], error: str | None
) -> StepTrace:
    duration_ms = (time.perf_counter() - started) * 1000
    return _constructed(StepTrace, {
        "name": name, "result": result, "duration_ms": duration_ms, "prompt": prompt, "judge_calls": calls,
        "error": error,
    })


_Model = TypeVar("_Model", bound=BaseModel)
_new, _set_attribute = object.__new__, object.__setattr__


def _constructed(model: type[_Model], values: dict[str, Any]) -> _Model:
    """``model.model_construct(**values)`` given every field, in declaration order, for a model
    without aliases, extra fields, private attributes, ``model_post_init`` or ``__new__``: the
    same instance (its ``__dict__``, fields set, no extra, no private state), built in a fifth of
    the time, as each scored run builds one ``ScoreResult`` and a ``StepTrace`` per step.
    ``tests/test_scorer_framework.py`` checks it against ``model_construct``.
    """
    instance = _new(model)
    _set_attribute(instance, "__dict__", values)
    _set_attribute(instance, "__pydantic_fields_set__", set(values))
    _set_attribute(instance, "__pydantic_extra__", None)
    _set_attribute(instance, "__pydantic_private__", None)
    return instance


def _may_suspend(step: Step) -> bool:
    return isinstance(step, PromptStep) or _is_async_callable(step)


def _is_async_callable(fn: Callable[..., object]) -> bool:
    return (
        inspect.iscoroutinefunction(fn)
        or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004 - a callable object's own method
    )


def _as_score(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"generate_score must return a number, got {value!r}")
    score = float(value)
    if math.isnan(score):
        raise ValueError("generate_score returned NaN")
    return score


def _message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


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
                    raise TypeError(f"scorer {id!r}: a plain function returned an awaitable; "
                                    "declare it 'async def'")
                return split(value)

        built = create_scorer(id=id, description=description or (fn.__doc__ or "").strip(),
                              version=version, name=name, needs_answer=needs_answer)
        built = built.analyze(analyze).generate_score(lambda ctx: ctx.results["analyze_step_result"]["score"])
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
        wrapped = scorer(id=id, description=description or (fn.__doc__ or "").strip(),
                         version=version, name=name, needs_answer=True)
        return wrapped(lambda run: fn(run_input_text(run.input), run_output_text(run.output)))

    return decorate
