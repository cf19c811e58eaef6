"""What tracescore made of each source of a trace: the facts behind the sources view.

A source is one (service, instrumentation scope) pair: a library inside an application. For
every trace the pipeline reads, :func:`read_sources` says per source how many spans it sent,
how many of the trace's runs were rebuilt from its spans and how many of those carry content,
which convention read it, and, when the trace gave nothing to score, why, as a reason code of
bounded cardinality (a metric label) and a sentence a user can act on.

A source counts every run its spans fed (a hand-written loop's run is anchored to the user's
span, built from the client's calls and the user's tool spans: each of those sources counts it).

A trace is *read* when at least one of its runs has content (:func:`~tracescore.extract.content.has_content`);
then a source that fed its runs gets no reason, and every source with spans but no run says
why: an AI library's spans were read but made no run, or no reader knows them; a scope of no AI
library (HTTP spans beside a well-read agent) is ``no_ai_spans``, whose words say there is
nothing to change; the same requests another trace read are ``read_elsewhere``
(:mod:`tracescore.extract.linked`). CrewAI's instrumentor without LLM spans has a reason too:
its runs are read from what the crew reported, not from the model calls. When it is *unread*, every source gets the most specific reason that fits, and the
trace the most telling of its sources' (:data:`REASON_PRIORITY`). Content not captured is
said only when no attribute anywhere in the trace holds content
(:mod:`tracescore.extract.unread_content`): content no reader took is an unknown convention,
whose advice names the keys and the configuration's ``conventions:`` block.

Knowing which attributes and scopes belong to which AI library is span parsing, so it lives
here in :mod:`tracescore.extract`; the pipeline only counts what this module returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracescore.extract.base import Convention
from tracescore.extract.content import has_content
from tracescore.extract.content_switches import content_switch
from tracescore.extract.linked import Twin
from tracescore.extract.model import AgentRun
from tracescore.extract.registry import CONVENTIONS, convention_for
from tracescore.extract.unread_content import content_keys, event_content
from tracescore.spans import Span, Trace

READ_ELSEWHERE = "read_elsewhere"
CONTENT_NOT_CAPTURED = "content_not_captured"
CREWAI_NO_LLM_SPANS = "crewai_no_llm_spans"
UNKNOWN_CONVENTION = "unknown_convention"
NO_RUNS = "no_runs"
NO_AI_SPANS = "no_ai_spans"
REASON_PRIORITY = (
    READ_ELSEWHERE,
    CREWAI_NO_LLM_SPANS,
    CONTENT_NOT_CAPTURED,
    UNKNOWN_CONVENTION,
    NO_RUNS,
    NO_AI_SPANS,
)
"""Every reason code, the most telling first: an unread trace takes its first source's reason
in this order (a GenAI scope without content says more than the HTTP scope beside it)."""

_AI_ATTRIBUTE_PREFIXES = (
    "gen_ai.",
    "llm.",
    "openinference.",
    "traceloop.",
    "langfuse.",
    "mlflow.",
    "ai.",
    "input.value",
    "output.value",
    "tool.name",
    "embedding.",
    "retrieval.",
    "lmnr.",
    "logfire.msg",
)
"""Attribute key prefixes of the AI conventions known to exist (GenAI, OpenInference,
OpenLLMetry, Langfuse, MLflow, the Vercel AI SDK, …), read or not."""
_AI_SCOPE_PREFIXES = (
    "openinference.",
    "opentelemetry.instrumentation.openai",
    "opentelemetry.instrumentation.anthropic",
    "opentelemetry.instrumentation.langchain",
    "opentelemetry.instrumentation.llamaindex",
    "opentelemetry.util.genai",
    "langfuse",
    "mlflow",
    "openlit",
    "strands",
    "gcp.vertex.agent",
    "google.adk",
    "autogen",
    "semantic_kernel",
    "crewai",
    "smolagents",
    "llama_index",
    "pydantic-ai",
    "pydantic_ai",
    "mastra",
    "litellm",
    "haystack",
    "dspy",
    "agno",
    "beeai",
)
"""Instrumentation scope prefixes of AI libraries, for spans that carry no telling attribute
(the Vercel AI SDK's scope is ``ai`` exactly: :data:`_AI_SCOPES`)."""
_AI_SCOPES = frozenset(("ai",))
_CREWAI_SCOPE = "openinference.instrumentation.crewai"
_CREWAI_DETAIL = (
    "CrewAI instrumentor without use_event_listener: no LLM spans, so the model calls' prompts and "
    "answers are not traced (turn the instrumentor's use_event_listener on, or instrument the LLM "
    "client too)"
)
_ATTRIBUTES_SHOWN = 6
_NAME_CHARS = 100
"""Longest span name, scope or attribute key quoted in a reason (they come from the spans)."""


@dataclass(slots=True)
class SourceReading:
    """One source's share of one trace."""

    service: str
    scope: str
    spans: int = 0
    runs: int = 0
    runs_with_content: int = 0
    convention: str | None = None
    """The convention that read the source: the one claiming its first claimed span, else its
    runs'. Not the runs' first: a hand-written loop's run is read by its calls' convention but
    anchored to a span of another source (Logfire's ``logfire.span``), which is not read so."""
    reason: str | None = None
    """A code of :data:`REASON_PRIORITY` when the trace was unread (or a CrewAI source sent no
    LLM span), else None."""
    detail: str | None = None
    """The reason in words a user can act on."""
    members: list[Span] = field(default_factory=list, repr=False)


@dataclass(slots=True)
class TraceReading:
    """What a trace gave: its sources, and why it gave nothing to score when it did not."""

    sources: list[SourceReading]
    reason: str | None = None
    """Why the trace gave no run with content; None when it gave one."""
    service: str | None = None
    """The service of the source whose reason is the trace's."""

    @property
    def unread(self) -> bool:
        """No run with content, and not because another trace read the same requests
        (:data:`READ_ELSEWHERE`: those are read, and counted apart)."""
        return self.reason is not None and self.reason != READ_ELSEWHERE


def read_sources(
    trace: Trace,
    runs: Sequence[AgentRun],
    conventions: list[Convention] = CONVENTIONS,
    twins: Sequence[Twin] = (),
) -> TraceReading:
    """Each source's spans, runs and runs with content in ``trace`` (``runs`` as extracted from
    it with ``conventions``, the claim order that also names an unread source's convention),
    and the reasons when no run has content. ``twins``: the trace's content-less runs not kept
    because another trace read the same requests with content (:mod:`tracescore.extract.linked`);
    the sources that sent them say so. Never raises on span content: it reads only names,
    scope names, attribute keys and the twins' response ids."""
    sources: dict[tuple[str, str], SourceReading] = {}
    of_span: dict[str, SourceReading] = {}
    for span in trace.spans:
        key = (span.resource.service_name, span.scope.name)
        if (source := sources.get(key)) is None:
            source = sources[key] = SourceReading(*key)
        source.spans += 1
        source.members.append(span)
        of_span[span.span_id] = source
    read = False
    runs_convention: dict[int, str] = {}
    for run in runs:
        content = has_content(run)
        read = read or content
        # Every source whose spans fed the run counts it (once): a loop's run is anchored to a
        # user's span, its calls come from the client's instrumentation, its tools from a third.
        fed = {id(found): found for span_id in run.span_ids if (found := of_span.get(span_id))}
        for source in fed.values():
            source.runs += 1
            source.runs_with_content += content
            runs_convention.setdefault(id(source), run.convention)
    reading = TraceReading(list(sources.values()))
    for source in reading.sources:
        if source.runs:
            _name_convention(source, conventions)
            source.convention = source.convention or runs_convention.get(id(source))
    if not read:
        _explain(
            reading,
            conventions,
            any_runs=bool(runs),
            llm_spans=_has_llm_spans(trace),
            events=event_content(trace.logs),
        )
        if twins:
            _read_elsewhere(reading, twins, of_span)
            reading.reason = READ_ELSEWHERE
            reading.service = next(
                (s.service for s in reading.sources if s.reason == READ_ELSEWHERE), None
            )
        return reading
    _read_elsewhere(reading, twins, of_span)
    if (crews := [s for s in reading.sources if s.scope == _CREWAI_SCOPE]) and not _has_llm_spans(
        trace
    ):
        for crew in crews:
            crew.reason, crew.detail = CREWAI_NO_LLM_SPANS, _CREWAI_DETAIL
    for idle in reading.sources:
        if idle.runs == 0 and idle.reason is None:
            _explain_idle(idle, conventions)
    return reading


def _read_elsewhere(
    reading: TraceReading, twins: Sequence[Twin], of_span: dict[str, SourceReading]
) -> None:
    """The sources whose content-less calls another trace read with content: the same requests
    traced twice (a client SDK's own telemetry beside another instrumentation of it)."""
    for twin in twins:
        for span_id in twin.run.span_ids:
            if (source := of_span.get(span_id)) is None or source.reason == READ_ELSEWHERE:
                continue
            off = next((how for prefix, how in _TURN_OFF if source.scope.startswith(prefix)), "")
            source.reason, source.detail = (
                READ_ELSEWHERE,
                (
                    f"its model calls were read with their content from another trace "
                    f"({_matched(twin)}, trace {twin.read_in}): the same requests traced "
                    f"twice by two instrumentations, counted once. To send them once, turn one "
                    f"off{off}"
                ),
            )


_TURN_OFF = (
    ("com.anthropic.sdk", " (the Anthropic SDK's own: ANTHROPIC_OPEN_TELEMETRY=false)"),
    (
        "mistralai_sdk_tracer",
        " (the Mistral SDK's own traces through the global tracer provider, with no switch: "
        "hand the other instrumentation a tracer_provider instead of setting it globally)",
    ),
)
"""How to turn off an SDK's own spans that repeat another instrumentation's, by scope prefix."""


def _matched(twin: Twin) -> str:
    """How the twin was matched to the call read with content."""
    if twin.response_id:
        return f"response id {_shown(twin.response_id)}"
    return "the same service and token counts, inside that call's time"


def _has_llm_spans(trace: Trace) -> bool:
    """Whether an OpenInference LLM span is in the trace (CrewAI's instrumentor sends none by
    default: its crews' model calls are not traced)."""
    return any(span.attributes.get("openinference.span.kind") == "LLM" for span in trace.spans)


def _explain(
    reading: TraceReading,
    conventions: list[Convention],
    *,
    any_runs: bool,
    llm_spans: bool,
    events: list[str],
) -> None:
    """Give every source of an unread trace its reason, and the trace the most telling one.
    ``events``: the trace's log events that hold content (no reader took it either)."""
    unread: list[tuple[str, list[str]]] = [
        (f"scope {_shown(source.scope) or '(unnamed)'}", keys)
        for source in reading.sources
        if (keys := content_keys(source.members))
    ]
    if events:
        unread.append(("log records", events))
    for source in reading.sources:
        _name_convention(source, conventions)
        source.reason, source.detail = _reason(
            source, unread, any_runs=any_runs, llm_spans=llm_spans
        )
    ranked = min(
        reading.sources, key=lambda s: REASON_PRIORITY.index(s.reason or NO_AI_SPANS), default=None
    )
    if ranked is not None:
        reading.reason, reading.service = ranked.reason, ranked.service


def _name_convention(source: SourceReading, conventions: list[Convention]) -> None:
    """The convention that claims the source's first claimed span, when no run named one."""
    if source.convention is None:
        source.convention = next(
            (
                found.NAME
                for span in source.members
                if (found := convention_for(span, conventions)) is not None
            ),
            None,
        )


def _explain_idle(source: SourceReading, conventions: list[Convention]) -> None:
    """Why a source fed none of a read trace's runs: an AI library's spans were read but made
    no run, or no reader knows them; any other source's spans are no AI library's (an HTTP
    server's beside the agent), which is said so, with nothing to change."""
    _name_convention(source, conventions)
    if source.convention is not None:
        source.reason, source.detail = (
            NO_RUNS,
            (
                f"spans read as {source.convention} but none became a run "
                f"(span names: {_span_names(source)}); this trace's runs came from other scopes' spans"
            ),
        )
    elif _from_ai_library(source) or content_keys(source.members):
        source.reason, source.detail = UNKNOWN_CONVENTION, _unknown(source)
    else:
        source.reason, source.detail = (
            NO_AI_SPANS,
            (
                f"no attribute or scope of a known AI library (scope "
                f"{_shown(source.scope) or '(unnamed)'}, attributes {_attribute_keys(source.members)}): "
                "spans of the application around the agent, nothing to score in them; this trace's "
                "runs came from other scopes' spans, nothing to change"
            ),
        )


def _reason(
    source: SourceReading,
    unread: list[tuple[str, list[str]]],
    *,
    any_runs: bool,
    llm_spans: bool,
) -> tuple[str, str]:
    """The source's reason; ``unread``: where the trace holds content (a scope, or its log
    records) and under which keys (no run took it, or the trace would be read)."""
    if source.scope == _CREWAI_SCOPE and not llm_spans:
        return CREWAI_NO_LLM_SPANS, _CREWAI_DETAIL
    if source.convention is not None and any_runs:
        if not unread:
            return (
                CONTENT_NOT_CAPTURED,
                f"message content is not captured: {content_switch(source.scope)}",
            )
        where = "; ".join(f"{holder}: {_listed(keys)}" for holder, keys in unread)
        return UNKNOWN_CONVENTION, (
            f"runs read as {source.convention} carry no content, but the trace holds content no "
            f"reader understood ({where}): {_DECLARE}"
        )
    if source.convention is not None:
        return NO_RUNS, (
            f"spans read as {source.convention} but no agent, LLM or tool run among them "
            f"(span names: {_span_names(source)})"
        )
    if _from_ai_library(source) or content_keys(source.members):
        return UNKNOWN_CONVENTION, _unknown(source)
    keys = _attribute_keys(source.members)
    return NO_AI_SPANS, (
        f"unknown convention: scope {_shown(source.scope) or '(unnamed)'}, attributes {keys}: no attribute or "
        "scope of a known AI library (gen_ai.*, OpenInference, OpenLLMetry, Langfuse, MLflow, ai.*)"
    )


_DECLARE = (
    "declare how to read them in the configuration's `conventions:` block "
    "(docs/span-formats.md#teaching-tracescore-a-new-library)"
)


def _unknown(source: SourceReading) -> str:
    """An unread AI library's source: its content keys (else a few of its keys) and what to do."""
    content = content_keys(source.members)
    keys = (
        f"content in {_listed(content)}"
        if content
        else f"attributes {_attribute_keys(source.members)}"
    )
    return (
        f"unknown convention: scope {_shown(source.scope) or '(unnamed)'}, {keys}: spans no reader "
        f"of tracescore knows; {_DECLARE}"
    )


def _span_names(source: SourceReading) -> str:
    return ", ".join(map(_shown, sorted({s.name for s in source.members})[:_ATTRIBUTES_SHOWN]))


def _listed(keys: Sequence[str]) -> str:
    shown = ", ".join(map(_shown, keys[:_ATTRIBUTES_SHOWN]))
    return f"{shown}, … ({len(keys)} in all)" if len(keys) > _ATTRIBUTES_SHOWN else shown


def _from_ai_library(source: SourceReading) -> bool:
    if source.scope in _AI_SCOPES or source.scope.startswith(_AI_SCOPE_PREFIXES):
        return True
    return any(
        key.startswith(_AI_ATTRIBUTE_PREFIXES) for span in source.members for key in span.attributes
    )


def _shown(name: str) -> str:
    """A name from the spans as a reason quotes it: cut to :data:`_NAME_CHARS`."""
    return name if len(name) <= _NAME_CHARS else name[:_NAME_CHARS] + "…"


def _attribute_keys(spans: Sequence[Span]) -> str:
    """A few of the attribute keys the spans carry (the keys only: values are the user's data)."""
    return _listed(sorted({key for span in spans for key in span.attributes})) or "(none)"
