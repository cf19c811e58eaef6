"""The failed runs of a window, as text: what the user asked, what the agent answered, the
tools it called and their errors, and why it was marked failed.

A run is failed when any of ``insights.failed`` marks it: a score below its binding's
threshold, a scoring that failed, a negative human verdict. The scores and verdicts are read
through their owners (:mod:`tracescore.store.score_reads`, :mod:`tracescore.store.feedback`),
streamed, and at most ``max_runs`` runs are kept: those whose ids hash lowest, a sample that is
the same for the same window and does not lean towards any agent or time. Only those runs'
traces are then loaded and rebuilt, in batches.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tracescore.extract import extract_runs
from tracescore.extract.base import Convention
from tracescore.extract.model import Message, ToolInvocation
from tracescore.extract.runs.answered import AnsweredRun, answered_runs
from tracescore.insights.config import FailedRunsConfig
from tracescore.insights.signature import (
    BINDING_LABELS,
    CONSISTENCY,
    answer_signal,
    failed_checks,
    language_signals,
    leaks,
    masked_part,
    needs_identifier,
    signature_features,
    unsupported_identifiers,
)
from tracescore.language import load_in_background
from tracescore.scorers.llm.run_text import as_text, response_text, system_prompt, user_text
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.scorers.utils import (
    get_combined_system_prompt,
    get_user_message,
    merge_tool_invocations,
)
from tracescore.spans import Trace
from tracescore.store import SpanStore, connect
from tracescore.store.feedback import negative_verdicts
from tracescore.store.insights import RunText, current_groups, keep_run_texts, run_texts
from tracescore.store.score_reads import failed_scores

FIELD_CHARS = 1_000
"""The most characters of each text field a run contributes (request, answer, error): a long
answer says no more about how it failed than its start."""
REASON_CHARS = 500
"""The most characters kept of each reason (a scorer's, a reviewer's comment)."""
MAX_REASONS = 3
"""Reasons kept per run."""
TOOL_CHARS = 300
"""The most characters of each tool line (``<tool> failed: <error>``)."""
MAX_TOOLS = 10
"""Tool lines kept per run: with the caps above, a run holds at most about 9,000 characters,
so the pass's memory is bounded by ``max_runs`` times that whatever the traces say."""
BY_KEY = operator.attrgetter("trace_id", "span_id")
"""A run's (trace, span) as a sort key, made in C (:attr:`FailedRun.key` is a Python call)."""
TRACE_BATCH = 200
"""Traces loaded and rebuilt at once."""


