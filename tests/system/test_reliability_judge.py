"""Judge faults against a real ``tracescore serve``: 429 storms, 5xx, a judge that never
answers, and garbage instead of JSON, each aimed at particular runs by the scripted judge.

Every run must end with exactly one score row, ``ok`` or ``error`` with the reason; no trace
may stay claimed; and while the judge misbehaves the collector keeps acknowledging exports
promptly.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support.agent_otlp import AgentTrace, agent_trace, export_request
from tests.support.judge_server import (
    JudgeServer,
    error_reply,
    hang_reply,
    json_reply,
    text_reply,
)
from tests.support.server_process import start_server

JUDGE_TIMEOUT = 1.0
# City marker (it appears in every judge prompt of that run) → what the judge does, and words
# one of which the stored error must contain.
FAULTS = {
    "city-storm": (error_reply(429, retry_after=0.05), ("429", "rate")),
    "city-down": (error_reply(503), ("503", "unavailable", "server")),
    "city-broken": (error_reply(500), ("500", "server", "internal")),
    "city-hang": (hang_reply(), ("timeout", "timed out")),
    "city-garbage": (text_reply("{'verdict': yes, this is not JSON"), ("json", "valid", "parse")),
}
HEALTHY = [f"city-fine-{n}" for n in range(4)]


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        server.script("AnswerStatements", json_reply({"statements": ["It is sunny."]}))
        server.script(
            "RelevancyResults", json_reply({"results": [{"result": "yes", "reason": "on topic"}]})
        )
        for city, (reply, _) in FAULTS.items():
            server.script(city, reply)  # added last, so these win for their runs
        yield server


def _post(client: httpx.Client, trace: AgentTrace) -> float:
    started = time.monotonic()
    response = client.post(
        "/v1/traces",
        content=export_request(trace.spans),
        headers={"Content-Type": "application/x-protobuf"},
    )
    assert response.status_code == 200, response.text
    return time.monotonic() - started


def test_every_run_ends_ok_or_error_with_a_reason_and_ingest_keeps_up(
    tmp_path: Path, judge: JudgeServer
) -> None:
    config = {
        "judges": {
            "default": {
                "model": "openai/judge",
                "api_base": judge.base_url,
                "timeout": JUDGE_TIMEOUT,
                "max_retries": 2,
                "backoff_base": 0.05,
                "backoff_max": 0.2,
                "cache": False,
            }
        },
        "scorers": [{"name": "relevancy", "scorer": "answer-relevancy"}],
        "assembly": {"lease_seconds": 30},
        "workers": {"poll_interval": 0.05},
    }
    rng = random.Random(11)
    traces = {city: agent_trace(rng, city=city) for city in [*FAULTS, *HEALTHY]}
    engine = create_engine(f"sqlite:///{tmp_path / 'tracescore.db'}")
    with (
        start_server(tmp_path, config=config) as server,
        httpx.Client(base_url=server.base_url, timeout=10) as client,
    ):
        for trace in traces.values():
            _post(client, trace)
        # While the faulty runs are being retried and timed out, ingest answers promptly.
        latencies = [
            _post(client, agent_trace(rng, city=f"city-fine-extra-{n}")) for n in range(20)
        ]
        assert max(latencies) < 2.5, latencies  # a hung judge call is 1 s, three attempts
        assert client.get("/healthz").status_code == 200

        deadline = time.monotonic() + 60
        while True:
            with engine.connect() as connection:
                rows = {
                    bytes(r.trace_id).hex(): r  # stored as bytes
                    for r in connection.execute(
                        text(
                            "SELECT trace_id, status, error FROM scores JOIN score_series ON score_series.id = scores.series_id"
                        )
                    )
                }
                states = dict(
                    connection.execute(
                        text("SELECT state, count(*) FROM traces GROUP BY state")
                    ).all()
                )
            if len(rows) == len(traces) + 20 and set(states) == {"scored"}:
                break
            assert time.monotonic() < deadline, f"{len(rows)} scores, trace states {states}"
            time.sleep(0.2)
    engine.dispose()

    by_city = {city: rows[trace.trace_id] for city, trace in traces.items()}
    for city, (_, words) in FAULTS.items():
        row = by_city[city]
        assert row.status == "error", (city, row)
        assert row.error and any(word in row.error.lower() for word in words), (city, row.error)
    for city in HEALTHY:
        assert by_city[city].status == "ok", (city, by_city[city])
    assert judge.count > 0
