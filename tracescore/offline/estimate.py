"""What re-scoring runs with an LLM scorer will cost, worked out before any judge is called.

Each sampled run goes through the scorer with a *pricing judge* that counts the tokens of every
request exactly as the judge client would send it (instructions, prompt and schema instruction)
and answers it with a *typical answer*, whose tokens (the text the client would read back: JSON
for a schema, as judges write it) are the call's output. Code steps therefore run for real and
later prompt steps render with realistic earlier answers (the claims a verdict step checks, the
verdicts a reason step explains), so their input tokens are counted on realistic prompts too.

The typical answer to a request is, in order of preference:

1. an answer the store's verdict table holds for this very prompt: under this judge model and
   scorer version the verdict cache would serve it, so the call is free; under another model or
   version the scorer was judged with (the latest :data:`PAST_JUDGES`), it is what a judge said
   to the same prompt, priced as a paid call at that answer's own output tokens;
2. the step's :attr:`~tracescore.scorers.steps.PromptStep.sketch`, a plausible answer of typical
   size that every prebuilt LLM scorer provides (see :mod:`tracescore.scorers.llm.typical_answers`);
3. for a step without a sketch (a custom scorer), a generic instance of its schema: every field
   filled, :data:`TYPICAL_ITEMS` items per list, one typical sentence per string, 0.5 per number,
   the first allowed value per literal; a text step without a sketch answers
   :data:`DEFAULT_TEXT_SENTENCES` typical sentences.

A paid call answered by 2 or 3 takes its output tokens from the store when the scorer's step has
paid judge calls there (any version or model): the mean of the step's latest
:data:`HISTORY_CALLS`, from the verdict table or else from the score rows' judge calls (judges
with ``cache: false``). A step without history keeps the typical answer's count. The estimate's
``method`` says how many of the sampled paid calls were priced which way.

A prompt step that never rendered because a step failed on the typical answers is counted at the
mean size of the run's rendered prompts and answers. Requests the judge would answer from its
verdict cache (repeated within the backfill, or already in the verdict table) count as free, as
they are: the runs priced are distinct ones (copies of a run ask the same requests) and their
cost is extrapolated to the distinct runs, with every copy paid only by a judge without a cache
(see :mod:`tracescore.offline.sample`). Tokens are priced with litellm's price map for the judge's model; a model litellm has
no price for (self-hosted) costs nothing.

The pricing judge, the typical answers and the history lookup are one computation read top to
bottom (it runs past 400 lines); the sample of distinct runs is :mod:`tracescore.offline.sample`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, Literal

from pydantic import BaseModel

from tracescore.extract.model import AgentRun
from tracescore.judge.protocol import Budget, JudgeRequest, JudgeResponse
from tracescore.pipeline.bindings import CompiledBinding
from tracescore.scorers.base import Scorer
from tracescore.scorers.llm.typical_answers import typical_text
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.store import Database, connect
from tracescore.store.scores import paid_steps

TYPICAL_ITEMS = 3
"""Items per list in the generic answer of a schema step without a sketch."""
DEFAULT_TEXT_SENTENCES = 3
"""Sentences in the answer of a text step without a sketch (a short explanation)."""
SAMPLE_RUNS = 100
"""Runs per binding whose prompts are rendered (distinct ones: see
:mod:`tracescore.offline.sample`); the mean is extrapolated to all of them."""
HISTORY_CALLS = 500
"""Latest paid calls per step whose output tokens are averaged."""
PAST_JUDGES = 5
"""Latest (scorer version, judge model) pairs whose answers to the same prompts are looked up."""

AnswerSource = Literal["same request", "sketch", "generic"]


@dataclass(frozen=True)
class CostEstimate:
    binding: str
    scorer: str
    runs: int
    cost_usd: float
    calls_per_run: float
    input_tokens_per_run: float
    output_tokens_per_call: float
    method: str
    """How the figures were obtained, shown next to them."""


@dataclass(frozen=True)
class PastAnswer:
    text: str
    output_tokens: int
    exact: bool
    """Given by this judge model to this scorer version: the verdict cache serves it."""


@dataclass(frozen=True)
class PastAnswers:
    """Answers the verdict table holds for a request's prompt: given by ``model`` to the
    request's scorer version (the verdict cache serves them), else by ``judges`` (other
    ``(scorer version, model)`` pairs the scorer was judged with, latest first)."""

    engine: Database
    model: str
    judges: tuple[tuple[str, str], ...]
    settings: Any = None
    """The judge's ``JudgeConfig`` when known: verdict keys hold its answer settings too."""

    @classmethod
    def of(cls, engine: Database, scorer_id: str, model: str, settings: Any = None) -> PastAnswers:
        from tracescore.store.judge_cache import judged_with

        return cls(engine, model, tuple(judged_with(engine, scorer_id, PAST_JUDGES + 1)), settings)

    def find(self, request: JudgeRequest) -> PastAnswer | None:
        from tracescore.judge.cache import verdict_key
        from tracescore.store.judge_cache import stored_answers

        exact = verdict_key(request, _keyed(self.settings, self.model))
        others = [
            verdict_key(
                dataclasses.replace(request, scorer_version=version), _keyed(self.settings, model)
            )
            for version, model in self.judges
            if (version, model) != (request.scorer_version, self.model)
        ][:PAST_JUDGES]
        order = [exact, *others]
        found = stored_answers(self.engine, order)
        if not found:
            return None
        best = min(found, key=lambda row: order.index(row.key))
        return PastAnswer(best.text, best.output_tokens or 0, exact=best.key == exact)


