"""Rebuilt runs over the REST API, and reasoning shown once (issue 19, items 4 and 7).

A real ``tracescore serve`` process on a SQLite file receives real captures over OTLP/HTTP;
``GET /api/traces/{id}/runs`` must return exactly what ``tracescore extract`` prints for the
same payload, and the dashboard's trace page and the judges' view must show each reasoning step
of a two-step Pydantic AI run once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from tests.support.extract_support import capture_runs, only
from tests.support.paths import CAPTURES
from tests.support.server_process import ServerProcess, login_session, start_server
from tracescore.cli import app
from tracescore.ingest.files import load_traces
from tracescore.scorers.llm.run_text import trajectory
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.web.auth import COOKIE_NAME

API_KEY = "runs-api-test-key"
AUTHORIZATION = {"Authorization": f"Bearer {API_KEY}"}
AGENTS = CAPTURES / "openinference-openai-agents" / "tool_call"
REASONING = CAPTURES / "pydantic-ai" / "reasoning_tool_call"
STEP_REASONING = [
    "The user asks about the weather in Paris, so I should call get_weather.",
    "The tool says sunny and 21 degrees Celsius; I can answer now.",
]


def _trace_id(capture: Path) -> str:
    (trace,) = load_traces([capture])
    return trace.trace_id


# Pydantic AI names the conversation (gen_ai.conversation.id); this service prefers another
# attribute the spans carry, so the runs it scored name that one.
CONFIG = {
    "server": {"api_keys": [API_KEY]},
    "scorers": [{"name": "tone", "scorer": "tone"}],
    "conversations": {"id_attributes": ["gen_ai.agent.call.id", "gen_ai.conversation.id"]},
}


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runs-api-config") / "tracescore.yaml"
    path.write_text(json.dumps(CONFIG))  # JSON is YAML
    return path


def _extract_cli(config: Path, capture: Path, *args: str) -> list[dict[str, Any]]:
    """``tracescore extract`` with the service's configuration."""
    result = CliRunner().invoke(app, ["extract", str(capture), "--config", str(config), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_server(tmp_path_factory.mktemp("runs-api"), config=CONFIG) as running:
        with httpx.Client(base_url=running.base_url, timeout=10, headers=AUTHORIZATION) as http:
            for capture in (AGENTS, REASONING):
                for path in sorted(capture.glob("*.pb")):
                    response = http.post(
                        "/v1/traces",
                        content=path.read_bytes(),
                        headers={"Content-Type": "application/x-protobuf"},
                    )
                    assert response.status_code == 200, response.text
            deadline = time.monotonic() + 20
            for capture in (AGENTS, REASONING):
                url = f"/api/traces/{_trace_id(capture)}"
                while http.get(url).status_code != 200 and time.monotonic() < deadline:
                    time.sleep(0.1)
                # Every span stored: the unpacker may still be writing the later requests.
                expected = sum(len(t.spans) for t in load_traces([capture]))
                while len(http.get(url).json()["spans"]) < expected:
                    assert time.monotonic() < deadline, f"{capture} not stored"
                    time.sleep(0.1)
        yield running


@pytest.fixture
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=10, headers=AUTHORIZATION) as client:
        yield client


def test_runs_route_returns_what_tracescore_extract_prints(
    http: httpx.Client, config_file: Path
) -> None:
    for capture in (AGENTS, REASONING):
        response = http.get(f"/api/traces/{_trace_id(capture)}/runs")
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.json() == _extract_cli(config_file, capture), capture
    # The conversation id is the one the service's conversations.id_attributes name.
    runs = http.get(f"/api/traces/{_trace_id(REASONING)}/runs").json()
    (trace,) = load_traces([REASONING])
    agent_call = {
        str(s.attributes["gen_ai.agent.call.id"])
        for s in trace.spans
        if "gen_ai.agent.call.id" in s.attributes
    }
    assert {run["conversationId"] for run in runs} == agent_call
    assert {
        run.conversation_id for run in capture_runs("pydantic-ai", "reasoning_tool_call")
    }.isdisjoint(agent_call)  # by default the conversation id is another


def test_runs_route_filters_like_the_cli(http: httpx.Client, config_file: Path) -> None:
    url = f"/api/traces/{_trace_id(AGENTS)}/runs"
    primary = http.get(url, params={"primary": "true"}).json()
    assert primary == _extract_cli(config_file, AGENTS, "--primary")
    assert [(r["kind"], r["agentName"]) for r in primary] == [("agent", "WeatherBot")]
    both = http.get(url, params=[("kind", "llm"), ("kind", "tool")]).json()
    assert both == _extract_cli(config_file, AGENTS, "--kind", "llm", "--kind", "tool")
    assert {r["kind"] for r in both} == {"llm", "tool"} and len(both) == 3
    wrapper = http.get(url, params={"kind": "agent"}).json()
    assert [(r["agentName"], r["primary"]) for r in wrapper] == [
        ("Agent workflow", False),
        ("WeatherBot", True),
    ]


def test_runs_route_refuses_what_it_cannot_answer(
    http: httpx.Client, server: ServerProcess
) -> None:
    url = f"/api/traces/{_trace_id(AGENTS)}/runs"
    assert (
        http.get(url, params={"kind": "chain"}).status_code == 422
    )  # a bad parameter, as everywhere
    assert http.get("/api/traces/not-hex/runs").status_code == 422  # a problem, as every bad id
    assert http.get(f"/api/traces/{'0' * 31}1/runs").status_code == 404
    assert httpx.get(server.base_url + url, timeout=10).status_code == 401


def test_dashboard_shows_each_reasoning_step_once(server: ServerProcess) -> None:
    cookies = {COOKIE_NAME: login_session(server.base_url, API_KEY)}
    page = httpx.get(
        f"{server.base_url}/ui/traces/{_trace_id(REASONING)}", cookies=cookies, timeout=10
    )
    assert page.status_code == 200
    for text in STEP_REASONING:
        assert page.text.count(f'<div class="text">{text}</div>') == 1, text


def test_judges_see_each_reasoning_step_once_in_its_place() -> None:
    (agent,) = only(capture_runs("pydantic-ai", "reasoning_tool_call"), "agent")
    steps = trajectory(ScorerRun.of(agent))
    assert [s.split("\n")[0] for s in steps] == [
        f"reasoning: {STEP_REASONING[0]}",
        'tool call get_weather with arguments {"city": "Paris"}',
        f"reasoning: {STEP_REASONING[1]}",
    ]
