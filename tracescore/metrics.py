"""Prometheus metrics of the whole service, served at ``GET /metrics``.

A leaf module (it imports nothing from tracescore), so every part may count what it does
without depending on the part that serves the numbers.

All metric objects live here, on one dedicated :data:`REGISTRY` (plus the process, platform and
GC collectors), so ``/metrics`` exports exactly tracescore's series and libraries that register
on prometheus-client's default registry cannot clash with them. They are process-wide: the
ingest and pipeline code call the objects and helpers below directly, tests read them back with
``REGISTRY.get_sample_value``.

With several service processes (``server.processes``) a scrape reaches whichever process the
kernel hands the connection to, so the supervisor runs them in prometheus-client's
multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``): every process keeps its values in a file of
that directory and ``/metrics`` sums them over all processes (gauges as their ``multiprocess_mode``
says); the per-process collectors (CPU, memory, GC) are then left out.

Label values are bounded by configuration (binding, scorer and judge model names, transports),
never by traffic (no trace ids or agent names), so series counts stay small; the one exception,
``tracescore_traces_unread``'s ``service``, names the applications sending traces, which are few.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

REGISTRY = CollectorRegistry(auto_describe=True)
for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)

_SCORE_BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

# --- ingest ---------------------------------------------------------------------------------

spans_received = Counter(
    "tracescore_spans_received", "Spans accepted and stored.", ["transport"], registry=REGISTRY
)
"""``transport`` is ``http`` or ``grpc``."""
logs_received = Counter(
    "tracescore_logs_received", "Log records accepted and stored.", ["transport"], registry=REGISTRY
)
spans_rejected = Counter(
    "tracescore_spans_rejected",
    "Spans or log records refused as invalid (partial success).",
    ["transport"],
    registry=REGISTRY,
)
auth_failures = Counter(
    "tracescore_auth_failures",
    "Requests that presented a wrong API key, login key or session, by surface (http, grpc, "
    "login).",
    ["surface"],
    registry=REGISTRY,
)
auth_throttled = Counter(
    "tracescore_auth_throttled",
    "Requests refused unchecked (429 / RESOURCE_EXHAUSTED) because their client address failed "
    "too many key checks in the current window, by surface.",
    ["surface"],
    registry=REGISTRY,
)
export_requests = Counter(
    "tracescore_export_requests",
    "OTLP export requests by outcome: ok, invalid, too_large, busy, unavailable, timeout (body "
    "not received in time: 408), disconnected (the client left mid-body).",
    ["transport", "signal", "outcome"],
    registry=REGISTRY,
)

journal_backlog = Gauge(
    "tracescore_ingest_journal_bytes",
    "Acknowledged export request bytes (protobuf or JSON) journaled that wait to be unpacked into rows.",
    registry=REGISTRY,
    multiprocess_mode="livesum",
)

journal_quarantined = Counter(
    "tracescore_ingest_quarantined",
    "Acknowledged export requests that could not be stored and "
    "were set aside in the journal (listed by GET /api/ingest/quarantine).",
    registry=REGISTRY,
)
text_replaced = Counter(
    "tracescore_text_replaced",
    "Text values stored with NUL characters or unpaired surrogates "
    "replaced by U+FFFD, by where: ingest (spans, logs), scores, conversation_turns, sources or feedback.",
    ["where"],
    registry=REGISTRY,
)

# --- assembly and pipeline ------------------------------------------------------------------

traces_ready = Counter(
    "tracescore_traces_ready", "Traces that became complete and ready to score.", registry=REGISTRY
)
traces_scored = Counter(
    "tracescore_traces_scored", "Traces whose scoring finished (any outcome).", registry=REGISTRY
)
future_span_times = Counter(
    "tracescore_future_span_times",
    "Spans stored with a time further in the future of their arrival than assembly.max_clock_skew: "
    "their trace is timed by their arrival instead.",
    registry=REGISTRY,
)
traces_parked = Counter(
    "tracescore_traces_failed",
    "Traces parked as failed, by why: errors (scoring raised workers' max_attempts times) or "
    "lease_expired (claimed max_attempts times, each holder's lease running out).",
    ["reason"],
    registry=REGISTRY,
)
completions_dropped = Counter(
    "tracescore_stale_completions",
    "Scored traces whose completion was dropped: their lease had expired and passed to another worker.",
    registry=REGISTRY,
)
# Sampled from the database, which every process sees alike: the latest sample of any process.
queue_depth = Gauge(
    "tracescore_queue_depth",
    "Traces ready and waiting for a scoring worker.",
    registry=REGISTRY,
    multiprocess_mode="livemostrecent",
)
traces_in_state = Gauge(
    "tracescore_traces",
    "Traces not yet scored, by assembly state (pending, ready, claimed), sampled from the database.",
    ["state"],
    registry=REGISTRY,
    multiprocess_mode="livemostrecent",
)
sampling_decisions = Counter(
    "tracescore_sampling_decisions",
    "Runs that passed a binding's filter, by sampling verdict.",
    ["binding", "sampled"],
    registry=REGISTRY,
)
traces_unread = Counter(
    "tracescore_traces_unread",
    "Traces the pipeline read that gave no run with content, by service and reason code "
    "(content_not_captured, crewai_no_llm_spans, unknown_convention, no_runs, no_ai_spans; traces "
    "read elsewhere are counted apart): "
    "GET /api/sources says which library and what to change. At most 100 services are named; "
    "later ones count as (other).",
    ["service", "reason"],
    registry=REGISTRY,
)
traces_read_elsewhere = Counter(
    "tracescore_traces_read_elsewhere",
    "Traces the pipeline read whose model calls another trace had read with their content "
    "(the same requests traced twice, by a client SDK's own telemetry beside another "
    "instrumentation), by service: counted once, apart from the unread traces. At most 100 "
    "services are named; later ones count as (other).",
    ["service"],
    registry=REGISTRY,
)
scores = Counter(
    "tracescore_scores",
    "Score rows written, by binding, scorer and status.",
    ["binding", "scorer", "status"],
    registry=REGISTRY,
)
score_value = Histogram(
    "tracescore_score",
    "Distribution of successful scores.",
    ["binding", "scorer"],
    buckets=_SCORE_BUCKETS,
    registry=REGISTRY,
)
scorer_latency = Histogram(
    "tracescore_scorer_latency_seconds",
    "Time to score one run with one scorer, judge calls included.",
    ["binding", "scorer"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)

# --- judges ---------------------------------------------------------------------------------

judge_calls = Counter(
    "tracescore_judge_calls",
    "LLM judge calls by outcome (ok, error, cached).",
    ["model", "outcome"],
    registry=REGISTRY,
)
judge_tokens = Counter(
    "tracescore_judge_tokens",
    "Judge tokens, by direction (input, output).",
    ["model", "direction"],
    registry=REGISTRY,
)
judge_cost = Counter(
    "tracescore_judge_cost_usd", "Judge spend in US dollars.", ["model"], registry=REGISTRY
)
judge_repairs = Counter(
    "tracescore_judge_repairs",
    "Repair requests sent to a judge whose answer was invalid JSON, did not match its schema or "
    "gave the wrong number of verdicts (answers read tolerantly need none).",
    ["model"],
    registry=REGISTRY,
)
judge_latency = Histogram(
    "tracescore_judge_latency_seconds",
    "Latency of one judge call.",
    ["model"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)

# --- alerts ---------------------------------------------------------------------------------

alerts_firing = Gauge(
    "tracescore_alerts_firing",
    "Segments of a rule currently firing.",
    ["rule"],
    registry=REGISTRY,
    multiprocess_mode="livemostrecent",  # set by the alerting leader, whichever process it is
)
alert_evaluations = Counter(
    "tracescore_alert_evaluations",
    "Rule evaluation rounds run by this instance as leader.",
    registry=REGISTRY,
)
alert_evaluation_seconds = Histogram(
    "tracescore_alert_evaluation_seconds",
    "Duration of one evaluation round of all rules.",
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
alert_notifications = Counter(
    "tracescore_alert_notifications",
    "Alert notifications by channel and outcome (sent, failed).",
    ["channel", "outcome"],
    registry=REGISTRY,
)


# --- retention ------------------------------------------------------------------------------

retention_removed = Counter(
    "tracescore_retention_removed",
    "Rows removed by retention, by kind of data (spans, logs, "
    "scores, sampling_decisions, judge_cache, alerts; traces: the queue rows of pruned traces; "
    "call_links: links between the traces of a loop traced call by call).",
    ["kind"],
    registry=REGISTRY,
)
retention_last_pass = Gauge(
    "tracescore_retention_last_pass_timestamp_seconds",
    "When the last complete retention pass ended (Unix time).",
    registry=REGISTRY,
    multiprocess_mode="max",
)
retention_last_pass_seconds = Gauge(
    "tracescore_retention_last_pass_duration_seconds",
    "How long the last complete retention pass took.",
    registry=REGISTRY,
    multiprocess_mode="livemostrecent",
)


def observe_score(
    binding: str, scorer: str, status: str, score: float | None, latency_seconds: float
) -> None:
    """Record one score row: its status, its value when ``ok``, and how long scoring took."""
    observe_scores(binding, scorer, status, [score], [latency_seconds])


def observe_scores(
    binding: str,
    scorer: str,
    status: str,
    values: Sequence[float | None],
    latencies_seconds: Sequence[float],
) -> None:
    """Record score rows of one binding, scorer and status at once (a scoring process sends
    its rows added up so): each label set is looked up once, not once a row."""
    scores.labels(binding, scorer, status).inc(len(values))
    if status == "ok":
        histogram = score_value.labels(binding, scorer)
        for value in values:
            if value is not None:
                histogram.observe(value)
    if not status.startswith("skipped"):  # skipped runs were never scored: no latency to tell
        latency = scorer_latency.labels(binding, scorer)
        for seconds in latencies_seconds:
            latency.observe(seconds)


def judge_call(
    model: str,
    input_tokens: int,
    output_tokens: int,
    cost_usd: float,
    latency_seconds: float,
    *,
    outcome: str = "ok",
    repairs: int = 0,
) -> None:
    """Record one judge call; ``outcome`` is ``ok``, ``error`` or ``cached`` (no tokens spent);
    ``repairs`` the repair requests it needed (a failed call's tokens count as well)."""
    judge_calls.labels(model, outcome).inc()
    if repairs:
        judge_repairs.labels(model).inc(repairs)
    judge_tokens.labels(model, "input").inc(input_tokens)
    judge_tokens.labels(model, "output").inc(output_tokens)
    judge_cost.labels(model).inc(cost_usd)
    if outcome != "cached":
        judge_latency.labels(model).observe(latency_seconds)


def sampling_decision(binding: str, sampled: bool, count: int = 1) -> None:
    sampling_decisions.labels(binding, "true" if sampled else "false").inc(count)


def traces_done(count: int) -> None:
    """Traces whose scoring finished (any outcome, unsampled ones included)."""
    traces_scored.inc(count)


UNREAD_SERVICES_LABELLED = 100
"""Distinct ``service`` label values of ``tracescore_traces_unread`` (and ``…_read_elsewhere``); later services count as
``(other)``. The name comes from the spans, so a client could otherwise grow the metric without
bound."""
_unread_services: set[str] = set()


def trace_unread(service: str, reason: str, count: int = 1) -> None:
    """Traces that gave no run with content (:mod:`tracescore.extract.sources` names the reasons)."""
    traces_unread.labels(_service_label(service), reason).inc(count)


def trace_read_elsewhere(service: str, count: int = 1) -> None:
    """Traces whose requests another trace read with content (twins: no run of their own)."""
    traces_read_elsewhere.labels(_service_label(service)).inc(count)


def _service_label(service: str) -> str:
    """The ``service`` label: one of the first :data:`UNREAD_SERVICES_LABELLED` names seen,
    else ``(other)``."""
    if service not in _unread_services:
        if len(_unread_services) >= UNREAD_SERVICES_LABELLED:
            return "(other)"
        _unread_services.add(service)
    return service


def traces_failed(reason: str, count: int) -> None:
    """Traces parked as ``failed`` (see :class:`~tracescore.store.trace_queue.TraceQueue`)."""
    traces_parked.labels(reason).inc(count)


def stale_completions(count: int) -> None:
    """Completions dropped for a lease another worker had taken over."""
    completions_dropped.inc(count)


def text_values_replaced(where: str, count: int) -> None:
    """Text values stored with NUL characters or unpaired surrogates replaced."""
    text_replaced.labels(where).inc(count)


def export_request(
    transport: str, signal: str, outcome: str, spans: int = 0, logs: int = 0, rejected: int = 0
) -> None:
    """Record one OTLP export request: its outcome and, when stored, what it carried."""
    export_requests.labels(transport, signal, outcome).inc()
    if spans:
        spans_received.labels(transport).inc(spans)
    if logs:
        logs_received.labels(transport).inc(logs)
    if rejected:
        spans_rejected.labels(transport).inc(rejected)


def exposition() -> tuple[bytes, str]:
    """The text exposition of :data:`REGISTRY` (or, in multiprocess mode, of every process's
    values) and its content type."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    merged = CollectorRegistry()
    MultiProcessCollector(merged, directory)
    return generate_latest(merged), CONTENT_TYPE_LATEST
