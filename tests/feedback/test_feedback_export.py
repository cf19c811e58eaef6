"""``tracescore export`` writes a binding's low-scored runs as Mastra-shaped JSON Lines with
feedback as groundTruth, and ``tracescore score`` reads them back: a production failure becomes
a CI case. Also ``tracescore calibrate`` on the same store."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.support.score_streams import insert_rows, score_row
from tests.support.web_traces import agent_trace_json
from tracescore.cli import app
from tracescore.config import parse_config
from tracescore.ingest.unpack import drain
from tracescore.offline.inputs import read_runs
from tracescore.service import create_app
from tracescore.store import open_store
from tracescore.store.feedback import Feedback, FeedbackStore

CONFIG = "scorers: [{name: quality, scorer: completeness, threshold: 0.5}]"
ANSWERS = {
    "bad": "It rains in Paris.",
    "worse": "No idea.",
    "good": "It is sunny and 21 °C in Paris.",
}
SCORES = {"bad": 0.4, "worse": 0.1, "good": 0.9}


def _agent_span(trace_id: str) -> str:
    return f"{trace_id[:12]}{1:04x}"


def test_exported_runs_carry_feedback_and_score_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tracescore.db'}"
    store = open_store(url)
    client = TestClient(create_app(parse_config(CONFIG), store))
    traces = {name: uuid.uuid4().hex for name in ANSWERS}
    for name, trace_id in traces.items():
        body = agent_trace_json(
            trace_id,
            system="You are WeatherBot.",
            user="Weather in Paris?",
            tool_result='{"forecast": "sunny, 21"}',
            answer=ANSWERS[name],
            agent="WeatherBot",
        )
        assert (
            client.post(
                "/v1/traces", content=body, headers={"Content-Type": "application/json"}
            ).status_code
            == 200
        )
    drain(store)
    now = datetime.now(UTC)
    insert_rows(
        store.engine,
        [
            score_row(
                now - timedelta(hours=1),
                SCORES[name],
                binding="quality",
                trace_id=trace_id,
                span_id=_agent_span(trace_id),
                scorer_version="1",
                reason=f"{name} answer",
            )
            for name, trace_id in traces.items()
        ]
        + [
            score_row(
                now - timedelta(days=9),
                0.05,
                binding="quality",
                trace_id=traces["good"],
                span_id="0" * 16,
            )
        ],
    )
    FeedbackStore(store).record(
        [
            Feedback(
                trace_id=traces["bad"],
                span_id=_agent_span(traces["bad"]),
                name="quality",
                source="api",
                created_at=now,
                value=0.0,
                label="fail",
                comment="It is sunny, the tool said so.",
                author="ana",
            )
        ]
    )
    store.close()

    runner = CliRunner()
    exported = runner.invoke(
        app, ["export", "--binding", "quality", "--below", "0.5", "--since", "7d", "--db", url]
    )
    assert exported.exit_code == 0, exported.output
    lines = [orjson.loads(line) for line in exported.stdout.splitlines()]
    by_trace = {line["traceId"]: line for line in lines}
    assert set(by_trace) == {traces["bad"], traces["worse"]}  # not the good one, nor the old score
    bad = by_trace[traces["bad"]]
    assert bad["spanId"] == _agent_span(traces["bad"]) and bad["agentName"] == "WeatherBot"
    assert bad["groundTruth"] == {
        "value": 0.0,
        "label": "fail",
        "comment": "It is sunny, the tool said so.",
        "author": "ana",
    }
    assert "groundTruth" not in by_trace[traces["worse"]]
    assert bad["tracescore"] == {
        "binding": "quality",
        "score": 0.4,
        "scorerVersion": "1",
        "reason": "bad answer",
    }
    assert bad["input"]["inputMessages"][0]["content"]["content"] == "Weather in Paris?"
    assert json.dumps(bad["output"]).count(ANSWERS["bad"]) >= 1

    runs_file = tmp_path / "runs.jsonl"
    runs_file.write_text(exported.stdout)
    read_back = {run.trace_id: run for run in read_runs([runs_file])}
    assert read_back[traces["bad"]].ground_truth == bad["groundTruth"]
    assert read_back[traces["bad"]].span_id == bad["spanId"]
    assert read_back[traces["bad"]].agent_name == "WeatherBot"

    rows_file = tmp_path / "rows.jsonl"
    scored = runner.invoke(
        app,
        [
            "score",
            str(runs_file),
            "--scorer",
            "completeness",
            "--format",
            "json",
            "--output",
            str(rows_file),
        ],
    )
    assert scored.exit_code == 0, scored.output
    rows = [orjson.loads(line) for line in rows_file.read_text().splitlines()]
    assert {(row["trace_id"], row["span_id"]) for row in rows} == {
        (trace_id, _agent_span(trace_id)) for trace_id in (traces["bad"], traces["worse"])
    }
    assert all(row["status"] == "ok" and 0 <= row["score"] <= 1 for row in rows)


def test_calibrate_prints_the_figures_of_the_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tracescore.db'}"
    config_file = tmp_path / "tracescore.yaml"
    config_file.write_text(f"store: {url}\n{CONFIG}\n")
    store = open_store(url)
    now = datetime.now(UTC)
    rows = [
        score_row(now, score, binding="quality", judge_model="gpt-4o-mini")
        for score in (0.1, 0.3, 0.6, 0.8, 0.9)
    ]
    insert_rows(store.engine, rows)
    FeedbackStore(store).record(
        [
            Feedback(
                trace_id=row["trace_id"],
                span_id=row["span_id"],
                name="quality",
                source="api",
                created_at=now,
                value=value,
            )
            for row, value in zip(rows, (0.0, 0.6, 0.4, 1.0, 1.0), strict=True)
        ]
    )
    store.close()

    runner = CliRunner()
    as_json = runner.invoke(
        app, ["calibrate", "--binding", "quality", "--config", str(config_file), "--format", "json"]
    )
    assert as_json.exit_code == 0, as_json.output
    report = orjson.loads(as_json.stdout)
    assert report["threshold"] == 0.5 and report["overall"]["n"] == 5
    assert report["threshold_source"] == "binding"
    assert report["overall"]["mae"] == pytest.approx((0.1 + 0.3 + 0.2 + 0.2 + 0.1) / 5)
    assert report["overall"]["confusion"] == {
        "judge_pass_human_pass": 2,
        "judge_pass_human_fail": 1,
        "judge_fail_human_pass": 1,
        "judge_fail_human_fail": 1,
    }
    table = runner.invoke(
        app, ["calibrate", "--binding", "quality", "--db", url, "--threshold", "0.7"]
    )
    assert table.exit_code == 0, table.output
    assert "gpt-4o-mini" in table.stdout and "verdicts at 0.7, asked" in table.stdout
    assert (
        runner.invoke(
            app, ["calibrate", "--binding", "quality", "--db", url, "--since", "someday"]
        ).exit_code
        == 2
    )
