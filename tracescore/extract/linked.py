"""Model calls linked across traces: one request traced twice, and one loop traced call by call.

Extraction reads one trace at a time, but two cases need what other traces said, and both are
found from what the runs themselves carry, whatever convention read them:

* **The same request read twice.** A client SDK's own telemetry beside another instrumentation
  of the same client (the Anthropic SDK's spans beside OpenLLMetry's ``AnthropicInstrumentor``,
  whose spans are not made current) traces every request twice, as two traces. Where a run with
  content carries a response id (``gen_ai.response.id``, unique per response), a content-less
  run of another trace with the same id is its twin: it is *read elsewhere*, no run (its
  trace's reason says where, :data:`~tracescore.extract.sources.READ_ELSEWHERE`). An SDK
  whose own spans name no response id (the Mistral SDK's tracer) is matched by what it does
  record: a content-less call of the same service with the same input and output token
  counts, started and ended within a call with content of another trace (the instrumentation's
  span around the same request). A content-less run that matches neither stays a run, with its
  advice.
* **A loop's calls as traces of their own.** A client instrumentation that starts a trace per
  request (LiteLLM's ``otel`` callback, the Anthropic SDK's telemetry, Google GenAI's) sends a
  hand-written loop as one trace per model call. A call that only asked for tools is an
  intermediate step (scorers call it not scorable); the call that answers was sent the earlier
  calls' tool calls with their results. Where those calls are found made by earlier traces'
  steps (the same call id, else the same tool, arguments and user message), the answering
  trace is read together with theirs (:func:`joined`): one loop, one agent run
  (:mod:`tracescore.extract.runs.loops`), kept in the answering trace, usage summed over
  every call. The steps' own traces keep their not-scorable runs.

State across traces is a :class:`CallLinks`, bounded (least recently used entries go first):
the scoring worker keeps one per process and passes each claimed batch through it; offline
reading (:func:`tracescore.offline.inputs.read_runs`) passes every trace of its files through a
fresh one, as one batch. Links are found in either order within a batch; across
batches, only when the linked trace came first (a step's trace ends, so is ready, before the
answer's; an SDK's span ends before the instrumentation span around it). Span text is the
sender's: a link only ever joins or drops runs of the same sender's traces.

Beyond one process's memory (several scoring processes, a restart, an entry forgotten), the
worker's :class:`CallLinks` has a :class:`LinkStore` (the store's ``call_links`` table,
:mod:`tracescore.store.call_links`). What is written there is only what a loop traced call by
call needs, so that an ordinary trace adds nothing: the pending calls and response id of a
trace whose every primary model call only asked for tools (a step traced on its own), and
which traces an answering trace was read together with (:func:`joined_key`). The keys a
batch's answering calls miss in memory are looked up there in one query per batch
(:meth:`CallLinks.recall`). A re-score, the trace page and a backfill read a trace again
with the traces it was joined from (:func:`read_with_steps`), so they see the run scoring saw.

Not linked beyond memory: a request traced twice whose two traces are read by different
processes, or further apart than the memory holds. The content-less twin then stays a run (not
scorable, with its advice) rather than ``read_elsewhere``: writing every response id with
content, to find such a twin later, would cost a row per ordinary model call, for a twin that
only ever scores ``not_scorable``. Nor are calls linked by a session or conversation id alone:
earlier turns of the same session are not steps of this turn, and the ids that do tell a step
(its tool call's id, its response id) are what links are made by. A session id narrows them:
a step whose trace names one is joined only to an answer of the same session, so two sessions
sending the same message, their call ids numbered per response or missing, never share steps
(a step naming none is joined as before, :func:`_sought_keys`).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

import orjson

from tracescore.extract import response_ids
from tracescore.extract.content import awaits_tool_results, has_content
from tracescore.extract.messages import message_text
from tracescore.extract.model import AgentRun, ToolInvocation
from tracescore.spans import Trace

_PENDING = ("call", "partial-call")
DEFAULT_LIMIT = 50_000
"""Response ids and tool calls remembered, each (about 200 bytes an entry)."""


@dataclass(frozen=True, slots=True)
class Twin:
    """A content-less run not kept, because the same response was read from another trace."""

    run: AgentRun
    response_id: str
    """The response id both runs carry; empty when matched by usage and time."""
    read_in: str
    """The trace whose run with content read the same request."""


@dataclass(slots=True)
class TraceLinks:
    """What linking did to one trace's runs."""

    runs: list[AgentRun]
    twins: list[Twin] = field(default_factory=list)
    steps_from: list[str] = field(default_factory=list)
    """The earlier traces whose steps this trace's loop continues (read with it)."""
    error: str | None = None
    """Why the earlier traces this trace's loop continues could not be loaded: its runs are
    not read without them (the caller fails this trace alone, to be read again)."""


