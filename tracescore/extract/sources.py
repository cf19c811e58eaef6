"""What tracescore made of each source of a trace: the facts behind the sources view.

A source is one (service, instrumentation scope) pair: a library inside an application. For
every trace the pipeline reads, :func:`read_sources` says per source how many spans it sent,
how many of the trace's runs were rebuilt from its spans and how many of those carry content,
which convention read it, and, when the trace gave nothing to score, why, as a reason code of
bounded cardinality (a metric label) and a sentence a user can act on.

A trace is *read* when at least one of its runs has content (:func:`~tracescore.extract.content.has_content`);
then its sources get no reason (a scope of HTTP spans beside a well-read agent is not a
problem), except CrewAI's instrumentor without LLM spans, whose runs are read from what the
crew reported, not from the model calls. When it is *unread*, every source gets the most
specific reason that fits, and the trace the most telling of its sources'
(:data:`REASON_PRIORITY`).

Knowing which attributes and scopes belong to which AI library is span parsing, so it lives
here in :mod:`tracescore.extract`; the pipeline only counts what this module returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracescore.extract.base import Convention
from tracescore.extract.content import has_content
from tracescore.extract.model import AgentRun
from tracescore.extract.registry import CONVENTIONS, convention_for
from tracescore.spans import Span, Trace

CONTENT_NOT_CAPTURED = "content_not_captured"
CREWAI_NO_LLM_SPANS = "crewai_no_llm_spans"
UNKNOWN_CONVENTION = "unknown_convention"
NO_RUNS = "no_runs"
NO_AI_SPANS = "no_ai_spans"
REASON_PRIORITY = (
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
    """The convention that read the source: of its runs, else of its first claimed span."""
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
        return self.reason is not None


def read_sources(
    trace: Trace, runs: Sequence[AgentRun], conventions: list[Convention] = CONVENTIONS
) -> TraceReading:
    """Each source's spans, runs and runs with content in ``trace`` (``runs`` as extracted from
    it with ``conventions``, the claim order that also names an unread source's convention),
    and the reasons when no run has content. Never raises on span content: it reads only
    names, scope names and attribute keys."""
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
    for run in runs:
        if (source := of_span.get(run.span_id)) is None:
            continue
        source.runs += 1
        source.convention = source.convention or run.convention
        if has_content(run):
            source.runs_with_content += 1
            read = True
    reading = TraceReading(list(sources.values()))
    if not read:
        _explain(reading, conventions, any_runs=bool(runs), llm_spans=_has_llm_spans(trace))
    elif (crews := [s for s in reading.sources if s.scope == _CREWAI_SCOPE]) and not _has_llm_spans(
        trace
    ):
        for crew in crews:
            crew.reason, crew.detail = CREWAI_NO_LLM_SPANS, _CREWAI_DETAIL
    return reading


def _has_llm_spans(trace: Trace) -> bool:
    """Whether an OpenInference LLM span is in the trace (CrewAI's instrumentor sends none by
    default: its crews' model calls are not traced)."""
    return any(span.attributes.get("openinference.span.kind") == "LLM" for span in trace.spans)


def _explain(
    reading: TraceReading, conventions: list[Convention], *, any_runs: bool, llm_spans: bool
) -> None:
    """Give every source of an unread trace its reason, and the trace the most telling one."""
    for source in reading.sources:
        if source.convention is None:
            source.convention = next(
                (
                    found.NAME
                    for span in source.members
                    if (found := convention_for(span, conventions)) is not None
                ),
                None,
            )
        source.reason, source.detail = _reason(source, any_runs=any_runs, llm_spans=llm_spans)
    ranked = min(
        reading.sources, key=lambda s: REASON_PRIORITY.index(s.reason or NO_AI_SPANS), default=None
    )
    if ranked is not None:
        reading.reason, reading.service = ranked.reason, ranked.service


def _reason(source: SourceReading, *, any_runs: bool, llm_spans: bool) -> tuple[str, str]:
    if source.scope == _CREWAI_SCOPE and not llm_spans:
        return CREWAI_NO_LLM_SPANS, _CREWAI_DETAIL
    if source.convention is not None and any_runs:
        return (
            CONTENT_NOT_CAPTURED,
            f"message content is not captured: {_content_switch(source.scope)}",
        )
    keys = _attribute_keys(source.members)
    if source.convention is not None:
        return NO_RUNS, (
            f"spans read as {source.convention} but no agent, LLM or tool run among them "
            f"(span names: {', '.join(map(_shown, sorted({s.name for s in source.members})[:_ATTRIBUTES_SHOWN]))})"
        )
    if _from_ai_library(source):
        return UNKNOWN_CONVENTION, (
            f"unknown convention: scope {_shown(source.scope) or '(unnamed)'}, attributes {keys}: an AI "
            "library's spans tracescore has no reader for"
        )
    return NO_AI_SPANS, (
        f"unknown convention: scope {_shown(source.scope) or '(unnamed)'}, attributes {keys}: no attribute or "
        "scope of a known AI library (gen_ai.*, OpenInference, OpenLLMetry, Langfuse, MLflow, ai.*)"
    )


_GENAI_UTIL_SWITCH = (
    "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT with "
    "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental (instrumentations built on "
    "opentelemetry-util-genai accept NO_CONTENT, SPAN_ONLY, EVENT_ONLY or SPAN_AND_EVENT and "
    "capture nothing for true; releases older than it, e.g. opentelemetry-instrumentation-openai-v2 "
    "up to 2.3b0, take true)"
)
"""The OpenTelemetry contrib GenAI instrumentations' switch, in a form every release accepts."""
_CONTENT_SWITCHES = (
    (
        "autogen",
        "AutoGen's own spans carry names and ids only, whatever is set: instrument its model "
        "client too (e.g. opentelemetry-instrumentation-openai-v2; for it, "
        + _GENAI_UTIL_SWITCH
        + ")",
    ),
    (
        "semantic_kernel",
        "set SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true and "
        "export its logs as well as its traces",
    ),
    (
        "com.anthropic.sdk",
        "the Anthropic SDK's own spans are metadata-only by default: set "
        "ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content (or the client option "
        'open_telemetry={"traces": {"content_mode": "content"}}). Where another instrumentation '
        "(OpenLLMetry's AnthropicInstrumentor, …) already traces these calls, the SDK's spans "
        "repeat each request as a trace of its own: turn them off with ANTHROPIC_OPEN_TELEMETRY=false",
    ),
    ("opentelemetry.instrumentation.openai_v2", _GENAI_UTIL_SWITCH),
    (
        "opentelemetry.instrumentation.google_genai",
        "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT (it accepts "
        "NO_CONTENT, SPAN_ONLY, EVENT_ONLY or SPAN_AND_EVENT, and captures nothing for any other "
        "value, true included)",
    ),
    (
        "gcp.vertex.agent",
        "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true and export ADK's logs as "
        "well as its traces (the content is on its log records)",
    ),
    (
        "litellm",
        "LiteLLM's otel callback sends content unless litellm.turn_off_message_logging is set; "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true puts it on events only: set it to "
        "SPAN_AND_EVENT, or leave it unset",
    ),
    (
        "opentelemetry.instrumentation.",
        "OpenLLMetry's instrumentations send content unless TRACELOOP_TRACE_CONTENT=false: set "
        "it to true (or unset it); for an OpenTelemetry contrib instrumentation, "
        + _GENAI_UTIL_SWITCH,
    ),
    (
        "traceloop",
        "OpenLLMetry sends content unless TRACELOOP_TRACE_CONTENT=false: set it to true (or "
        "unset it)",
    ),
)
"""What turns content on, by scope prefix (the first that fits), each value one the library
accepts (read from its source)."""
_DEFAULT_CONTENT_SWITCH = (
    "turn on the library's content capture; for an OpenTelemetry GenAI instrumentation, "
    + _GENAI_UTIL_SWITCH
)


def _content_switch(scope: str) -> str:
    """What turns message content on for the library of ``scope``."""
    return next(
        (switch for prefix, switch in _CONTENT_SWITCHES if scope.startswith(prefix)),
        _DEFAULT_CONTENT_SWITCH,
    )


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
    keys = sorted({key for span in spans for key in span.attributes})
    shown = ", ".join(map(_shown, keys[:_ATTRIBUTES_SHOWN]))
    return (
        f"{shown}, … ({len(keys)} in all)" if len(keys) > _ATTRIBUTES_SHOWN else shown or "(none)"
    )
