"""``when:`` on a running service (issue 37, item 1): a binding with
``when: {tool_called: search_web}`` scores only the runs that called it, and its coverage counts
only those, while a binding without ``when:`` scores every run."""

from __future__ import annotations

import random
from pathlib import Path

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.score_rows import wait_for_scores
from tests.support.server_process import start_server

CONFIG = {
    "scorers": [
        {"name": "every-run", "scorer": "completeness"},
        {
            "name": "searched",
            "scorer": "completeness",
            "when": {"tool_called": "search_web", "not": {"tool_failed": True}},
        },
    ]
}


def test_when_scores_only_the_runs_that_called_the_tool(tmp_path: Path) -> None:
    rng = random.Random(37)
    searched = [agent_trace(rng, "Paris", tool="search_web") for _ in range(2)]
    other = [agent_trace(rng, "Oslo") for _ in range(3)]
    with start_server(tmp_path, config=CONFIG) as server:
        for trace in searched + other:
            response = server.http.post(
                "/v1/traces",
                content=export_request(trace.spans),
                headers={"Content-Type": "application/x-protobuf"},
            )
            assert response.status_code == 200
        rows = wait_for_scores(server.db_url, 7)
        coverage = server.http.get("/api/coverage").json()["bindings"]
    by_binding: dict[str, set[str]] = {}
    for row in rows:
        by_binding.setdefault(row.binding, set()).add(row.trace_id)
    assert by_binding["every-run"] == {t.trace_id for t in searched + other}
    assert by_binding["searched"] == {t.trace_id for t in searched}
    eligible = {entry["binding"]: entry["eligible"] for entry in coverage}
    assert eligible == {"every-run": 5, "searched": 2}
