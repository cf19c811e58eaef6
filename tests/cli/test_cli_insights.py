"""``tracescore insights``: the failure modes printed from exported runs (no database) and from
a real SQLite database, whose saved pass ``GET /api/v1/insights`` then pages through."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.support.failure_modes import planted_stream, store_runs
from tracescore.cli import app
from tracescore.insights.api import insights_router
from tracescore.restapi import V1
from tracescore.store import open_store


def test_exported_runs_are_grouped_without_a_database(tmp_path: Path) -> None:
    exported = tmp_path / "runs.jsonl"
    lines = [
        json.dumps(
            {
                "traceId": run.trace_id,
                "spanId": run.span_id,
                "agentName": run.agent,
                "input": {"inputMessages": [{"role": "user", "content": run.request}]},
                "output": [{"role": "assistant", "content": run.answer}],
                "tracescore": {"binding": "relevancy", "reason": run.reason},
            }
        )
        for run in planted_stream(per_mode=40, noise=20)
    ]
    exported.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(app, ["insights", str(exported), "--json"])
    assert result.exit_code == 0, result.output
    groups = json.loads(result.output)
    names = " ".join(group["name"] for group in groups)
    assert "answered in Spanish to an English question" in names and "refused" in names
    assert not (tmp_path / "tracescore.db").exists()


def test_a_database_pass_is_printed_saved_and_served(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'insights.db'}"
    store = open_store(url)
    start = datetime.now(UTC).timestamp() - 1800
    store_runs(store, planted_stream(per_mode=50, noise=20, start=start, span=900))
    store.close()
    result = CliRunner().invoke(app, ["insights", "--db", url, "--window", "1h", "--save"])
    assert result.exit_code == 0, result.output
    assert "failure modes among 170 failed runs" in result.output.splitlines()[0]
    assert "get_weather timed out, answer apologised" in result.output
    api = FastAPI()
    store = open_store(url)
    api.include_router(insights_router(store.engine, V1))
    client = TestClient(api)
    first = client.get("/api/v1/insights", params={"limit": 1}).json()
    assert len(first["items"]) == 1 and first["next_cursor"]
    rest = client.get("/api/v1/insights", params={"cursor": first["next_cursor"]}).json()
    ids = [first["items"][0]["id"]] + [group["id"] for group in rest["items"]]
    assert len(set(ids)) == len(ids) >= 3
    runs = client.get(f"/api/v1/insights/{ids[0]}/runs", params={"limit": 500}).json()
    assert len(runs["items"]) == first["items"][0]["size"] and runs["next_cursor"] is None
    assert client.get("/api/v1/insights/nope/runs").status_code == 404
    assert client.get("/api/v1/insights", params={"cursor": "bad"}).status_code == 422
    bad_window = CliRunner().invoke(app, ["insights", "--db", url, "--window", "soon"])
    assert bad_window.exit_code == 2 and "--window" in bad_window.output
    store.close()