@dataclass(frozen=True)
class PricedCall:
    step: str
    input_tokens: int
    output_tokens: int
    """Tokens of the answer the pricing judge gave."""
    source: AnswerSource
    cached: bool
    """The verdict cache would serve it: asked before in this estimate, or stored."""


@dataclass
class PricingJudge:
    """A ``Judge`` that pays nothing: it counts the tokens of requests and of typical answers.

    ``past(request)`` finds an answer the store holds for the request's prompt. ``context`` and
    ``sketch`` are the step context and sketch of the prompt step being answered, set by
    :func:`with_pricing_judge` as each prompt renders. With ``caches`` (the judge keeps a verdict
    cache) a request asked before in this estimate, or stored for this model and version, is free.
    """

    model: str
    past: Callable[[JudgeRequest], PastAnswer | None] | None = None
    caches: bool = True
    settings: Any = None
    """The priced judge's ``JudgeConfig`` when known (its verdict cache keys hold it)."""

    @functools.cached_property
    def budget(self) -> Budget:
        """The priced judge's request budget, so a long context is priced in the parts the
        real judge would be sent (the default budget without settings)."""
        if self.settings is None:
            return Budget()
        from tracescore.judge.client import LiteLLMJudge

        return LiteLLMJudge(self.settings.model_copy(update={"cache": False})).budget

    context: StepContext | None = None
    sketch: Callable[[StepContext], BaseModel | str] | None = None
    calls: list[PricedCall] = field(default_factory=list)
    """The requests since the last ``calls.clear()``."""
    _seen: set[str] = field(default_factory=set)

    async def complete(self, request: JudgeRequest) -> JudgeResponse:
        from tracescore.judge.cache import verdict_key
        from tracescore.judge.structured import parse_output, request_messages

        messages = request_messages(request.prompt, request.instructions, request.schema)
        tokens = _count(self.model, messages=messages)
        key = verdict_key(request, _keyed(self.settings, self.model))
        past = self.past(request) if self.past is not None else None
        try:
            output = parse_output(past.text, request.schema) if past is not None else None
        except ValueError:  # the real judge would not use it either
            past = output = None
        source: AnswerSource
        if past is not None:
            text, source = past.text, "same request"
            answer_tokens = past.output_tokens or _count(self.model, text=text)
        else:
            output, source = self._typical_answer(request)
            text = answer_text(output)
            answer_tokens = _count(self.model, text=text)
        cached = self.caches and (key in self._seen or (past is not None and past.exact))
        self.calls.append(PricedCall(request.step, tokens, answer_tokens, source, cached))
        self._seen.add(key)
        return JudgeResponse(output=output, text=text, model=self.model, input_tokens=tokens)

    def _typical_answer(self, request: JudgeRequest) -> tuple[BaseModel | str, AnswerSource]:
        if self.sketch is not None and self.context is not None:
            return self.sketch(self.context), "sketch"
        if request.schema is not None:
            return typical(request.schema), "generic"
        return typical_text(DEFAULT_TEXT_SENTENCES), "generic"


