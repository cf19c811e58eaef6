"""Feedback triggers on a running service (issue 37, item 4): bindings that sample nothing
(rate 0) judge a run as soon as someone says it went wrong, over ``POST /api/v1/feedback`` or
OTLP, once, within their caps; a kill -9 right after the verdict's acknowledgement loses
nothing; a verdict on a trace that never arrives is given up with its reason."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from sqlalchemy import create_engine, text

from tests.support.agent_otlp import AgentTrace, agent_trace, export_logs_request, export_request
from tests.support.judge_server import JudgeServer, json_reply
from tests.support.server_process import ServerProcess, start_server, wait_for
from tracescore.store.column_types import unpack_json

TRIGGER_LEASE = 4.0
"""``workers.trigger_lease`` of the kill test: short, so the restart retakes the killed
process's trigger soon; long enough that a loaded machine's renewals (a third of it apart)
keep it."""


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        server.script("AnswerStatements", json_reply({"statements": ["It is sunny."]}))
        server.script(
            "RelevancyResults", json_reply({"results": [{"result": "yes", "reason": "on topic"}]})
        )
        yield server


def _config(judge: JudgeServer, processes: int = 0, **judged: Any) -> dict[str, Any]:
    """Three bindings judging on feedback only; ``processes: 0`` (the default here) scores in
    the service itself, so one limiter counts ``per_minute`` exactly."""
    return {
        "judges": {
            "default": {"model": "openai/judge", "api_base": judge.base_url, "cache": False}
        },
        "scorers": [
            {
                "name": "judged",
                "scorer": "answer-relevancy",
                "sampling": {"rate": 0.0},
                "on_feedback": True,
                **judged,
            },
            {
                "name": "broke",  # no budget left: a trigger is stored as skipped, not dropped
                "scorer": "answer-relevancy",
                "sampling": {"rate": 0.0},
                "on_feedback": {"names": ["thumbs"]},
                "limits": {"usd_per_day": 0},
            },
            {
                "name": "per-minute",
                "scorer": "answer-relevancy",
                "sampling": {"rate": 0.0},
                "on_feedback": {"names": ["rated"], "below": 0.3},
                "limits": {"per_minute": 1},
            },
        ],
        "feedback": {"scan_interval": "0.2s"},
        "workers": {"poll_interval": 0.05, "processes": processes},
    }


def _send(server: ServerProcess, trace: AgentTrace) -> None:
    response = server.http.post(
        "/v1/traces",
        content=export_request(trace.spans),
        headers={"Content-Type": "application/x-protobuf"},
    )
    assert response.status_code == 200, response.text


def _rows(server: ServerProcess, sql: str, **params: Any) -> list[Any]:
    engine = create_engine(server.db_url)
    try:
        with engine.connect() as connection:
            return list(connection.execute(text(sql), params))
    finally:
        engine.dispose()


def _state(server: ServerProcess, trace_id: str) -> str | None:
    found = _rows(server, "SELECT state FROM traces WHERE trace_id = :t", t=bytes.fromhex(trace_id))
    return found[0].state if found else None


def _scores(server: ServerProcess, trace_id: str, binding: str = "judged") -> list[Any]:
    return _rows(
        server,
        "SELECT status, score, error, steps FROM scores JOIN score_series ON score_series.id = scores.series_id"
        " WHERE trace_id = :t AND binding = :b",
        t=bytes.fromhex(trace_id),
        b=binding,
    )


def _steps(score: Any) -> dict[str, Any]:
    """A score row's steps, stored packed (``store/column_types.py``'s ``PackedJSON``)."""
    return dict(unpack_json(score.steps))


def _trigger(server: ServerProcess, trace_id: str, binding: str = "judged") -> Any:
    found = _rows(
        server,
        "SELECT state, outcome, reason FROM feedback_triggers WHERE trace_id = :t AND binding = :b",
        t=trace_id,
        b=binding,
    )
    return found[0] if found else None


def _done(server: ServerProcess, traces: list[AgentTrace], binding: str) -> list[Any] | None:
    """The triggers of ``binding`` on ``traces`` once every one has ended."""
    found = [_trigger(server, trace.trace_id, binding) for trace in traces]
    return found if all(t is not None and t.state != "pending" for t in found) else None


def _verdict(server: ServerProcess, trace_id: str, **fields: Any) -> None:
    response = server.http.post(
        "/api/v1/feedback", json={"trace_id": trace_id, **fields}, timeout=10
    )
    assert response.status_code == 201, response.text


def _unsampled(server: ServerProcess, rng: random.Random, city: str) -> AgentTrace:
    """A trace sent and finished by the pipeline unjudged (every binding samples 0 %)."""
    trace = agent_trace(rng, city=city)
    _send(server, trace)
    wait_for(lambda: _state(server, trace.trace_id) == "scored", 30, "the trace finished")
    return trace


def test_a_thumbs_down_has_an_unsampled_run_judged_once_within_the_caps(
    tmp_path: Path, judge: JudgeServer
) -> None:
    rng = random.Random(7)
    with start_server(tmp_path, config=_config(judge)) as server:
        down = _unsampled(server, rng, "Oslo")
        liked = _unsampled(server, rng, "Rome")
        assert _scores(server, down.trace_id) == []  # not sampled: nobody judged it

        _verdict(server, liked.trace_id, name="thumbs", label="thumbs_up", author="u1")
        _verdict(server, down.trace_id, name="thumbs", label="thumbs_down", author="u1")
        (score,) = wait_for(lambda: _scores(server, down.trace_id), 90, "the triggered score")
        assert score.status == "ok" and score.score is not None
        assert "trigger" in _steps(score)  # marked as judged on feedback, not sampled
        trigger = wait_for(lambda: _trigger(server, down.trace_id), 10, "the trigger")
        assert (trigger.state, trigger.outcome) == ("done", "judged")
        calls = judge.count

        # A second thumbs-down on the same run, and another person's: judged once still.
        _verdict(server, down.trace_id, name="thumbs", label="thumbs_down", author="u2")
        _verdict(server, down.trace_id, name="judged", value=0.0, author="ana")
        # The binding without budget recorded its skip, with the reason, and judged nothing.
        (broke,) = wait_for(lambda: _done(server, [down], "broke"), 60, "the skipped trigger")
        assert broke.outcome == "skipped_budget" and "budget" in broke.reason
        (skipped,) = _scores(server, down.trace_id, "broke")
        assert skipped.status == "skipped_budget"
        time.sleep(3)  # time for any wrong re-judging to show
        assert len(_scores(server, down.trace_id)) == 1
        assert judge.count == calls

        # A positive verdict triggers nothing.
        assert _trigger(server, liked.trace_id) is None
        assert _scores(server, liked.trace_id) == []

        # per_minute: 1: of two low ratings within the minute, the second is skipped for rate.
        first, second = (_unsampled(server, rng, city) for city in ("Lima", "Kyiv"))
        for trace in (first, second):
            _verdict(server, trace.trace_id, name="rated", value=0.1)
        ended = wait_for(lambda: _done(server, [first, second], "per-minute"), 60, "both triggers")
        assert sorted(t.outcome for t in ended) == ["judged", "skipped_rate"]

        # Coverage: the triggered scores are not counted as sampled.
        wait_for(lambda: _done(server, [first, second], "judged"), 60, "their other triggers")
        coverage = server.http.get("/api/coverage", params={"binding": "judged"})
        (entry,) = coverage.json()["bindings"]
        assert entry["sampled"] == 0 and entry["eligible"] == 4
        assert entry["statuses"] == {"ok": 3}  # Oslo's, and Lima's and Kyiv's low ratings


def test_otlp_feedback_triggers_and_a_kill_after_the_ack_loses_nothing(
    tmp_path: Path, judge: JudgeServer, db_url: str
) -> None:
    """On SQLite and PostgreSQL: the trigger is committed with the verdict's acknowledgement.
    The killed process's claim on it lapses after ``workers.trigger_lease`` (4 s here, not the
    default 15 s: the restart judges it after the lapse either way)."""
    rng = random.Random(8)
    answer = {"statements": ["It is sunny."]}
    judge.script("AnswerStatements", json_reply(answer, delay=3.0))  # in flight at the kill
    config = _config(judge, processes=1)  # judged in a scoring process, killed with the service
    config["workers"]["trigger_lease"] = TRIGGER_LEASE
    server = start_server(tmp_path / "first", db_url=db_url, config=config)
    try:
        killed = _unsampled(server, rng, "Cairo")
        over_otlp = _unsampled(server, rng, "Quito")
        _verdict(server, killed.trace_id, name="thumbs", label="bad")
        server.kill()  # kill -9 right after the acknowledgement, the judge still answering
    finally:
        server.kill()
    assert _scores(server, killed.trace_id) == []
    judge.script("AnswerStatements", json_reply(answer))  # the killed call's delay had its use

    with start_server(tmp_path / "second", db_url=server.db_url, config=config) as again:
        (score,) = wait_for(lambda: _scores(again, killed.trace_id), 60, "the judging after a kill")
        assert score.status == "ok"

        # A thumbs-down sent as an OTLP log record (docs/feedback.md) triggers alike.
        record = LogRecord(
            time_unix_nano=time.time_ns(),
            trace_id=bytes.fromhex(over_otlp.trace_id),
            span_id=bytes.fromhex(over_otlp.agent_span_id),
            event_name="gen_ai.evaluation.result",
            attributes=[
                KeyValue(key=key, value=AnyValue(string_value=value))
                for key, value in {
                    "tracescore.feedback.source": "human",
                    "gen_ai.evaluation.name": "thumbs",
                    "gen_ai.evaluation.score.label": "thumbs_down",
                }.items()
            ],
        )
        response = again.http.post(
            "/v1/logs",
            content=export_logs_request([record]),
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert response.status_code == 200
        (score,) = wait_for(lambda: _scores(again, over_otlp.trace_id), 60, "the OTLP trigger")
        assert score.status == "ok" and "trigger" in _steps(score)


def test_a_verdict_on_a_trace_that_never_arrives_is_given_up_with_its_reason(
    tmp_path: Path, judge: JudgeServer
) -> None:
    config = _config(judge, on_feedback={"wait": "2s"})
    with start_server(tmp_path, config=config) as server:
        missing = "ab" * 16
        response = server.http.post(  # the deprecated /api takes verdicts ahead of their trace
            "/api/feedback",
            json={"trace_id": missing, "name": "thumbs", "label": "fail"},
        )
        assert response.status_code == 201
        waiting = wait_for(lambda: _trigger(server, missing), 10, "the trigger")
        assert waiting.state == "pending"
        ended = wait_for(
            lambda: (t := _trigger(server, missing)) and t.state == "gave_up" and t,
            30,
            "giving up",
        )
        assert "arrived" in ended.reason
        assert judge.count == 0
