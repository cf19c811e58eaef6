"""Evaluation results reach a real OTLP receiver as spans with events and as log records."""

from __future__ import annotations

import time

from tests.otlp_receiver import otlp_receiver
from tracescore.emit.otel import EVENT_NAME, EvaluationEmitter
from tracescore.pipeline.config import ExportConfig

TRACE_ID = "5a940d6e2f1c4b0d8e7f6a5b4c3d2e1f"
SPAN_ID = "89e38b2ae6c021b6"


def _score(**overrides: object) -> dict:
    score = {
        "trace_id": TRACE_ID, "span_id": SPAN_ID, "binding": "faithfulness-prod",
        "scorer_id": "faithfulness-scorer", "scorer_version": "1", "status": "ok",
        "score": 0.75, "label": "pass", "reason": "3 of 4 claims are supported",
        "judge_model": "openai/gpt-4o-mini", "input_tokens": 120, "output_tokens": 30,
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
    assert (span.trace_id, span.parent_span_id, span.name) == (TRACE_ID, SPAN_ID, "faithfulness-prod")
    assert span.attributes["gen_ai.request.model"] == "openai/gpt-4o-mini"
    assert span.attributes["gen_ai.usage.input_tokens"] == 120
    (event,) = span.events
    assert event.name == EVENT_NAME
    assert event.attributes == {
        "gen_ai.evaluation.name": "faithfulness-prod",
        "gen_ai.evaluation.score.value": 0.75,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "3 of 4 claims are supported",
    }
    (record,) = receiver.logs
    assert (record.trace_id, record.span_id, record.event_name) == (TRACE_ID, SPAN_ID, EVENT_NAME)
    assert record.attributes == event.attributes


def test_failed_score_carries_error_type_and_skips_are_not_emitted() -> None:
    with otlp_receiver() as receiver:
        emitter = EvaluationEmitter(ExportConfig(otlp_endpoint=receiver.endpoint))
        emitter.emit(_score(status="error", score=None, label=None, reason=None,
                            error="judge timed out after 30 s", error_type="timeout"))
        emitter.emit(_score(status="skipped_budget", span_id="1a43c4117327a1ae"))
        emitter.flush()
        receiver.wait_for(spans=1, logs=1)
        emitter.shutdown()

    (span,) = receiver.spans
    assert span.status_code == 2 and span.attributes["error.type"] == "timeout"
    assert span.events[0].attributes["gen_ai.evaluation.explanation"] == "judge timed out after 30 s"
    assert len(receiver.logs) == 1


def test_dead_endpoint_never_blocks_emit() -> None:
    emitter = EvaluationEmitter(ExportConfig(otlp_endpoint="http://127.0.0.1:9", timeout=1))
    started = time.perf_counter()
    for _ in range(200):
        emitter.emit(_score())
    assert time.perf_counter() - started < 1.0