def estimate_cost(
    binding: CompiledBinding,
    runs: Sequence[AgentRun],
    total_runs: int,
    engine: Database | None,
    *,
    copies: Sequence[int] | None = None,
    distinct: int | None = None,
) -> CostEstimate:
    """The judge cost of scoring ``total_runs`` runs, of ``distinct`` contents (``total_runs``
    by default), of which ``runs`` are a uniform sample; ``copies[i]`` runs to score have the
    content of ``runs[i]`` (1 each by default).

    A judge with a verdict cache pays for a content once (its copies ask the same requests), one
    without pays for every copy; either way the sample's mean is extrapolated to the distinct
    contents, not to the runs (see :mod:`tracescore.offline.sample`).
    """
    scorer = binding.scorer
    prompt_steps = {name: step for name, step in scorer.steps if isinstance(step, PromptStep)}
    if not prompt_steps:
        return CostEstimate(binding.name, scorer.id, total_runs, 0.0, 0, 0, 0, "no judge calls")
    first = next(iter(prompt_steps.values()))
    judge = first.judge if first.judge is not None else scorer.judge
    model = judge_model(judge)
    settings = judge_settings(judge)
    pricing = PricingJudge(
        model,
        PastAnswers.of(engine, scorer.id, model, settings).find if engine is not None else None,
        caches=getattr(getattr(judge, "config", judge), "cache", True) is not False,
        settings=settings,
    )
    priced = with_pricing_judge(scorer, pricing)
    history = _past_output_tokens(engine, scorer.id, list(prompt_steps)) if engine else {}
    input_tokens = output_tokens = 0.0
    priced_as: Counter[str] = Counter()
    for run, copied in zip(runs, copies or [1] * len(runs), strict=True):
        paid_per_copy = 1 if pricing.caches else copied
        pricing.calls.clear()
        priced.run_sync(run)
        if not pricing.calls:  # stopped by a code step before any prompt: no judge call either
            continue
        # Steps that did not render (a later step failed on the typical answers) count at the
        # mean size of this run's prompts and answers.
        rendered = {call.step for call in pricing.calls}
        mean_in = fmean(call.input_tokens for call in pricing.calls)
        mean_out = fmean(call.output_tokens for call in pricing.calls)
        paid = [
            (call.step, call.input_tokens, call.output_tokens, call.source)
            for call in pricing.calls
            if not call.cached
        ] + [(name, mean_in, mean_out, "missing") for name in prompt_steps if name not in rendered]
        for step, tokens_in, tokens_out, source in paid:
            from_history = source != "same request" and step in history
            input_tokens += tokens_in * paid_per_copy
            output_tokens += (history[step] if from_history else tokens_out) * paid_per_copy
            priced_as["history" if from_history else source] += paid_per_copy
    calls = sum(priced_as.values())
    # The sample's totals scaled to all the runs to score, then shown per run.
    scale = (total_runs if distinct is None else distinct) / max(1, len(runs))
    per_run = scale / max(1, total_runs)
    price_in, price_out = _prices(model)
    cost = (input_tokens * price_in + output_tokens * price_out) * scale
    method = (
        f"{model}: input tokens of {len(runs)} rendered runs"
        + (
            ""
            if distinct is None or distinct == total_runs
            else f" ({distinct} distinct of the {total_runs} runs; copies of a run are "
            + ("cache hits" if pricing.caches else "paid again")
            + ")"
        )
        + "; output tokens "
        + _output_method(priced_as)
        + ("" if price_in or price_out else "; no litellm price for this model")
    )
    return CostEstimate(
        binding.name,
        scorer.id,
        total_runs,
        cost,
        calls * per_run,
        input_tokens * per_run,
        output_tokens / calls if calls else 0.0,
        method,
    )


_PRICED_AS = {
    "same request": "as answered before to the same prompt",
    "history": "from their step's past calls",
    "sketch": "sketched",
    "generic": "generic (no sketch)",
    "missing": "at the run's mean (step not rendered)",
}


def _output_method(priced_as: Counter[str]) -> str:
    """How the sampled paid calls' output tokens were obtained, e.g. ``10 sketched, 2 ...``."""
    if not priced_as:
        return "not needed (every request cached)"
    counts = ", ".join(f"{n} {_PRICED_AS[how]}" for how, n in priced_as.most_common())
    return f"of the {sum(priced_as.values())} paid calls sampled: {counts}"


