"""``tracescore demo`` against a real ``tracescore serve``: traces arrive, are extracted, scored."""

from __future__ import annotations

import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.exc import OperationalError

from tests.support.score_rows import wait_for_scores
from tests.support.server_process import ONE_USE_CONNECTIONS, free_port, start_server, wait_for
from tracescore.config import DEFAULT_SCORERS, load_config
from tracescore.extract import extract_runs
from tracescore.offline.demo import AGENTS, DEGRADING_AGENT, DemoSender, parse_rate
from tracescore.offline.demo_chat import CHAT_AGENT, CHAT_SERVICE
from tracescore.store import open_store


def test_demo_traces_are_stored_and_scored(tmp_path: Path) -> None:
    with start_server(tmp_path / "server", idle_timeout=0.3) as server:
        demo = subprocess.run(
            [
                sys.executable,
                "-m",
                "tracescore.cli",
                "demo",
                "--endpoint",
                server.base_url,
                "--rate",
                "12/s",
                "--duration",
                "2.5",
                "--drop-after",
                "0",
                "--seed",
                "7",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert demo.returncode == 0, demo.stderr
        sent = int(demo.stderr.strip().rsplit("sent ", 1)[1].split()[0])
        assert sent >= 20
        stored = wait_for_scores(server.db_url, sent * len(DEFAULT_SCORERS), timeout=30.0)
        rows = [row.model_dump() for row in stored]
    assert len(rows) == sent * len(DEFAULT_SCORERS)
    assert {r["status"] for r in rows} == {"ok"}
    # The three single-turn agents, and the multi-turn one for a quarter of the traces.
    assert {r["agent"] for r in rows} == {a.name for a in AGENTS} | {CHAT_AGENT}
    assert {r["service"] for r in rows} == {a.service for a in AGENTS} | {CHAT_SERVICE}
    assert {r["model"] for r in rows} == {a.model for a in AGENTS}
    assert Counter(r["binding"] for r in rows) == dict.fromkeys(DEFAULT_SCORERS, sent)
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


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGINT, 0), (signal.SIGTERM, 143)])
def test_demo_serve_starts_the_collector_with_its_alert_rules_and_conversation_binding(
    tmp_path: Path, stop: signal.Signals, status: int
) -> None:
    """One command, as the README gives it: the collector with the packaged demo config, then
    the traffic; the collector stays up (dashboard, alerts) until the demo is interrupted
    (Ctrl-C) or stopped (SIGTERM to the demo alone), and stops with it."""
    http_port, grpc_port = free_port(), free_port()
    db_url = f"sqlite:///{tmp_path / 'demo.db'}"
    demo = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracescore.cli",
            "demo",
            "--serve",
            "--endpoint",
            f"http://127.0.0.1:{http_port}",
            "--grpc-port",
            str(grpc_port),
            "--db",
            db_url,
            "--rate",
            "12/s",
            "--duration",
            "3",
            "--drop-after",
            "0",
            "--seed",
            "7",
        ],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The concierge's conversations are scored by the conversation binding once idle (5 s).
        deadline = time.monotonic() + 90
        bindings: set[str] = set()
        while "chat-coverage" not in bindings and time.monotonic() < deadline:
            assert demo.poll() is None, demo.stderr.read() if demo.stderr else ""
            bindings = {r.binding for r in _scores(db_url)}
            time.sleep(0.5)
        assert {*DEFAULT_SCORERS, "chat-coverage"} <= bindings
        alerts = httpx.get(f"http://127.0.0.1:{http_port}/ui/alerts", timeout=10).text
        assert "answers-regressed" in alerts and "chat-memory-regressed" in alerts
        if stop == signal.SIGINT:
            _fills_the_failure_modes_page(db_url, f"http://127.0.0.1:{http_port}")
    finally:
        demo.send_signal(stop)
        _, stderr = demo.communicate(timeout=60)
    assert demo.returncode == status, stderr
    assert "sent " in stderr and f"open http://127.0.0.1:{http_port}/" in stderr
    with socket.socket() as sock:  # the collector stopped with the demo: its port is free
        sock.bind(("127.0.0.1", http_port))
    assert not (tmp_path / "tracescore.db").exists()


def _fills_the_failure_modes_page(db_url: str, base_url: str) -> None:
    """The demo's scorers mark its unhelpful answers failed (a consistency check's name, tone's
    ``fail``): a pass asked for (the button of the failure-modes page, here its API twin)
    groups them, and the page lists the groups."""
    deadline = time.monotonic() + 60
    while sum(r.label not in (None, "pass", "ok") for r in _scores(db_url)) < 10:
        assert time.monotonic() < deadline, "no failed runs"
        time.sleep(0.5)
    with httpx.Client(
        base_url=base_url, timeout=10, limits=ONE_USE_CONNECTIONS
    ) as client:  # one SSL context for the looks
        asked = client.post("/api/v1/insights/passes")
        assert asked.status_code in (202, 409)  # 409: the scheduled pass runs already
        groups: list[dict[str, Any]] = wait_for(
            lambda: client.get("/api/v1/insights").json()["items"], 120, "a failure mode"
        )
        page = client.get("/ui/insights").text
    assert groups[0]["name"] in page.replace("&#39;", "'")


def _scores(db_url: str) -> list[Any]:
    if not Path(db_url.removeprefix("sqlite:///")).exists():
        return []
    try:
        return wait_for_scores(db_url, 0, timeout=1)
    except OperationalError:  # the collector is still creating the tables
        return []


def test_sigint_stops_a_demo_started_in_the_background(tmp_path: Path) -> None:
    """A shell without job control (a script's ``&``, nohup) starts a command with SIGINT
    ignored, and Python then raises no KeyboardInterrupt for it: ``kill -INT`` left
    ``tracescore demo --serve`` and its collector running (issue 50). And one SIGINT while it
    sends stops it all: it stopped the traffic only, then waited for a second."""
    http_port = free_port()
    demo = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracescore.cli",
            "demo",
            "--serve",
            "--endpoint",
            f"http://127.0.0.1:{http_port}",
            "--grpc-port",
            str(free_port()),
            "--db",
            f"sqlite:///{tmp_path / 'demo.db'}",
            "--duration",
            "0",  # until interrupted: one Ctrl-C stops the traffic and the collector
        ],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # as `cmd &` does
    )
    try:
        deadline = time.monotonic() + 180  # a loaded 2-core machine starts it slowly
        with httpx.Client(
            timeout=2, limits=ONE_USE_CONNECTIONS
        ) as client:  # one SSL context for all the looks
            while not _answers(client, f"http://127.0.0.1:{http_port}/healthz"):
                assert demo.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        time.sleep(2)  # sending
        demo.send_signal(signal.SIGINT)
        _, stderr = demo.communicate(timeout=30)
    finally:
        if demo.poll() is None:  # SIGTERM: the demo stops its collector too (SIGKILL would not)
            demo.terminate()
            demo.communicate(timeout=60)
    assert demo.returncode == 0, stderr
    with socket.socket() as sock:  # its collector stopped too: its port is free
        sock.bind(("127.0.0.1", http_port))


def _answers(client: httpx.Client, url: str) -> bool:
    try:
        return client.get(url).status_code == 200
    except httpx.HTTPError:
        return False


def test_demo_prints_its_config(tmp_path: Path) -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "tracescore.cli", "demo", "--print-config"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    (tmp_path / "demo.yaml").write_text(printed)
    config = load_config(tmp_path / "demo.yaml")
    assert [r.name for r in config.alerts.rules] == ["answers-regressed", "chat-memory-regressed"]
    assert any(b.target == "conversation" for b in config.scorers)
