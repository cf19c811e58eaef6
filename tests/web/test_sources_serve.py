"""The sources view and empty runs on a running ``tracescore serve`` (issue 31, items 2 and 5).

A trace from a library tracescore knows nothing of and the spans of a GenAI instrumentation with
content capture off are sent to a real service, with code scorers and a judge scorer on a
scripted judge: ``GET /api/sources`` names both sources with their reasons, the unread metric
moves, the service logs each source once, the content-less runs are ``not_scorable`` for every
scorer without a single judge call, and the counts survive a restart and add up after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.support.judge_server import JudgeServer
from tests.support.server_process import ServerProcess, start_server, wait_for
from tests.support.source_traces import CONTENTLESS_SPANS, GENAI_SERVICE, LEGACY_SCOPE, acme_export
from tracescore.extract.content import NO_CONTENT_REASON

API_KEY = "sources-test-key"
AUTHORIZATION = {"Authorization": f"Bearer {API_KEY}"}
PROTOBUF = {**AUTHORIZATION, "Content-Type": "application/x-protobuf"}
CONTENTLESS_TRACES = 2  # the capture's two chat calls


def sources_of(server: ServerProcess) -> dict[tuple[str, str], dict[str, Any]]:
    response = httpx.get(f"{server.base_url}/api/sources", headers=AUTHORIZATION, timeout=10)
    assert response.status_code == 200, response.text
    return {(s["service"], s["scope"]): s for s in response.json()["sources"]}


def unread_metric(server: ServerProcess, service: str, reason: str) -> float:
    text = httpx.get(f"{server.base_url}/metrics", headers=AUTHORIZATION, timeout=10).text
    line = f'tracescore_traces_unread_total{{reason="{reason}",service="{service}"}} '
    values = [float(row[len(line) :]) for row in text.splitlines() if row.startswith(line)]
    return values[0] if values else 0.0


def test_unread_sources_and_empty_runs_on_a_running_service(tmp_path: Path, db_url: str) -> None:
    with JudgeServer() as judge:
        config = {
            "server": {"api_keys": [API_KEY]},
            "judges": {
                "default": {"model": "openai/judge", "api_base": judge.base_url, "max_retries": 0}
            },
            "scorers": [
                {"name": "tone", "scorer": "tone"},
                {
                    "name": "tools",
                    "scorer": "tool-call-accuracy-code",
                    "options": {"expected_tool": "get_weather"},
                },
                {"name": "relevancy", "scorer": "answer-relevancy"},
            ],
            "workers": {
                "poll_interval": 0.05,
                "processes": 1,
            },  # one process: each source logged once
        }
        acme_body = acme_export(1)
        with start_server(tmp_path / "first", db_url=db_url, config=config) as server:
            assert httpx.get(f"{server.base_url}/api/sources", timeout=10).status_code == 401
            for body in (acme_body, CONTENTLESS_SPANS.read_bytes()):
                response = httpx.post(
                    f"{server.base_url}/v1/traces", content=body, headers=PROTOBUF, timeout=10
                )
                assert response.status_code == 200, response.text
            # Each source once all its traces are counted: the capture's second trace may be
            # scored a batch after its first on a loaded machine.
            found = wait_for(
                lambda: s if _counted(s := sources_of(server)) == {1, 2} else None,
                60,
                "both sources, every trace counted",
            )
            acme, genai = found[("acme-shop", "acme.agents")], found[(GENAI_SERVICE, LEGACY_SCOPE)]
            assert (
                acme["spans"],
                acme["traces"],
                acme["runs"],
                acme["unread_traces"],
                acme["reason"],
            ) == (1, 1, 0, 1, "unknown_convention")  # its prompt is content no reader knows
            assert acme["detail"].startswith(
                "unknown convention: scope acme.agents, content in acme.answer, acme.prompt"
            )
            assert (genai["spans"], genai["traces"], genai["runs"], genai["runs_with_content"]) == (
                2,
                2,
                2,
                0,
            )
            assert (genai["reason"], genai["convention"]) == ("content_not_captured", "otel-genai")
            assert (
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT"
                in genai["detail"]
            )
            # Relayed from the scoring processes a quarter second at a time, after the write.
            wait_for(
                lambda: unread_metric(server, "acme-shop", "unknown_convention") == 1,
                30,
                "the metric",
            )
            wait_for(
                lambda: unread_metric(server, GENAI_SERVICE, "content_not_captured") == 2,
                30,
                "the metric",
            )

            scores = httpx.get(
                f"{server.base_url}/api/scores",
                params={"service": GENAI_SERVICE, "steps": True},
                headers=AUTHORIZATION,
                timeout=10,
            ).json()["items"]
            assert sorted(row["binding"] for row in scores) == sorted(
                ["tone", "tools", "relevancy"] * 2
            )
            assert {(row["status"], row["reason"]) for row in scores} == {
                ("not_scorable", NO_CONTENT_REASON)
            }
            assert judge.count == 0
            log = server.output()
            for service, scope in ((GENAI_SERVICE, LEGACY_SCOPE), ("acme-shop", "acme.agents")):
                assert (
                    log.count(f"source service={service!r} scope={scope!r} gives nothing to score")
                    == 1
                ), log

        # Another process on the same database: the counts add up to what both read.
        with start_server(tmp_path / "second", db_url=db_url, config=config) as server:
            assert (
                httpx.post(
                    f"{server.base_url}/v1/traces",
                    content=acme_export(2),
                    headers=PROTOBUF,
                    timeout=10,
                ).status_code
                == 200
            )
            acme = wait_for(
                lambda: (
                    s
                    if (s := sources_of(server)[("acme-shop", "acme.agents")])["traces"] == 2
                    else None
                ),
                60,
                "the second trace",
            )
            assert (acme["spans"], acme["unread_traces"], acme["reason"]) == (
                2,
                2,
                "unknown_convention",
            )
            assert sources_of(server)[(GENAI_SERVICE, LEGACY_SCOPE)]["traces"] == CONTENTLESS_TRACES


def _counted(sources: dict[tuple[str, str], dict[str, Any]]) -> set[int]:
    """The traces counted per source (acme's one, the capture's two once both are read)."""
    return {source["traces"] for source in sources.values()} if len(sources) == 2 else set()
