"""``tracescore demo`` against a real ``tracescore serve``: traces arrive, are extracted, scored."""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.server_process import start_server
from tests.test_pipeline_e2e import _wait_for_scores
from tracescore.config import DEFAULT_SCORERS
from tracescore.extract import extract_runs
from tracescore.offline.demo import AGENTS, DEGRADING_AGENT, DemoSender, parse_rate
from tracescore.offline.demo_chat import CHAT_AGENT, CHAT_SERVICE
from tracescore.store import open_store


def test_demo_traces_are_stored_and_scored(tmp_path: Path) -> None:
    with start_server(tmp_path / "server", idle_timeout=0.3) as server:
        demo = subprocess.run(
            [sys.executable, "-m", "tracescore.cli", "demo", "--endpoint", server.base_url,
             "--rate", "12/s", "--duration", "2.5", "--drop-after", "0", "--seed", "7"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert demo.returncode == 0, demo.stderr
        sent = int(demo.stderr.strip().rsplit("sent ", 1)[1].split()[0])
        assert sent >= 20
        stored = _wait_for_scores(server.db_url, sent * len(DEFAULT_SCORERS), timeout=30.0)
        rows = [row.model_dump() for row in stored]
    assert len(rows) == sent * len(DEFAULT_SCORERS)
    assert {r["status"] for r in rows} == {"ok"}
    # The three single-turn agents, and the multi-turn one for a quarter of the traces.
    assert {r["agent"] for r in rows} == {a.name for a in AGENTS} | {CHAT_AGENT}
    assert {r["service"] for r in rows} == {a.service for a in AGENTS} | {CHAT_SERVICE}
    assert {r["model"] for r in rows} == {a.model for a in AGENTS}
    assert Counter(r["binding"] for r in rows) == {name: sent for name in DEFAULT_SCORERS}
    # Degraded from the start (--drop-after 0): weather-bot's answers miss the question's keywords.
    coverage = {
        agent.name: statistics.fmean(
            r["score"]
            for r in rows
            if r["agent"] == agent.name and r["binding"] == "keyword-coverage"
        )
        for agent in AGENTS
    }
    assert coverage[DEGRADING_AGENT] < min(v for k, v in coverage.items() if k != DEGRADING_AGENT)

    store = open_store(server.db_url)
    # A tool-using agent's trace (the chat agent's turns have neither reasoning nor tools).
    trace = store.load_trace(next(r["trace_id"] for r in rows if r["agent"] != CHAT_AGENT))
    agent_run = next(run for run in extract_runs(trace) if run.primary)
    parts = [part.type for part in agent_run.output[0].content.parts]
    assert agent_run.convention == "otel-genai" and agent_run.input.system_messages
    assert parts[0] == "reasoning" and "tool-invocation" in parts and parts[-1] == "text"
    invocations = [
        p.tool_invocation for p in agent_run.output[0].content.parts if p.tool_invocation
    ]
    assert all(i.state == "result" and i.result is not None for i in invocations)
    store.close()


def test_one_agent_degrades_after_the_drop() -> None:
    sender = DemoSender("http://127.0.0.1:9", seed=3, drop_after=3600)
    try:
        by_agent = {a.name: a for a in AGENTS}
        before = Counter(sender.quality(by_agent[DEGRADING_AGENT]) for _ in range(300))
        sender.drop_after = 0
        after = Counter(sender.quality(by_agent[DEGRADING_AGENT]) for _ in range(300))
        others = Counter(sender.quality(by_agent["support-bot"]) for _ in range(300))
    finally:
        sender.shutdown()
    assert before["bad"] < 60 and others["bad"] < 60
    assert after["bad"] > 200


def test_rates() -> None:
    rates = [parse_rate(t) for t in ("2", "2/s", "90/min", "720/h", " 0.5 / s ")]
    assert rates == [2, 2, 1.5, 0.2, 0.5]
    for bad in ("0", "-1/s", "fast", "3/day"):
        with pytest.raises(ValueError, match="positive rate"):
            parse_rate(bad)