def judge_settings(spec: Any) -> Any:
    """The ``JudgeConfig`` of a judge spec, or None for a judge that has none (a custom one)."""
    from tracescore.judge.config import JudgeConfig

    if isinstance(spec, str | dict | JudgeConfig):
        return JudgeConfig.of(spec)
    config = getattr(spec, "config", None)
    return config if isinstance(config, JudgeConfig) else None


def _keyed(settings: Any, model: str) -> Any:
    """What a verdict key is made from: the judge's settings for ``model``, else the model."""
    return settings.model_copy(update={"model": model}) if settings is not None else model


def judge_model(spec: Any) -> str:
    """The litellm model name of a judge spec (string, ``JudgeConfig``, dict or ``Judge``)."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict):
        return str(spec.get("model"))
    config = getattr(spec, "config", None)
    return str(getattr(config, "model", None) or getattr(spec, "model", "unknown"))


def typical(schema: type[BaseModel]) -> BaseModel:
    """A generic answer of typical size for ``schema``: every field filled (a judge fills
    optional ones too), :data:`TYPICAL_ITEMS` items per list, one typical sentence per string,
    0.5 per number, the first allowed value per literal."""
    return schema.model_construct(
        **{
            field.alias or name: _typical_value(field.annotation)
            for name, field in schema.model_fields.items()
        }
    )


def _typical_value(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _typical_value(options[0]) if options else None
    if origin is dict:
        return {}
    if origin is not None:  # list, set, tuple, Sequence
        (item, *_) = typing.get_args(annotation) or (str,)
        return [_typical_value(item) for _ in range(TYPICAL_ITEMS)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return typical(annotation)
    if annotation is str:
        return typical_text()
    return {int: 1, float: 0.5, bool: True}.get(annotation)


def answer_text(answer: BaseModel | str) -> str:
    """The text a judge sends back for ``answer``: the JSON as judges write it (``", "`` and
    ``": "`` separators, unescaped Unicode), or the text itself."""
    if isinstance(answer, str):
        return answer
    return json.dumps(answer.model_dump(mode="json", by_alias=True), ensure_ascii=False)


def _count(model: str, **content: Any) -> int:
    from tracescore.judge.client import litellm

    return int(litellm().token_counter(model=model, **content))


def with_pricing_judge(scorer: Scorer, judge: PricingJudge) -> Scorer:
    """``scorer`` asking ``judge``, which learns each prompt step's context and sketch as the
    step's prompt renders (a judge request carries neither)."""

    def priced(step: PromptStep) -> PromptStep:
        def create_prompt(ctx: StepContext) -> str | list[str]:
            judge.context, judge.sketch = ctx, step.sketch
            return step.create_prompt(ctx)

        return dataclasses.replace(step, judge=judge, create_prompt=create_prompt)

    steps = tuple(
        (name, priced(step) if isinstance(step, PromptStep) else step)
        for name, step in scorer.steps
    )
    return dataclasses.replace(scorer, judge=judge, _steps=steps)


def _prices(model: str) -> tuple[float, float]:
    """USD per input and per output token from litellm's price map (0, 0 when unpriced)."""
    from tracescore.judge.prices import token_prices

    return token_prices(model) or (0.0, 0.0)


def _past_output_tokens(engine: Database, scorer_id: str, steps: Sequence[str]) -> dict[str, float]:
    """Mean output tokens of each step's latest paid judge calls, for the steps that have some.

    The verdict cache table keeps one row per paid call (with its step and token counts),
    whatever happened to the score rows since; score rows' judge calls serve for the steps it
    has none of (judges with ``cache: false``).
    """
    from tracescore.store.judge_cache import paid_output_tokens

    from_verdicts: dict[str, list[int]] = {}
    from_rows: dict[str, list[int]] = {}
    with connect(engine) as connection:
        for step in steps:
            tokens = paid_output_tokens(connection, scorer_id, step, HISTORY_CALLS)
            if tokens:
                from_verdicts[step] = tokens
        missing = [step for step in steps if step not in from_verdicts]
        rows = paid_steps(connection, scorer_id, HISTORY_CALLS) if missing else []
        for row in rows:
            for trace in (row or {}).get("steps") or []:
                for call in trace.get("judge_calls") or []:
                    step = call.get("step") or trace.get("name")
                    paid = call.get("output_tokens") or 0
                    if step in missing and paid > 0 and not call.get("cached"):
                        from_rows.setdefault(step, []).append(paid)
    return {step: fmean(tokens) for step, tokens in {**from_rows, **from_verdicts}.items()}