@dataclass(slots=True)
class FailedRun:
    """One failed run and what the grouping reads of it."""

    trace_id: str
    span_id: str
    failed_at: float
    agent: str | None = None
    model: str | None = None
    flagged_by: set[str] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)
    request: str = ""
    answer: str = ""
    tools: list[str] = field(default_factory=list)
    """``<tool> failed: <error>`` for each failed call, ``<tool>`` for the others."""
    error: str = ""
    checks: set[str] = field(default_factory=set)
    """The ``consistency`` checks that failed on it."""
    labels: set[str] = field(default_factory=set)
    """``<scorer>=<label>`` of failing scores whose label says more than ``fail``."""
    signals: list[str] = field(default_factory=list)
    """What only its trace shows (:func:`trace_signals`): ``leak``, ``unsupported_id``, the
    languages of its request and answer, what the answer says (``facts:refusal``)."""
    started_at: float | None = None
    """When the run itself started (its verdicts come later)."""

    @property
    def key(self) -> tuple[str, str]:
        return self.trace_id, self.span_id

    def failure(self) -> str:
        """What the run did and why it was marked failed, entities and numbers masked: with its
        signature and request, what it is grouped by."""
        failed_tools = [line for line in self.tools if " failed: " in line]
        parts = (self.answer, *failed_tools, self.error, *self.reasons)
        return "\n".join(masked_part(part) for part in parts if part)

    def signature(self) -> dict[str, float]:
        """Its signature's features (:mod:`tracescore.insights.signature`) and their weights."""
        return signature_features(
            self.flagged_by,
            self.labels,
            self.checks,
            self.tools,
            self.request,
            self.answer,
            self.signals,
        )

    def summary(self) -> str:
        """One line for a group's page: the request, and what went wrong."""
        wrong = (
            self.error
            or next((t for t in self.tools if " failed: " in t), "")
            or " ".join(self.reasons[:1])
        )
        return f"{self.request[:160]} — {wrong[:200]}" if wrong else self.request[:240]

    def text(self) -> RunText:
        """What its trace said, to store for the next passes."""
        return RunText(
            trace_id=self.trace_id,
            span_id=self.span_id,
            failed_at=self.failed_at,
            agent=self.agent,
            model=self.model,
            request=self.request,
            answer=self.answer,
            error=self.error,
            tools=self.tools,
            signals=self.signals,
            started_at=self.started_at,
        )

    def take(self, text: RunText) -> None:
        """Take what an earlier pass stored of its trace (:meth:`text`)."""
        self.agent = self.agent or text["agent"]
        self.model = self.model or text["model"]
        self.request, self.answer, self.error = text["request"], text["answer"], text["error"]
        self.tools = list(text["tools"])
        self.signals = list(text["signals"] or [])
        self.started_at = text["started_at"]

    def read(self, run: ScorerRun) -> None:
        """Take the request, answer, tool calls and error from the Mastra-shaped ``run`` (an
        exported run), and what it shows (:func:`trace_signals`) but the languages
        (:meth:`identify`)."""
        messages = run.output if isinstance(run.output, list) else [run.output]
        self._take(
            user_text(run),
            response_text(run),
            run.error,
            system_prompt(run),
            [call for message in messages for call in merge_tool_invocations(message)],
        )

    def read_answered(self, run: AnsweredRun) -> None:
        """:meth:`read` of a run rebuilt from its trace, taken from its models
        (:mod:`tracescore.extract.runs.answered`): the same texts as from its Mastra dicts,
        without dumping its output (only its tool calls) or its history (what came before the
        user's turn, which neither the request nor the system prompt is read from)."""
        run_input = run.input.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude={"remembered_messages"}
        )
        self._take(
            get_user_message(run_input) or "",
            run.answer(),
            run.failure(),
            get_combined_system_prompt(run_input),
            [call for message in run.output for call in _tool_calls(message)],
        )

    def _take(
        self,
        request: str,
        answer: str,
        error: str | None,
        system: str,
        calls: Sequence[Mapping[str, Any]],
    ) -> None:
        self.request = request[:FIELD_CHARS]
        self.answer = answer[:FIELD_CHARS]
        self.error = (error or "")[:FIELD_CHARS]
        lines = [_tool_line(call) for call in calls]
        failed = [line for line in lines if " failed: " in line]
        self.tools.extend(
            [*failed, *(line for line in lines if " failed: " not in line)][:MAX_TOOLS]
        )
        self.signals = trace_signals(request, answer, system, calls)

    def identify(self) -> None:
        """Add the languages of its request and answer to its signals (after :meth:`read`:
        a pass reads all its runs first, the identifier's model loading meanwhile)."""
        self.signals[:0] = language_signals(self.request, self.answer)

    def needs_identifier(self) -> bool:
        """Whether :meth:`identify` will ask the identifier's model."""
        return needs_identifier(self.request) or needs_identifier(self.answer)


def trace_signals(
    request: str, answer: str, system: str, calls: Sequence[Mapping[str, Any]]
) -> list[str]:
    """What a run's trace shows that its stored text does not keep: the answer repeats the
    system prompt (``leak``), the answer states an identifier found nowhere in the request,
    system prompt or tool calls (``unsupported_id``); and what the answer says
    (:func:`~tracescore.insights.signature.answer_signal`), read once. Its languages are
    added apart (:meth:`FailedRun.identify`)."""
    signals = [answer_signal(answer[:FIELD_CHARS])]
    if leaks(answer, system):
        signals.append("leak")
    evidence = (
        text for call in calls for text in (as_text(call.get("args")), as_text(call.get("result")))
    )  # rendered only for an answer that states identifiers
    if unsupported_identifiers(answer, itertools.chain((request, system), evidence)):
        signals.append("unsupported_id")
    return signals


def _tool_calls(message: Message) -> list[dict[str, Any]]:
    """The message's tool calls as :func:`merge_tool_invocations` reads them from the dumped
    message (from its parts and its legacy list), each call dumped alone."""
    dumped: dict[int, dict[str, Any]] = {}

    def dump(call: ToolInvocation) -> dict[str, Any]:
        found = dumped.get(id(call))
        if found is None:
            found = dumped[id(call)] = call.model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
        return found

    content = message.content
    parts = [
        {"type": part.type, "toolInvocation": dump(part.tool_invocation)}
        for part in content.parts
        if part.tool_invocation is not None
    ]
    legacy = [dump(call) for call in content.tool_invocations or ()]
    if not parts and not legacy:
        return []
    return merge_tool_invocations({"content": {"parts": parts, "toolInvocations": legacy}})


def _tool_line(call: Mapping[str, Any]) -> str:
    name = str(call.get("toolName") or "tool")
    if call.get("state") == "output-error" or call.get("isError"):
        failure = call.get("errorText") or call.get("result") or "error"
        return f"{name} failed: {as_text(failure)[:TOOL_CHARS]}"
    return name


