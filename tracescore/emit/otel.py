"""Re-emit scores into the tracing backend as OpenTelemetry ``gen_ai.evaluation.result`` events.

Two forms, because backends read one or the other:

* an *evaluation span* in the scored trace, child of the scored span and named after the
  evaluation, carrying the ``gen_ai.evaluation.result`` span event and the judge's model and
  token usage;
* the same event as an OTLP *log record* named ``gen_ai.evaluation.result`` in the scored
  span's context, which is the form the GenAI semantic conventions specify.

Both go through the OpenTelemetry SDK's batch processors and OTLP exporters: exports happen on
the SDK's own thread with its retries and a bounded queue, so a slow or dead backend never
blocks scoring (at worst the queue drops the oldest evaluations and the SDK logs it).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from tracescore.emit.config import ExportConfig
from tracescore.spans import EVALUATION_EVENT, OWN_EVALUATIONS_SCOPE
from tracescore.store.column_types import utc_micros
from tracescore.store.scores import StoredScore
from tracescore.version import __version__


def evaluation_attributes(score: StoredScore) -> dict[str, Any]:
    """The ``gen_ai.evaluation.*`` attributes of one stored score (see GenAI events.yaml)."""
    attributes: dict[str, Any] = {"gen_ai.evaluation.name": score["binding"]}
    if (value := score.get("score")) is not None:
        attributes["gen_ai.evaluation.score.value"] = float(value)
    if score.get("label"):
        attributes["gen_ai.evaluation.score.label"] = score["label"]
    explanation = score.get("reason") or score.get("error")
    if explanation:
        attributes["gen_ai.evaluation.explanation"] = explanation
    if score["status"] == "error":
        attributes["error.type"] = "_OTHER"  # the reason is free text: no error class to name
    if score.get("conversation_id"):  # a conversation's score, in its last turn's context
        attributes["gen_ai.conversation.id"] = score["conversation_id"]
    return attributes


def _event_time_ns(score: StoredScore) -> int:
    """When the evaluation happened: the score's ``created_at`` (a re-scoring emits old rows),
    else now. The SDK fills only ``observedTimeUnixNano``; without ``timeUnixNano`` backends that
    sort or window log records by event time place the evaluation at 1970 or drop it."""
    created = score.get("created_at")
    if isinstance(created, datetime):  # naive is UTC, as every stored time is
        return utc_micros(created) * 1_000  # exact, no float
    return time.time_ns()


def _exporters(config: ExportConfig) -> tuple[SpanExporter, LogRecordExporter]:
    endpoint = (config.otlp_endpoint or "").rstrip("/")
    headers = dict(config.headers)
    if config.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
            OTLPLogExporter as GrpcLogExporter,
        )
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        insecure = endpoint.startswith("http://")
        target = endpoint.split("://", 1)[-1]
        return (
            GrpcSpanExporter(
                endpoint=target, insecure=insecure, headers=headers, timeout=config.timeout
            ),
            GrpcLogExporter(
                endpoint=target, insecure=insecure, headers=headers, timeout=config.timeout
            ),
        )
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return (
        OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces", headers=headers, timeout=config.timeout),
        OTLPLogExporter(endpoint=f"{endpoint}/v1/logs", headers=headers, timeout=config.timeout),
    )


class EvaluationEmitter:
    """Sends evaluation results to one OTLP endpoint. Thread-safe; call :meth:`shutdown` last."""

    def __init__(self, config: ExportConfig) -> None:
        resource = Resource.create({"service.name": "tracescore", "service.version": __version__})
        span_exporter, log_exporter = _exporters(config)
        self._tracer_provider = TracerProvider(resource=resource)
        delay_ms = int(config.batch_delay * 1000)
        self._tracer_provider.add_span_processor(
            BatchSpanProcessor(span_exporter, schedule_delay_millis=delay_ms)
        )
        self._logger_provider = LoggerProvider(resource=resource)
        self._logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(log_exporter, schedule_delay_millis=delay_ms)
        )
        self._tracer = self._tracer_provider.get_tracer(OWN_EVALUATIONS_SCOPE, __version__)
        self._logger = self._logger_provider.get_logger(OWN_EVALUATIONS_SCOPE, __version__)

    def emit(self, score: StoredScore) -> None:
        """Emit one stored score (a row of ``scores`` as a mapping) in both forms."""
        if score["status"] not in ("ok", "error"):
            return  # skipped and not-scorable runs were not evaluated
        parent = SpanContext(
            trace_id=int(score["trace_id"], 16),
            span_id=int(score["span_id"], 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        context = trace.set_span_in_context(NonRecordingSpan(parent))
        attributes = evaluation_attributes(score)
        span_attributes: dict[str, Any] = {
            "gen_ai.operation.name": "evaluation",
            "tracescore.binding": score["binding"],
            "tracescore.scorer.id": score["scorer_id"],
            "tracescore.scorer.version": score["scorer_version"],
            "tracescore.status": score["status"],
        }
        if score.get("judge_model"):
            span_attributes["gen_ai.request.model"] = score["judge_model"]
            span_attributes["gen_ai.usage.input_tokens"] = int(score.get("input_tokens") or 0)
            span_attributes["gen_ai.usage.output_tokens"] = int(score.get("output_tokens") or 0)
        if score["status"] == "error":
            span_attributes["error.type"] = attributes["error.type"]
        if "gen_ai.conversation.id" in attributes:
            span_attributes["gen_ai.conversation.id"] = attributes["gen_ai.conversation.id"]
        with self._tracer.start_as_current_span(
            score["binding"], context=context, kind=SpanKind.INTERNAL, attributes=span_attributes
        ) as span:
            span.add_event(EVALUATION_EVENT, attributes=attributes)
            if score["status"] == "error":
                span.set_status(trace.Status(trace.StatusCode.ERROR, score.get("error") or ""))
        self._logger.emit(
            LogRecord(
                timestamp=_event_time_ns(score),
                context=context,
                event_name=EVALUATION_EVENT,
                attributes=attributes,
            )
        )

    def flush(self, timeout_millis: int = 5_000) -> None:
        self._tracer_provider.force_flush(timeout_millis)
        self._logger_provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._tracer_provider.shutdown()
        self._logger_provider.shutdown()
