"""A store holding really scored captures and the dashboard app over it (module fixtures).

Every capture under ``tests/fixtures/captures`` plus a hostile agent trace, scored by the real
worker with code scorers, a custom scorer with reasons, and faithfulness through the scripted
judge server (so judge claims, verdicts and cost are real rows). ``tests/web/conftest.py``
serves the fixtures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from tests.support.judge_server import JudgeServer, json_reply, text_reply
from tests.support.paths import CAPTURES
from tests.support.score_rows import ScoreView
from tests.support.web_traces import agent_trace_json
from tracescore.config import parse_config
from tracescore.ingest.files import load_traces
from tracescore.ingest.unpack import drain
from tracescore.pipeline.scoring_task import build_worker
from tracescore.service import create_app
from tracescore.store import open_store
from tracescore.store.scores import SCORES

FAR_FUTURE = 4_000_000_000.0
HOSTILE_TRACE = "0badc0de" * 4
CLAIMS = ["It is sunny in Paris", "It is <i>21</i> degrees"]
VERDICTS = [
    {"verdict": "yes", "reason": "the tool said sunny"},
    {"verdict": "no", "reason": "no temperature in the context"},
]


def dashboard_config(judge_url: str, api_keys: list[str] | None = None) -> str:
    return f"""
server: {{api_keys: {json.dumps(api_keys or [])}}}
judges:
  default: {{model: openai/gpt-4o-mini, api_base: "{judge_url}", timeout: 10, backoff_base: 0.01}}
scorers:
  - {{name: answer-present, scorer: "tests.support.custom_scorers:answer_present", threshold: 0.5}}
  - {{name: tone, scorer: tone}}
  - {{name: exploding, scorer: "tests.support.custom_scorers:exploding", filter: {{agent: [WeatherBot]}}}}
  - {{name: faithfulness, scorer: faithfulness, filter: {{agent: ["re:.*Bot$"]}}}}
"""


@pytest.fixture(scope="module")
def judge() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        server.script("FaithfulnessClaims", json_reply({"claims": CLAIMS}))
        server.script("FaithfulnessVerdicts", json_reply({"verdicts": VERDICTS}))
        server.default = text_reply("One of two claims is backed by the <b>tool result</b>.")
        yield server


def seed_scored_store(url: str, judge: JudgeServer, captures: list[Path]) -> Any:
    """A store with the captures and the hostile trace, scored by the real worker."""
    store = open_store(url)
    for trace in load_traces(captures):
        store.write(trace.spans, trace.logs)
    client = TestClient(create_app(parse_config(dashboard_config(judge.base_url)), store))
    response = client.post(
        "/v1/traces",
        content=agent_trace_json(HOSTILE_TRACE),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    drain(store)  # the journaled request into rows, as the unpacker of a running service would
    worker = build_worker(parse_config(dashboard_config(judge.base_url)).scoring(), store)

    async def score_all() -> None:
        for claim in store.queue.claim(worker.owner, 1000, 30.0, now=FAR_FUTURE):
            await worker.process(claim)

    asyncio.run(score_all())
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, judge: JudgeServer) -> Any:
    store = seed_scored_store(
        f"sqlite:///{tmp_path_factory.mktemp('web') / 'tracescore.db'}", judge, [CAPTURES]
    )
    yield store
    store.close()


@pytest.fixture(scope="module")
def client(store: Any, judge: JudgeServer) -> TestClient:
    return TestClient(create_app(parse_config(dashboard_config(judge.base_url)), store))


def stored_scores(store: Any) -> list[ScoreView]:
    with store.engine.connect() as connection:
        return [ScoreView(**row._mapping) for row in connection.execute(select(SCORES))]