def _rank(trace_id: str, span_id: str) -> int:
    """Where a run falls in the sample's order: a hash, so the order is the same on every
    replica and unrelated to time or agent."""
    return int.from_bytes(hashlib.blake2b(f"{trace_id}/{span_id}".encode(), digest_size=8).digest())


class Sample:
    """At most ``size`` runs, the lowest-ranked of those offered: a bounded, deterministic
    sample of a stream of any length (a run once dropped never ranks low enough to return)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.runs: dict[tuple[str, str], FailedRun] = {}
        self._heap: list[tuple[int, tuple[str, str]]] = []  # (-rank, key): the highest on top
        self.seen = 0
        """Distinct runs taken into the sample at some point (a run evicted later counts once):
        every failed run while the sample has room; once it is full, a lower bound (a run
        turned away at once is not counted, since counting it once would mean remembering it)."""
        self.capped = False
        """Whether a run was left out (turned away or evicted): the pass read a sample."""

    def offer(self, trace_id: str, span_id: str, failed_at: float) -> FailedRun | None:
        """The sampled run for these ids (created when new), or None when it is left out."""
        key = (trace_id, span_id)
        run = self.runs.get(key)
        if run is not None:
            run.failed_at = max(run.failed_at, failed_at)
            return run
        rank = _rank(trace_id, span_id)
        if len(self._heap) >= self.size:
            self.capped = True
            if rank >= -self._heap[0][0]:
                return None
            _, evicted = heapq.heappushpop(self._heap, (-rank, key))
            del self.runs[evicted]
        else:
            heapq.heappush(self._heap, (-rank, key))
        self.seen += 1
        run = self.runs[key] = FailedRun(trace_id, span_id, failed_at)
        return run


def sample_failed_runs(
    store: SpanStore, since: datetime, until: datetime, failed: FailedRunsConfig, size: int
) -> Sample:
    """The window's failed runs (at most ``size``), with who flagged them and why; their
    request, answer and tools are filled by :func:`read_runs`."""
    sample = Sample(size)
    with connect(store.engine) as connection:
        if failed.below_threshold or failed.scorer_errors:
            for score in failed_scores(connection, since, until, errors=failed.scorer_errors):
                if score["status"] == "error" or failed.below_threshold:
                    run = sample.offer(
                        score["trace_id"], score["span_id"], score["created_at"].timestamp()
                    )
                    if run is not None:
                        run.agent = run.agent or score["agent"]
                        run.model = run.model or score["model"]
                        run.flagged_by.add(score["scorer_id"])
                        own = score["label"] not in BINDING_LABELS and score["label"]
                        if score["scorer_id"] == CONSISTENCY:
                            # Its label joins the failed checks' names: the steps say the same.
                            found = failed_checks(score["steps"])
                            run.checks.update(found or (own.split("+") if own else ()))
                        elif own:
                            run.labels.add(f"{score['scorer_id']}={own}")
                        reason = score["reason"] or score["error"]
                        if reason and len(run.reasons) < MAX_REASONS:
                            run.reasons.append(reason[:REASON_CHARS])
        for verdict in negative_verdicts(
            connection, since, until, failed.feedback_labels, failed.feedback_below
        ):
            # A verdict on a whole trace (no span) stands for its primary run, found once the
            # trace is rebuilt (:func:`read_runs`).
            run = sample.offer(
                verdict["trace_id"], verdict["span_id"] or "", verdict["created_at"].timestamp()
            )
            if run is not None:
                run.flagged_by.add(f"feedback:{verdict['name']}")
                if verdict["comment"] and len(run.reasons) < MAX_REASONS:
                    run.reasons.append(verdict["comment"][:REASON_CHARS])
    return sample


def anything_to_group(
    store: SpanStore, since: datetime, until: datetime, failed: FailedRunsConfig
) -> bool:
    """Whether a pass over the window has work: a run failed in it, or an earlier pass's
    groups are current (a pass would mark them gone). The first row of each query only, so
    a service whose runs pass starts no pass's process for nothing."""
    with connect(store.engine) as connection:
        if current_groups(connection):
            return True
        scores = failed.below_threshold or failed.scorer_errors
        if scores and _any(failed_scores(connection, since, until, errors=failed.scorer_errors)):
            return True
        return _any(
            negative_verdicts(
                connection, since, until, failed.feedback_labels, failed.feedback_below
            )
        )


def _any(rows: Iterator[object]) -> bool:
    """Whether ``rows`` yields one (the query's generator is closed as this returns)."""
    return next(rows, None) is not None