V = TypeVar("V")


class _Recent(OrderedDict[str, V]):
    """A key to value (a trace id) map that forgets its least recently set entries beyond
    ``limit``."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: str, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


@dataclass(frozen=True, slots=True)
class _Window:
    """A call with content: its trace and when it ran."""

    trace_id: str
    start: datetime
    end: datetime


class LinkStore(Protocol):
    """Links kept beyond one process's memory, by opaque hex keys made here
    (:class:`tracescore.store.call_links.StoredLinks`)."""

    def find(self, keys: Collection[str]) -> Mapping[str, Sequence[str]]:
        """The trace ids stored under each of ``keys`` that has any."""
        ...

    def add(self, links: Iterable[tuple[str, str]]) -> None:
        """Store (key, trace id) pairs (a pair stored already stays as it is)."""
        ...


class CallLinks:
    """The response ids of runs with content, and the tool calls intermediate steps made, of
    the traces read so far (the latest ``limit`` of each); with ``stored``, the links a loop
    traced call by call needs are also kept there, and looked up there on a miss."""

    def __init__(self, limit: int = DEFAULT_LIMIT, stored: LinkStore | None = None) -> None:
        self._responses: _Recent[str] = _Recent(limit)
        self._calls: _Recent[str] = _Recent(limit)
        self._usages: _Recent[_Window] = _Recent(limit)
        self._steps: _Recent[tuple[str, ...]] = _Recent(limit)
        """Intermediate steps' response ids: the traces of the steps up to that one."""
        self.stored = stored
        self._unsaved: list[tuple[str, str]] = []
        """(key, trace id) pairs for ``stored``, written by :meth:`save`."""
        self._saving = threading.Lock()

    def remember(self, trace_id: str, runs: Iterable[AgentRun]) -> None:
        """Note what the trace's runs can be linked by: a run with content's response id, an
        intermediate step's tool calls."""
        runs = list(runs)
        saved = self.stored is not None and _step_only(runs)
        for run in runs:
            if run.kind != "llm":
                continue
            content = has_content(run)
            if (response := response_id(run)) and content:
                self._responses.put(response, trace_id)
            if content and (key := _usage_key(run)) and run.start_time and run.end_time:
                self._usages.put(key, _Window(trace_id, run.start_time, run.end_time))
            if awaits_tool_results(run):
                if response:
                    chain = (*self._continued(trace_id, run), trace_id)
                    self._steps.put(response, chain)
                    if saved:
                        step = _digest("step", response)
                        self._unsaved.extend((step, trace) for trace in chain)
                for call in _pending(run):  # not an earlier step's, remembered for it
                    for key in _made_keys(run, call):
                        self._calls.put(key, trace_id)
                        if saved:
                            self._unsaved.append((key, trace_id))

    def recall(self, runs: Iterable[AgentRun]) -> None:
        """Look up in ``stored``, in one query, what a batch's answering calls and steps
        continue that neither memory nor the batch itself holds: the steps other processes
        (or this one, before it forgot them) read. Called before the batch is remembered, so
        that a step continuing a stored one remembers the whole chain. Only a trace's primary
        model calls are asked about: in an agent's trace the steps are its own."""
        if self.stored is None:
            return
        calls = [run for run in runs if run.kind == "llm" and run.primary]
        steps = [run for run in calls if awaits_tool_results(run)]
        made = {key for run in steps for call in _pending(run) for key in _made_keys(run, call)}
        """The calls the batch's own steps made (remembered with them)."""
        responses = {_digest("step", found) for run in steps if (found := response_id(run))}
        wanted: dict[str, str | None] = {}
        """Stored key: the response id it stands for (None: a call key)."""
        for run in calls:
            previous = response_ids.previous_response_id(run.attributes)
            key = _digest("step", previous) if previous else None
            if previous and key and previous not in self._steps and key not in responses:
                wanted[key] = previous
            if awaits_tool_results(run):
                continue
            for call in _invocations(run):
                keys = [] if call.state in _PENDING else _sought_keys(run, call)
                if not any(key in self._calls or key in made for key in keys):
                    wanted.update(dict.fromkeys(keys))
        if not wanted:
            return
        for key, traces in self.stored.find(list(wanted)).items():
            if (previous := wanted.get(key)) is not None:
                self._steps.put(previous, tuple(sorted(traces)))
            elif traces:
                self._calls.put(key, traces[0])

    def joined(self, trace_id: str, earlier: Iterable[str]) -> None:
        """Note that ``trace_id`` was read together with the ``earlier`` traces, for
        :func:`read_with_steps` to read it so again."""
        if self.stored is not None:
            key = joined_key(trace_id)
            self._unsaved.extend((key, step) for step in earlier)

    def save(self) -> None:
        """Write what was noted for ``stored`` since the last save."""
        with self._saving:  # two batches may be read at once (the worker's lanes)
            rows, self._unsaved = self._unsaved, []
        if self.stored is not None and rows:
            self.stored.add(rows)

    def link(self, trace_id: str, runs: list[AgentRun]) -> TraceLinks:
        """The trace's runs without the twins read elsewhere, and the earlier traces whose
        steps its answering calls continue."""
        kept: list[AgentRun] = []
        twins: list[Twin] = []
        steps_from: dict[str, None] = {}
        for run in runs:
            if (twin := self._twin(trace_id, run)) is not None:
                twins.append(twin)
                continue
            kept.append(run)
            if run.kind == "llm" and not awaits_tool_results(run):
                steps_from.update(dict.fromkeys(self._continued(trace_id, run)))
                for call in _invocations(run):
                    if call.state in _PENDING:
                        continue
                    found = next(
                        (t for key in _sought_keys(run, call) if (t := self._calls.get(key))),
                        None,
                    )
                    if found is not None and found != trace_id:
                        steps_from[found] = None
        return TraceLinks(kept, twins, list(steps_from))

    def _continued(self, trace_id: str, run: AgentRun) -> tuple[str, ...]:
        """The other traces of the steps whose response the run continues (OpenAI Responses'
        ``previous_response_id``), earliest first."""
        previous = response_ids.previous_response_id(run.attributes)
        found = self._steps.get(previous) if previous else None
        return tuple(t for t in found if t != trace_id) if found else ()

    def _twin(self, trace_id: str, run: AgentRun) -> Twin | None:
        if run.kind != "llm" or has_content(run):
            return None
        if response := response_id(run):
            read_in = self._responses.get(response)
            return Twin(run, response, read_in) if read_in not in (None, trace_id) else None
        window = self._usages.get(key) if (key := _usage_key(run)) else None
        if (
            window is None
            or window.trace_id == trace_id
            or run.start_time is None
            or run.end_time is None
            or not window.start <= run.start_time <= run.end_time <= window.end
        ):
            return None
        return Twin(run, "", window.trace_id)


