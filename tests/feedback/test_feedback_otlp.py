"""Feedback sent over OTLP (log records and span events) through the real ingest endpoints,
read from the stored rows by the feedback scan, on SQLite and PostgreSQL."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from tests.support.score_streams import insert_rows, score_row
from tests.support.web_traces import agent_trace_json
from tracescore.config import parse_config
from tracescore.feedback.scan import FeedbackScanner
from tracescore.ingest.unpack import drain
from tracescore.service import create_app
from tracescore.store import SpanStore, open_store

CONFIG = "scorers: [{name: quality, scorer: completeness, threshold: 0.5}]"
HUMAN = {"tracescore.feedback.source": "human"}


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in values.items()]


def _logs(*records: tuple[str | None, str | None, dict[str, Any]]) -> bytes:
    """An OTLP/JSON logs export of ``gen_ai.evaluation.result`` records (trace, span, attributes)."""
    now = time.time_ns()
    return orjson.dumps(
        {
            "resourceLogs": [
                {
                    "resource": {"attributes": _attributes({"service.name": "shop"})},
                    "scopeLogs": [
                        {
                            "scope": {"name": "feedback-widget"},
                            "logRecords": [
                                {
                                    "timeUnixNano": str(now + index),
                                    "traceId": trace or "",
                                    "spanId": span or "",
                                    "eventName": "gen_ai.evaluation.result",
                                    "attributes": _attributes(attributes),
                                }
                                for index, (trace, span, attributes) in enumerate(records)
                            ],
                        }
                    ],
                }
            ]
        }
    )


def _feedback_span(trace_id: str, parent: str, attributes: dict[str, Any]) -> bytes:
    """A span added to the trace later, carrying the verdict as a span event."""
    now = time.time_ns()
    return orjson.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": _attributes({"service.name": "shop"})},
                    "scopeSpans": [
                        {
                            "scope": {"name": "feedback-widget"},
                            "spans": [
                                {
                                    "traceId": trace_id,
                                    "spanId": uuid.uuid4().hex[:16],
                                    "parentSpanId": parent,
                                    "name": "user feedback",
                                    "kind": 1,
                                    "startTimeUnixNano": str(now),
                                    "endTimeUnixNano": str(now + 1000),
                                    "status": {},
                                    "events": [
                                        {
                                            "timeUnixNano": str(now),
                                            "name": "gen_ai.evaluation.result",
                                            "attributes": _attributes(attributes),
                                        }
                                    ],
                                }
                            ],
                        }
                    ],
                }
            ]
        }
    )


def _agent_span(trace_id: str) -> str:
    return f"{trace_id[:12]}{1:04x}"  # agent_trace_json's agent span


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    store = open_store(db_url)
    yield store
    store.close()


def _post(client: TestClient, path: str, body: bytes) -> None:
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text


def test_feedback_over_otlp_is_stored_listed_and_calibrated(store: SpanStore) -> None:
    client = TestClient(create_app(parse_config(CONFIG), store))
    scanner = FeedbackScanner(store, clock=lambda: time.time() + 5)  # no settling margin to wait
    by_log, by_event = uuid.uuid4().hex, uuid.uuid4().hex
    for trace_id in (by_log, by_event):
        _post(client, "/v1/traces", agent_trace_json(trace_id, agent="ShopBot"))
    _post(
        client,
        "/v1/logs",
        _logs(
            (
                by_log,
                _agent_span(by_log),
                {
                    **HUMAN,
                    "gen_ai.evaluation.name": "quality",
                    "gen_ai.evaluation.score.value": 0.2,
                    "gen_ai.evaluation.score.label": "fail",
                    "gen_ai.evaluation.explanation": "wrong city",
                    "user.id": "u-17",
                },
            ),
            # tracescore's own evaluations (no human source) and records without a trace are not feedback
            (
                by_log,
                _agent_span(by_log),
                {"gen_ai.evaluation.name": "quality", "gen_ai.evaluation.score.value": 0.9},
            ),
            (
                None,
                None,
                {
                    **HUMAN,
                    "gen_ai.evaluation.name": "quality",
                    "gen_ai.evaluation.score.label": "pass",
                },
            ),
            (
                by_log,
                None,
                {**HUMAN, "gen_ai.evaluation.name": "quality"},
            ),  # neither value nor label
        ),
    )
    _post(
        client,
        "/v1/traces",
        _feedback_span(
            by_event,
            _agent_span(by_event),
            {
                **HUMAN,
                "gen_ai.evaluation.name": "quality",
                "gen_ai.evaluation.score.label": "thumbs_up",
                "tracescore.feedback.span_id": _agent_span(by_event),
            },
        ),
    )
    drain(store)  # the journaled requests into rows, as a running service's unpacker does

    assert scanner.run_once() == 2
    listed = {item["trace_id"]: item for item in client.get("/api/feedback").json()["feedback"]}
    assert set(listed) == {by_log, by_event}
    assert listed[by_log] | {"id": None, "created_at": None} == {
        "id": None,
        "trace_id": by_log,
        "span_id": _agent_span(by_log),
        "name": "quality",
        "value": 0.2,
        "label": "fail",
        "comment": "wrong city",
        "author": "u-17",
        "source": "otlp",
        "created_at": None,
    }
    assert (listed[by_event]["span_id"], listed[by_event]["label"], listed[by_event]["value"]) == (
        _agent_span(by_event),
        "thumbs_up",
        None,
    )
    assert scanner.run_once() == 0  # the cursor moved past what was read

    # A later verdict by the same user on the same run replaces the first, as over the API.
    _post(
        client,
        "/v1/logs",
        _logs(
            (
                by_log,
                _agent_span(by_log),
                {
                    **HUMAN,
                    "gen_ai.evaluation.name": "quality",
                    "gen_ai.evaluation.score.value": 0.8,
                    "user.id": "u-17",
                },
            )
        ),
    )
    drain(store)
    assert scanner.run_once() == 1
    (replaced,) = client.get("/api/feedback", params={"trace_id": by_log}).json()["feedback"]
    assert (replaced["value"], replaced["label"]) == (0.8, None)

    # The verdicts pair with the runs' scores.
    insert_rows(
        store.engine,
        [
            score_row(
                datetime.now(UTC),
                0.3,
                binding="quality",
                trace_id=by_log,
                span_id=_agent_span(by_log),
            ),
            score_row(
                datetime.now(UTC),
                0.7,
                binding="quality",
                trace_id=by_event,
                span_id=_agent_span(by_event),
            ),
        ],
    )
    report = client.get("/api/calibration", params={"binding": "quality"}).json()["overall"]
    assert (report["n"], report["n_values"], report["n_verdicts"]) == (2, 1, 2)
    assert report["mae"] == pytest.approx(0.5)
    assert report["confusion"]["judge_fail_human_pass"] == 1  # 0.3 vs 0.8
    assert report["confusion"]["judge_pass_human_pass"] == 1  # 0.7 vs thumbs up


def test_one_instance_scans_at_a_time(store: SpanStore) -> None:
    """Several service processes or replicas on one database: the lease holder looks, the
    others wait their turn, and a stopping holder hands over at once."""
    client = TestClient(create_app(parse_config(CONFIG), store))
    trace_id = uuid.uuid4().hex
    _post(client, "/v1/traces", agent_trace_json(trace_id, agent="ShopBot"))
    _post(
        client,
        "/v1/logs",
        _logs(
            (
                trace_id,
                _agent_span(trace_id),
                {
                    **HUMAN,
                    "gen_ai.evaluation.name": "quality",
                    "gen_ai.evaluation.score.label": "pass",
                },
            )
        ),
    )
    drain(store)
    first, second = (FeedbackScanner(store, clock=lambda: time.time() + 5) for _ in range(2))
    assert first.run_once() == 1
    _post(
        client,
        "/v1/logs",
        _logs(
            (
                trace_id,
                _agent_span(trace_id),
                {
                    **HUMAN,
                    "gen_ai.evaluation.name": "quality",
                    "gen_ai.evaluation.score.label": "fail",
                    "user.id": "u-2",
                },
            )
        ),
    )
    drain(store)
    assert second.run_once() == 0  # the first one's lease
    first.release()
    assert second.run_once() == 2  # the trace was written again: both its verdicts are read
    assert first.run_once() == 0  # now the second one's
    labels = sorted(item["label"] for item in client.get("/api/feedback").json()["feedback"])
    assert labels == ["fail", "pass"]
