"""A product's thumbs up/down, sent with the OpenTelemetry SDK exactly as docs/feedback.md shows,
reaches a running ``tracescore serve`` and is listed by its API: the convention, the exporters,
ingest, the background scan and the API together."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from tests.support.server_process import start_server, wait_for
from tests.support.web_traces import agent_trace_json

CONFIG = {
    "scorers": [{"name": "answer-quality", "scorer": "completeness", "threshold": 0.5}],
    "feedback": {"scan_interval": "0.2s"},
}


def test_thumbs_sent_with_the_sdk_are_listed_by_a_running_service(tmp_path: Path) -> None:
    with start_server(tmp_path, config=CONFIG) as server:
        first, second = uuid.uuid4().hex, uuid.uuid4().hex
        for trace_id in (first, second):
            response = server.http.post(
                "/v1/traces",
                content=agent_trace_json(trace_id),
                headers={"Content-Type": "application/json"},
            )
            assert response.status_code == 200
        span_ids = {trace_id: f"{trace_id[:12]}{1:04x}" for trace_id in (first, second)}

        # As a log record (docs/feedback.md, "Over OTLP").
        logs = LoggerProvider()
        logs.add_log_record_processor(
            SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{server.base_url}/v1/logs"))
        )
        run = SpanContext(
            int(first, 16),
            int(span_ids[first], 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        logs.get_logger("feedback-widget").emit(
            LogRecord(
                context=trace.set_span_in_context(NonRecordingSpan(run)),
                event_name="gen_ai.evaluation.result",
                attributes={
                    "tracescore.feedback.source": "human",
                    "gen_ai.evaluation.name": "answer-quality",
                    "gen_ai.evaluation.score.label": "pass",
                    "user.id": "u-1",
                },
            )
        )
        logs.shutdown()

        # As a span event on a short span in the run's trace.
        spans = TracerProvider()
        spans.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
        )
        tracer = spans.get_tracer("feedback-widget")
        other = SpanContext(
            int(second, 16),
            int(span_ids[second], 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        parent = trace.set_span_in_context(NonRecordingSpan(other))
        with tracer.start_as_current_span("user feedback", context=parent) as span:
            span.add_event(
                "gen_ai.evaluation.result",
                {
                    "tracescore.feedback.source": "human",
                    "gen_ai.evaluation.name": "answer-quality",
                    "gen_ai.evaluation.score.label": "fail",
                    "tracescore.feedback.span_id": span_ids[second],
                },
            )
        spans.shutdown()

        def listed() -> list[dict[str, Any]]:
            found = server.http.get("/api/feedback").json()["feedback"]
            return found if len(found) == 2 else []

        verdicts = {item["trace_id"]: item for item in wait_for(listed, 20, "both verdicts listed")}
    assert {
        (t, v["span_id"], v["label"], v["author"], v["source"]) for t, v in verdicts.items()
    } == {
        (first, span_ids[first], "pass", "u-1", "otlp"),
        (second, span_ids[second], "fail", "", "otlp"),
    }


def test_with_the_scan_off_feedback_records_are_stored_but_not_read_as_verdicts(
    tmp_path: Path,
) -> None:
    """``feedback.scan: false`` (feedback only through the API) spares ingest the scan's reads;
    the records are still stored as sent."""
    config = {**CONFIG, "feedback": {"scan": False, "scan_interval": "0.2s"}}
    with start_server(tmp_path, config=config) as server:
        trace_id = uuid.uuid4().hex
        response = server.http.post(
            "/v1/traces",
            content=agent_trace_json(trace_id),
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 200
        logs = LoggerProvider()
        logs.add_log_record_processor(
            SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{server.base_url}/v1/logs"))
        )
        run = SpanContext(
            int(trace_id, 16),
            int(f"{trace_id[:12]}0001", 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        logs.get_logger("feedback-widget").emit(
            LogRecord(
                context=trace.set_span_in_context(NonRecordingSpan(run)),
                event_name="gen_ai.evaluation.result",
                attributes={
                    "tracescore.feedback.source": "human",
                    "gen_ai.evaluation.name": "answer-quality",
                    "gen_ai.evaluation.score.label": "pass",
                },
            )
        )
        logs.shutdown()
        stored = wait_for(
            lambda: server.http.get(f"/api/traces/{trace_id}").json().get("logs"),
            20,
            "the record stored",
        )
        time.sleep(1.0)  # five scan intervals: a running scan would have read it by now
        listed = server.http.get("/api/feedback").json()["feedback"]
    assert [record["event_name"] for record in stored] == ["gen_ai.evaluation.result"]
    assert listed == []
