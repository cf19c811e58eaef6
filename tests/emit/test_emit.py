"""Evaluation results reach a real OTLP receiver as spans with events and as log records."""

from __future__ import annotations

import threading
from datetime import datetime

from tests.support.otlp_receiver import otlp_receiver
from tracescore.emit.config import ExportConfig
from tracescore.emit.otel import EvaluationEmitter
from tracescore.spans import EVALUATION_EVENT

TRACE_ID = "5a940d6e2f1c4b0d8e7f6a5b4c3d2e1f"
SPAN_ID = "89e38b2ae6c021b6"


def _score(**overrides: object) -> dict:
    score = {
        "trace_id": TRACE_ID,
        "span_id": SPAN_ID,
        "binding": "faithfulness-prod",
        "scorer_id": "faithfulness-scorer",
        "scorer_version": "1",
        "status": "ok",
        "score": 0.75,
        "label": "pass",
        "reason": "3 of 4 claims are supported",
        "judge_model": "openai/gpt-4o-mini",
        "input_tokens": 120,
        "output_tokens": 30,
    }
    score.update(overrides)
    return score


def test_score_is_emitted_as_child_span_event_and_log_record() -> None:
    with otlp_receiver() as receiver:
        emitter = EvaluationEmitter(ExportConfig(otlp_endpoint=receiver.endpoint))
        emitter.emit(_score())
        emitter.flush()
        receiver.wait_for(spans=1, logs=1)
        emitter.shutdown()

    (span,) = receiver.spans
    assert (span.trace_id, span.parent_span_id, span.name) == (
        TRACE_ID,
        SPAN_ID,
        "faithfulness-prod",
    )
    assert span.attributes["gen_ai.request.model"] == "openai/gpt-4o-mini"
    assert span.attributes["gen_ai.usage.input_tokens"] == 120
    (event,) = span.events
    assert event.name == EVALUATION_EVENT
    assert event.attributes == {
        "gen_ai.evaluation.name": "faithfulness-prod",
        "gen_ai.evaluation.score.value": 0.75,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "3 of 4 claims are supported",
    }
    (record,) = receiver.logs
    assert (record.trace_id, record.span_id, record.event_name) == (
        TRACE_ID,
        SPAN_ID,
        EVALUATION_EVENT,
    )
    assert record.attributes == event.attributes
    # The event time is set, not only the observed time: backends sort and window by it.
    assert record.time_ns > 0 and abs(record.time_ns - record.observed_time_ns) < 60 * 10**9


def test_log_record_time_is_when_the_score_was_made() -> None:
    """A re-scoring run emits rows made earlier: the record carries that time (naive = UTC)."""
    made = datetime(2026, 1, 2, 3, 4, 5, 250_000)
    with otlp_receiver() as receiver:
        emitter = EvaluationEmitter(ExportConfig(otlp_endpoint=receiver.endpoint))
        emitter.emit(_score(created_at=made))
        emitter.flush()
        receiver.wait_for(spans=1, logs=1)
        emitter.shutdown()
    (record,) = receiver.logs
    assert record.time_ns == 1_767_323_045_250_000_000  # 2026-01-02T03:04:05.25Z
    assert record.observed_time_ns > record.time_ns


def test_failed_score_carries_error_type_and_skips_are_not_emitted() -> None:
    with otlp_receiver() as receiver:
        emitter = EvaluationEmitter(ExportConfig(otlp_endpoint=receiver.endpoint))
        emitter.emit(
            _score(
                status="error",
                score=None,
                label=None,
                reason=None,
                error="judge timed out after 30 s",
            )
        )
        emitter.emit(_score(status="skipped_budget", span_id="1a43c4117327a1ae"))
        emitter.flush()
        receiver.wait_for(spans=1, logs=1)
        emitter.shutdown()

    (span,) = receiver.spans
    # The semconv's catch-all class: a score row holds why it failed as text, not as a class.
    assert span.status_code == 2 and span.attributes["error.type"] == "_OTHER"
    assert (
        span.events[0].attributes["gen_ai.evaluation.explanation"] == "judge timed out after 30 s"
    )
    assert len(receiver.logs) == 1


def test_dead_endpoint_never_blocks_emit() -> None:
    """Emitting only queues: 200 scores for an endpoint that refuses connections (each export
    attempt there costs up to its 1 s timeout) are handed over long before one export could be
    retried, so the scoring worker never waits on the network."""
    emitter = EvaluationEmitter(ExportConfig(otlp_endpoint="http://127.0.0.1:9", timeout=1))
    emitting = threading.Thread(target=lambda: [emitter.emit(_score()) for _ in range(200)])
    emitting.start()
    emitting.join(30)
    assert not emitting.is_alive()