def _step_only(runs: Sequence[AgentRun]) -> bool:
    """Whether the trace is a loop's step traced on its own: it has primary model calls, and
    every one of them only asked for tools. Only such a trace writes the links to its calls
    (an agent's trace answers its calls itself)."""
    calls = [run for run in runs if run.primary]
    return bool(calls) and all(run.kind == "llm" and awaits_tool_results(run) for run in calls)


def joined_key(trace_id: str) -> str:
    """The stored key of the traces ``trace_id`` was read together with."""
    return _digest("joined", trace_id)


def response_id(run: AgentRun) -> str | None:
    """The provider's id of the response a model call's run read, when its span names one."""
    return response_ids.response_id(run.attributes)


def _usage_key(run: AgentRun) -> str | None:
    """What a request traced twice shows alike on both sides when no response id is named:
    its service and token counts (both counted: a request's tokens are rarely both equal to
    another's at the same moment; the time window is checked besides)."""
    usage = run.usage
    if not (usage.input_tokens and usage.output_tokens):
        return None
    return _digest(
        run.service_name or "", "usage", str(usage.input_tokens), str(usage.output_tokens)
    )


def _invocations(run: AgentRun) -> Iterable[ToolInvocation]:
    for message in run.output:
        for part in message.content.parts:
            if part.tool_invocation is not None:
                yield part.tool_invocation


def _pending(run: AgentRun) -> Iterable[ToolInvocation]:
    """The run's tool calls still waiting for their results (the calls a step made)."""
    return (call for call in _invocations(run) if call.state in _PENDING)


def _made_keys(run: AgentRun, call: ToolInvocation) -> list[str]:
    """What a step's tool call is remembered by: within its session, when its trace names
    one (:func:`_call_keys`)."""
    return _call_keys(run, call, run.conversation_id)


def _sought_keys(run: AgentRun, call: ToolInvocation) -> list[str]:
    """What an answering call looks a tool call it was sent up by: within its session, then
    among the steps that named none (never a step of another session)."""
    if not run.conversation_id:
        return _call_keys(run, call, None)
    return _call_keys(run, call, run.conversation_id) + _call_keys(run, call, None)


def _call_keys(run: AgentRun, call: ToolInvocation, session: str | None) -> list[str]:
    """What a tool call is known by across traces: the user's message of the turn with the
    call's id, and with its tool and arguments (for instrumentations that record no id on one
    side). The message is part of both: some providers number ids per response (``call_0``).
    ``session``: the conversation (session) id the calls' traces name, a part of both keys,
    so that two sessions sending the same message, where ids are numbered per response or
    missing, are never joined to each other's steps."""
    user = "\n".join(message_text(m) or "" for m in run.input.input_messages if m.role == "user")
    if not user.strip():
        return []
    scope = ("session", session) if session else ()
    keys = [_digest(*scope, user, "id", call.tool_call_id)] if call.tool_call_id else []
    if call.tool_name:
        arguments = orjson.dumps(call.args, option=orjson.OPT_SORT_KEYS, default=str)
        keys.append(_digest(*scope, user, "call", call.tool_name, arguments.decode()))
    return keys


