"""Offline scoring through the live pipeline's code, and ``run_evals`` for Python callers.

Files and datasets are scored by :meth:`~tracescore.pipeline.scoring.Scoring.score_runs`, which
routes runs as the collector's worker does: the same target selection, filters, cascades and
score rows, so a CI gate and production agree on what a binding scores. Only sampling differs: offline, every eligible run is scored (sampling exists to
bound live judge spend, a CI run wants the whole dataset).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracescore.batch_gc import bulk_scoring
from tracescore.extract.conversation import Conversation
from tracescore.extract.model import AgentRun
from tracescore.offline.conversations import (
    as_conversation,
    judges_conversations,
    score_conversation,
)
from tracescore.offline.inputs import as_run, is_plain_item, plain_run
from tracescore.offline.report import BindingSummary, summarize
from tracescore.offline.specs import bindings_from_specs
from tracescore.pipeline.bindings import CompiledBinding, compile_bindings
from tracescore.pipeline.config import SamplingConfig, ScorerBinding, WorkersConfig
from tracescore.pipeline.routing import RunFilter
from tracescore.pipeline.scoring import Scoring
from tracescore.scorers.base import Scorer
from tracescore.scorers.utils import get_user_message
from tracescore.store.scores import StoredScore

Row = StoredScore


def compile_offline(
    bindings: Sequence[ScorerBinding], judges: Mapping[str, Any], engine: Any = None
) -> list[CompiledBinding]:
    """Compiled bindings that score every eligible run (sampling rate 1)."""
    everything = SamplingConfig(rate=1.0)
    return compile_bindings(
        [b.model_copy(update={"sampling": everything}) for b in bindings], judges, engine
    )


def by_trace(runs: Iterable[AgentRun]) -> list[list[AgentRun]]:
    """Runs grouped per trace (a binding's ``trace`` target picks one run per group)."""
    groups: dict[str, list[AgentRun]] = {}
    for run in runs:
        groups.setdefault(run.trace_id, []).append(run)
    return list(groups.values())


async def score_groups(
    groups: Sequence[Sequence[AgentRun]],
    bindings: Sequence[CompiledBinding],
    *,
    concurrency: int = 8,
    on_group: Callable[[int, list[Row]], None] | None = None,
) -> list[list[Row]]:
    """Score each group of one trace's runs; returns the score rows per group, in order.

    ``on_group(index, rows)`` is called as each group finishes.
    """
    scoring = Scoring(bindings, WorkersConfig(concurrency=concurrency), timed=False)
    slots = asyncio.Semaphore(concurrency)

    async def one(index: int, group: Sequence[AgentRun]) -> list[Row]:
        async with slots:
            rows, _decisions = await scoring.score_runs(group)
        if on_group is not None:
            on_group(index, rows)
        return rows

    return list(await asyncio.gather(*(one(i, g) for i, g in enumerate(groups))))


# ----------------------------------------------------------------------------- run_evals

Target = Callable[[Any], Any]


@dataclass
class ItemResult:
    """One dataset item: the run (or conversation) scored, the target's output (when a target
    ran) and its scores."""

    index: int
    item: Any
    run: AgentRun | None
    conversation: Conversation | None = None
    output: Any = None
    scores: dict[str, Row] = field(default_factory=dict)
    """Score rows by binding name (``status``, ``score``, ``reason``, ``cost_usd``…)."""
    error: str | None = None
    """Why the item could not be scored (the target raised, or the item is malformed)."""


@dataclass
class EvalResult:
    items: list[ItemResult]
    summaries: list[BindingSummary]

    @property
    def scores(self) -> dict[str, float | None]:
        """Mean score per binding (Mastra's ``runEvals`` result ``scores``)."""
        return {s.binding: s.mean for s in self.summaries}


ScorerSpec = Scorer | str | ScorerBinding


async def arun_evals(
    data: Iterable[Any],
    scorers: Sequence[ScorerSpec],
    target: Target | None = None,
    on_item_complete: Callable[[ItemResult], Any] | None = None,
    concurrency: int = 4,
    judge: Any = None,
) -> EvalResult:
    """Score a dataset, the way Mastra's ``runEvals`` does, in Python.

    ``data`` items are runs (``AgentRun``, run dicts of our shape or Mastra's),
    ``{input, ground_truth?}`` items, or conversations: a ``Conversation`` or a list of turns
    (``Turn``s, ``{user, answer}`` dicts or ``{role, content}`` chat messages), which every
    scorer judges whole (see :func:`tracescore.offline.conversations.as_conversation`). With ``target`` (a sync or async callable, e.g. an agent),
    each item's input is passed to it and its answer (text, or chat messages) is what gets scored.
    ``scorers`` are ``Scorer`` objects, prebuilt scorer names with options
    (``"tool-call-accuracy-code:expected_tool=get_weather"``) or ``ScorerBinding``s; ``judge``
    (a model string, ``JudgeConfig`` or ``Judge``) serves the LLM scorers named by string.
    ``on_item_complete`` (sync or async) sees each item's result as soon as it is scored.
    """
    bindings = build_eval_bindings(scorers, judge)
    items = list(data)
    slots = asyncio.Semaphore(concurrency)
    # Runs are scored by the run bindings; a conversation item by every binding.
    scoring = Scoring(
        [b for b in bindings if not judges_conversations(b)],
        WorkersConfig(concurrency=concurrency),
        timed=False,
    )

    async def one(index: int, item: Any) -> ItemResult:
        async with slots:
            result = ItemResult(index, item, None, as_conversation(item, index=index))
            if result.conversation is not None and target is not None:
                result.error = (
                    "a target answers single inputs, not conversations: give the turns' answers"
                )
            elif result.conversation is not None:
                rows = await score_conversation(result.conversation, bindings, scoring)
                result.scores = {row["binding"]: row for row in rows}
            else:
                try:
                    result.run, result.output = await _item_run(item, index, target)
                except Exception as exc:  # noqa: BLE001 - one bad item is reported, not fatal
                    result.error = f"{type(exc).__name__}: {exc}"
            if result.run is not None:
                rows, _decisions = await scoring.score_runs([result.run])
                result.scores = {row["binding"]: row for row in rows}
        if on_item_complete is not None:
            outcome = on_item_complete(result)
            if inspect.isawaitable(outcome):
                await outcome
        return result

    with bulk_scoring():
        results = list(await asyncio.gather(*(one(i, item) for i, item in enumerate(items))))
    rows = [row for r in results for row in r.scores.values()]
    return EvalResult(results, summarize(rows, {b.name: b.scorer.id for b in bindings}))


def run_evals(
    data: Iterable[Any],
    scorers: Sequence[ScorerSpec],
    target: Target | None = None,
    on_item_complete: Callable[[ItemResult], Any] | None = None,
    concurrency: int = 4,
    judge: Any = None,
) -> EvalResult:
    """:func:`arun_evals` for synchronous callers (also from inside a running event loop)."""
    coroutine = arun_evals(data, scorers, target, on_item_complete, concurrency, judge)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def build_eval_bindings(scorers: Sequence[ScorerSpec], judge: Any = None) -> list[CompiledBinding]:
    """Compiled bindings for ``run_evals``: ready scorers wrapped as they are, names built."""
    judges = {"default": judge} if judge is not None else {}
    compiled: list[CompiledBinding] = []
    for spec in scorers:
        if isinstance(spec, Scorer):
            binding = ScorerBinding(name=_binding_name(spec.id), scorer=spec.id)
            compiled.append(CompiledBinding(binding, spec, True, RunFilter(binding.filter), None))
        else:
            configured = [spec] if isinstance(spec, ScorerBinding) else bindings_from_specs([spec])
            compiled.extend(compile_offline(configured, judges))
    return compiled


def _binding_name(scorer_id: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in scorer_id).strip("-_.")
    return cleaned or "scorer"


async def _item_run(item: Any, index: int, target: Target | None) -> tuple[AgentRun, Any]:
    """The run to score for one item, calling the target on its input first when there is one."""
    if target is None:
        return as_run(item, index=index).model_copy(update={"primary": True}), None
    user_input, ground_truth = _target_input(item, index)
    output = target(user_input)
    if inspect.isawaitable(output):
        output = await output
    return plain_run(user_input, _answer(output), ground_truth, index=index), output


def _target_input(item: Any, index: int) -> tuple[Any, Any]:
    """``(input for the target, ground truth)`` of a dataset item."""
    if isinstance(item, str):
        return item, None
    if isinstance(item, Mapping) and is_plain_item(item):
        truth = item["groundTruth"] if "groundTruth" in item else item.get("ground_truth")
        return item.get("input"), truth
    run = as_run(item, index=index)
    return get_user_message(run.mastra_input()) or "", run.ground_truth


def _answer(output: Any) -> Any:
    """Text or chat messages from what an agent returned (``str``, messages, ``{text}`` objects)."""
    if isinstance(output, (str, list)) or output is None:
        return output
    for attribute in ("text", "content", "output"):
        value = (
            output.get(attribute)
            if isinstance(output, Mapping)
            else getattr(output, attribute, None)
        )
        if isinstance(value, (str, list)):
            return value
    return str(output)
