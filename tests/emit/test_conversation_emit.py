"""A conversation's score reaches a real OTLP receiver in its last turn's agent span context,
with ``gen_ai.conversation.id`` on the evaluation span, its event and the log record."""

from __future__ import annotations

from typing import cast

from tests.support.otlp_receiver import otlp_receiver
from tracescore.emit.config import ExportConfig
from tracescore.emit.otel import EvaluationEmitter
from tracescore.spans import EVALUATION_EVENT
from tracescore.store.scores import StoredScore

LAST_TURN_TRACE = "5a940d6e2f1c4b0d8e7f6a5b4c3d2e1f"
LAST_TURN_SPAN = "89e38b2ae6c021b6"


def _score(**overrides: object) -> StoredScore:
    score: dict[str, object] = {
        "trace_id": LAST_TURN_TRACE,
        "span_id": LAST_TURN_SPAN,
        "binding": "retention",
        "scorer_id": "knowledge-retention",
        "scorer_version": "1",
        "status": "ok",
        "score": 0.5,
        "label": "fail",
        "reason": "the agent forgot the user's city",
        "conversation_id": "session-oi-ada",
    }
    score.update(overrides)
    return cast(StoredScore, score)


def test_conversation_score_is_emitted_with_the_conversation_id_in_the_last_turns_context() -> None:
    with otlp_receiver() as receiver:
        emitter = EvaluationEmitter(ExportConfig(otlp_endpoint=receiver.endpoint))
        emitter.emit(_score())
        emitter.emit(_score(conversation_id=None, binding="run-score", span_id="1a43c4117327a1ae"))
        emitter.flush()
        receiver.wait_for(spans=2, logs=2)
        emitter.shutdown()

    spans = {span.name: span for span in receiver.spans}
    conversation = spans["retention"]
    assert (conversation.trace_id, conversation.parent_span_id) == (LAST_TURN_TRACE, LAST_TURN_SPAN)
    assert conversation.attributes["gen_ai.conversation.id"] == "session-oi-ada"
    (event,) = conversation.events
    assert event.name == EVALUATION_EVENT
    assert event.attributes["gen_ai.conversation.id"] == "session-oi-ada"
    assert event.attributes["gen_ai.evaluation.score.value"] == 0.5
    records = {record.attributes["gen_ai.evaluation.name"]: record for record in receiver.logs}
    record = records["retention"]
    assert (record.trace_id, record.span_id) == (LAST_TURN_TRACE, LAST_TURN_SPAN)
    assert record.attributes == event.attributes
    # A run's score names no conversation.
    assert "gen_ai.conversation.id" not in spans["run-score"].attributes
    assert "gen_ai.conversation.id" not in records["run-score"].attributes