def _digest(*pieces: str) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for piece in pieces:
        digest.update(piece.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def joined(trace: Trace, earlier: Sequence[Trace]) -> Trace:
    """The trace read together with the earlier traces of its loop: one trace (its id) holding
    all their spans and log records, so the loop assembly sees every call."""
    return Trace(
        trace.trace_id,
        spans=[span for part in (*earlier, trace) for span in part.spans],
        logs=[record for part in (*earlier, trace) for record in part.logs],
    )


def own_runs(trace: Trace, runs: Iterable[AgentRun]) -> list[AgentRun]:
    """The runs of a joined trace that ``trace``'s own spans fed (the earlier traces' other
    runs were kept by those traces)."""
    own = {span.span_id for span in trace.spans}
    return [run for run in runs if own.intersection(run.span_ids)]


def read_linked(
    traces: Mapping[str, Trace],
    links: CallLinks,
    extract: Callable[[Trace], list[AgentRun]],
    load: Callable[[list[str]], Mapping[str, Trace]],
) -> dict[str, TraceLinks]:
    """Each trace's runs, linked: ``extract`` reads a trace's runs, ``load`` fetches the
    earlier traces a loop continues (from the store, or the files read) when they are not
    among ``traces``. Every trace is remembered before any is linked, so a batch's traces link
    in either order. When ``load`` raises (the database), only the traces that needed what it
    was to load carry its error; the others are read."""
    runs = {trace_id: extract(trace) for trace_id, trace in traces.items()}
    links.recall(run for read in runs.values() for run in read)
    for trace_id, read in runs.items():
        links.remember(trace_id, read)
    result = {trace_id: links.link(trace_id, read) for trace_id, read in runs.items()}
    wanted = sorted({t for linked in result.values() for t in linked.steps_from if t not in traces})
    try:
        fetched = load(wanted) if wanted else {}
    except Exception as exc:  # noqa: BLE001 - the traces that needed the steps fail, not all
        fetched = {}
        for linked in result.values():
            if any(t not in traces for t in linked.steps_from):
                linked.error = f"loading the earlier steps failed: {type(exc).__name__}: {exc}"
    for trace_id, linked in result.items():
        earlier = _by_start(
            step for t in linked.steps_from if (step := traces.get(t) or fetched.get(t)) is not None
        )
        linked.steps_from = [trace.trace_id for trace in earlier]
        if earlier:
            trace = traces[trace_id]
            twins = {twin.run.span_id for twin in linked.twins}
            linked.runs = [
                run
                for run in own_runs(trace, extract(joined(trace, earlier)))
                if run.span_id not in twins
            ]
            links.joined(trace_id, linked.steps_from)
    links.save()
    return result


class StepSource(LinkStore, Protocol):
    """Stored links and the traces they name (:class:`tracescore.store.call_links.StoredLinks`)."""

    def load(self, trace_ids: list[str]) -> Mapping[str, Trace]:
        """The stored traces of ``trace_ids`` that still have spans."""
        ...


def joined_from(trace_id: str, stored: LinkStore) -> list[str]:
    """The traces ``trace_id`` was read together with when scored (:meth:`CallLinks.joined`):
    none for any trace but a loop's answering call (one primary-key lookup)."""
    key = joined_key(trace_id)
    return sorted(stored.find([key]).get(key, ()))


def read_with_steps(
    trace: Trace,
    stored: StepSource,
    runs: Callable[[Trace], Iterable[AgentRun]],
    earlier_ids: Sequence[str] | None = None,
) -> Iterable[AgentRun]:
    """The trace's runs as scoring read them (``runs`` reads a trace's): together with the
    traces its loop was joined from when it was (``earlier_ids``, else :func:`joined_from`),
    else alone. A step's trace whose spans are gone is read without it."""
    if earlier_ids is None:
        earlier_ids = joined_from(trace.trace_id, stored)
    earlier = _by_start(stored.load(list(earlier_ids)).values()) if earlier_ids else []
    if not earlier:
        return runs(trace)
    return own_runs(trace, runs(joined(trace, earlier)))


def _by_start(traces: Iterable[Trace]) -> list[Trace]:
    """Traces in the order their first spans started (a loop's steps in the order made)."""
    return sorted(traces, key=lambda t: min((s.start_time_ns for s in t.spans), default=0))
