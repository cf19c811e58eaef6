"""What re-scoring runs with an LLM scorer will cost, worked out before any judge is called.

Input tokens are counted on the real prompts: each sampled run goes through the scorer with a
*pricing judge* that counts the tokens of every request exactly as the judge client would send
it (instructions, prompt and schema instruction) and answers with the smallest valid object of
the step's schema, so code steps run for real and later prompt steps render. A prompt step that
never rendered because a step failed on those empty answers is counted at the mean size of the
run's rendered prompts: calls per run is the scorer's number of prompt steps. Requests the judge
would answer from its verdict cache (repeated within the backfill, or already in the store's
verdict table) count as free, as they are; a stored verdict is also what the pricing judge
answers, so a re-run of already judged runs renders (and prices) exactly the cached requests.

Output tokens cannot be counted before the judge answers. They come from the scorer's own past
paid judge calls in the store (mean output tokens per call, any version or model) when there are
any, else :data:`DEFAULT_OUTPUT_TOKENS` per call. Tokens are priced with litellm's price map for the
judge's model; a model litellm has no price for (self-hosted) costs nothing.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.engine import Engine

from tracescore.extract.model import AgentRun
from tracescore.pipeline.bindings import CompiledBinding
from tracescore.scorers.base import JudgeRequest, JudgeResponse, PromptStep, Scorer
from tracescore.store.scores import ScoreRow

DEFAULT_OUTPUT_TOKENS = 100
"""Output tokens per judge call assumed when the scorer has no past calls to learn from."""
SAMPLE_RUNS = 100
"""Runs per binding whose prompts are rendered; the mean is extrapolated to all runs."""


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


class PricingJudge:
    """A ``Judge`` that pays nothing: it counts request tokens and answers minimal objects.

    A request the judge would serve from its verdict cache costs nothing: one asked before in
    this estimate, or one whose answer ``stored(key)`` finds in the store. A stored answer is
    returned as the real judge would, so the steps after it render exactly as they will.
    """

    def __init__(self, model: str, stored: Callable[[str], str | None] | None = None) -> None:
        self.model = model
        self.stored = stored
        self.calls: list[tuple[int, bool]] = []
        """``(input tokens, cached)`` of each request since the last ``calls.clear()``."""
        self._seen: set[str] = set()

    async def complete(self, request: JudgeRequest) -> JudgeResponse:
        from tracescore.judge.cache import verdict_key
        from tracescore.judge.client import litellm
        from tracescore.judge.structured import parse_output, request_messages

        messages = request_messages(request.prompt, request.instructions, request.schema)
        tokens = int(litellm().token_counter(model=self.model, messages=messages))
        key = verdict_key(request, self.model)
        text = self.stored(key) if self.stored is not None else None
        output: Any = minimal(request.schema) if request.schema is not None else ""
        if text is not None:
            try:
                output = parse_output(text, request.schema)
            except ValueError:  # the real judge would not use it either
                text = None
        self.calls.append((tokens, key in self._seen or text is not None))
        self._seen.add(key)
        return JudgeResponse(output=output, text=text or "", model=self.model, input_tokens=tokens)


def estimate_cost(
    binding: CompiledBinding, runs: Sequence[AgentRun], total_runs: int, engine: Engine | None
) -> CostEstimate:
    """The judge cost of scoring ``total_runs`` runs like ``runs`` (a sample of them)."""
    scorer = binding.scorer
    prompt_steps = [step for _, step in scorer.steps if isinstance(step, PromptStep)]
    if not prompt_steps:
        return CostEstimate(binding.name, scorer.id, total_runs, 0.0, 0, 0, 0, "no judge calls")
    judge = prompt_steps[0].judge if prompt_steps[0].judge is not None else scorer.judge
    model = judge_model(judge)
    caches = getattr(getattr(judge, "config", judge), "cache", True) is not False
    pricing = PricingJudge(
        model, partial(_stored_verdict, engine) if engine is not None and caches else None
    )
    priced = _with_judge(scorer, pricing)
    sample = runs[:SAMPLE_RUNS]
    calls = tokens = 0.0
    for run in sample:
        pricing.calls.clear()
        priced.run_sync(run)
        paid = [t for t, cached in pricing.calls if not (cached and caches)]
        if not pricing.calls:  # stopped by a code step before any prompt: no judge call either
            continue
        # Steps that did not render (a later step failed on the empty answers) count at the
        # mean size of this run's prompts.
        missing = len(prompt_steps) - len(pricing.calls)
        mean = sum(t for t, _ in pricing.calls) / len(pricing.calls)
        calls += len(paid) + missing
        tokens += sum(paid) + missing * mean
    calls_per_run = calls / max(1, len(sample))
    input_tokens = tokens / max(1, len(sample))
    past = _past_output_tokens(engine, scorer.id) if engine is not None else None
    output_per_call = past if past is not None else DEFAULT_OUTPUT_TOKENS
    price_in, price_out = _prices(model)
    per_run = input_tokens * price_in + calls_per_run * output_per_call * price_out
    method = (
        f"{model}: input tokens of {len(sample)} rendered runs; output tokens "
        + ("from past judge calls" if past is not None else f"assumed {DEFAULT_OUTPUT_TOKENS}/call")
        + ("" if price_in or price_out else "; no litellm price for this model")
    )
    return CostEstimate(binding.name, scorer.id, total_runs, per_run * total_runs, calls_per_run,
                        input_tokens, output_per_call, method)  # fmt: skip


def judge_model(spec: Any) -> str:
    """The litellm model name of a judge spec (string, ``JudgeConfig``, dict or ``Judge``)."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict):
        return str(spec.get("model"))
    config = getattr(spec, "config", None)
    return str(getattr(config, "model", None) or getattr(spec, "model", "unknown"))