def read_runs(
    store: SpanStore,
    runs: Iterable[FailedRun],
    conventions: Sequence[Convention],
    *,
    keep_since: float | None = None,
) -> list[FailedRun]:
    """``runs`` with what their traces say, in a stable order (by trace, then span). Runs read
    by an earlier pass are taken from their stored text; the others are rebuilt from their
    spans and, with ``keep_since``, their text stored (texts of runs that failed before it
    dropped). A run whose trace is no longer stored keeps its reasons only. A verdict on a
    whole trace is moved to the trace's first primary run."""
    ordered = sorted(runs, key=BY_KEY)
    with connect(store.engine) as connection:
        stored = {
            (text["trace_id"], text["span_id"]): text
            for text in run_texts(connection, [run.key for run in ordered if run.span_id])
        }
    unread = []
    for run in ordered:
        text = stored.get(run.key)
        if text is None:
            unread.append(run)
        else:
            run.take(text)
    rebuilt = _rebuild(store, unread, conventions)
    if keep_since is not None:
        with store.write_transaction() as connection:
            keep_run_texts(connection, (run.text() for run in rebuilt), keep_since)
    return _merged(ordered)


def _rebuild(
    store: SpanStore, runs: Sequence[FailedRun], conventions: Sequence[Convention]
) -> list[FailedRun]:
    """Fill ``runs`` from their traces, loaded and rebuilt in batches; the runs found. Their
    languages are identified once all are read: the first run that needs the identifier's
    model starts loading it in the background, while the others are rebuilt."""
    by_trace: dict[str, list[FailedRun]] = {}
    for run in runs:
        by_trace.setdefault(run.trace_id, []).append(run)
    trace_ids = list(by_trace)
    found = []
    loading = False
    for start in range(0, len(trace_ids), TRACE_BATCH):
        batch = trace_ids[start : start + TRACE_BATCH]
        for trace_id, trace in store.load_traces(batch).items():
            failed_runs = by_trace.get(trace_id, ())
            rebuilt, primary = _trace_runs(trace, conventions, {run.span_id for run in failed_runs})
            for failed in failed_runs:
                if not failed.span_id and primary is not None:
                    failed.span_id = primary
                agent_run = rebuilt.get(failed.span_id)
                if agent_run is not None:
                    failed.agent = failed.agent or agent_run.agent_name
                    failed.started_at = (
                        agent_run.start_time.timestamp() if agent_run.start_time else None
                    )
                    failed.model = failed.model or agent_run.model
                    failed.read_answered(agent_run)
                    found.append(failed)
                    if not loading and failed.needs_identifier():
                        load_in_background()
                        loading = True
    for failed in found:
        failed.identify()
    return found


def _trace_runs(
    trace: Trace, conventions: Sequence[Convention], wanted: set[str]
) -> tuple[dict[str, AnsweredRun], str | None]:
    """The runs of ``trace`` by span id, at least those of ``wanted`` (``""``: the primary
    one) that it has, and its first primary run's span id. Scores and verdicts are mostly on
    a trace's primary runs, which are read as :func:`answered_runs` reads them (without the
    LLM runs inside them, the tool runs, or the parts of a run a pass does not read); a failed
    run that is not one of them costs the whole trace's runs."""
    primary = answered_runs(trace, list(conventions))
    first = primary[0].span_id if primary else None
    runs = {run.span_id: run for run in primary}
    if wanted <= runs.keys() | {""}:
        return runs, first
    return {
        run.span_id: AnsweredRun.of(run) for run in extract_runs(trace, list(conventions))
    }, first


def _merged(runs: Sequence[FailedRun]) -> list[FailedRun]:
    """One run per (trace, span): a trace-wide verdict moved onto a run flagged already joins
    it."""
    kept: dict[tuple[str, str], FailedRun] = {}
    for run in runs:
        key = (run.trace_id, run.span_id)
        same = kept.get(key)
        if same is None:
            kept[key] = run
            continue
        same.flagged_by |= run.flagged_by
        same.checks |= run.checks
        same.labels |= run.labels
        same.reasons.extend(run.reasons)
        del same.reasons[MAX_REASONS:]
        same.failed_at = max(same.failed_at, run.failed_at)
    return sorted(kept.values(), key=BY_KEY)


def runs_from_exports(items: Iterable[Mapping[str, Any]]) -> Iterator[FailedRun]:
    """Failed runs from exported runs (``tracescore feedback export``'s JSON lines, or any
    Mastra-shaped run dicts with ``traceId``/``spanId``): every item counts as failed."""
    for index, item in enumerate(items):
        scored = item.get("tracescore") or {}
        run = FailedRun(
            str(item.get("traceId") or item.get("trace_id") or f"file-{index}"),
            str(item.get("spanId") or item.get("span_id") or ""),
            float(item.get("failedAt") or 0.0),
            agent=item.get("agentName"),
        )
        if scored.get("binding"):
            run.flagged_by.add(str(scored["binding"]))
        if scored.get("reason"):
            run.reasons.append(str(scored["reason"])[:REASON_CHARS])
        run.read(ScorerRun.of(item))
        run.identify()
        yield run