def minimal(schema: type[BaseModel]) -> BaseModel:
    """The smallest instance of ``schema``: empty lists and strings, zeros, first literals."""
    values = {
        name: _minimal_value(field.annotation)
        for name, field in schema.model_fields.items()
        if field.is_required()
    }
    return schema.model_construct(**values)


def _minimal_value(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (
            None if len(options) < len(typing.get_args(annotation)) else _minimal_value(options[0])
        )
    if origin is not None:
        return {} if origin is dict else []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return minimal(annotation)
    return {str: "", int: 0, float: 0.0, bool: False}.get(annotation)


def _with_judge(scorer: Scorer, judge: PricingJudge) -> Scorer:
    steps = tuple(
        (name, dataclasses.replace(step, judge=judge) if isinstance(step, PromptStep) else step)
        for name, step in scorer.steps
    )
    return dataclasses.replace(scorer, judge=judge, _steps=steps)


def _prices(model: str) -> tuple[float, float]:
    """USD per input and per output token from litellm's price map (0, 0 when unpriced)."""
    from tracescore.judge.client import litellm

    try:
        price_in, _ = litellm().cost_per_token(model=model, prompt_tokens=1, completion_tokens=0)
        _, price_out = litellm().cost_per_token(model=model, prompt_tokens=0, completion_tokens=1)
    except Exception:
        return 0.0, 0.0
    return float(price_in), float(price_out)


def _stored_verdict(engine: Engine, key: str) -> str | None:
    """The answer the judge's verdict cache table holds for this request, if any."""
    from tracescore.store.judge_cache import JudgeVerdict

    table = JudgeVerdict.__table__
    with engine.connect() as connection:
        return connection.execute(select(table.c.text).where(table.c.key == key)).scalar()


def _past_output_tokens(engine: Engine, scorer_id: str, limit: int = 500) -> float | None:
    """Mean output tokens of the scorer's latest paid judge calls, if any.

    The verdict cache table keeps one row per paid call (with its token counts), whatever
    happened to the score rows since; score rows' judge calls serve when verdicts are not kept
    (judges with ``cache: false``).
    """
    from tracescore.store.judge_cache import JudgeVerdict

    verdicts = JudgeVerdict.__table__
    scores = ScoreRow.__table__
    with engine.connect() as connection:
        paid = list(connection.scalars(
            select(verdicts.c.output_tokens)
            .where((verdicts.c.scorer_id == scorer_id) & (verdicts.c.output_tokens > 0))
            .order_by(verdicts.c.created_at.desc())
            .limit(limit)
        ))  # fmt: skip
        if not paid:
            paid = [
                call.get("output_tokens") or 0
                for steps in connection.scalars(
                    select(scores.c.steps)
                    .where((scores.c.scorer_id == scorer_id) & (scores.c.output_tokens > 0))
                    .order_by(scores.c.created_at.desc())
                    .limit(limit)
                )
                for step in (steps or {}).get("steps") or []
                for call in step.get("judge_calls") or []
                if not call.get("cached")
            ]
    return sum(paid) / len(paid) if paid else None
