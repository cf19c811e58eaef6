"""A binding's ``usd_per_day`` and ``per_minute`` hold while several scoring processes flood it
at once (issue 46, item 4: feedback-triggered judging with ``usd_per_day: 0.001`` spent
$0.002688, 2.7×, in 32 calls; with ``per_minute: 30``, 48 calls landed within 60 s).

Three real processes (:mod:`tests.support.judge_flood`, the service's own scoring worker)
score one binding against the scripted judge server, on SQLite and PostgreSQL; the judge
server's own log of requests is what the caps are checked against. The per-minute floods must
outlast a minute, so both databases' run at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

from tests.support.judge_server import JudgeServer, Reply
from tests.support.paths import CAPTURES
from tracescore.ingest.files import load_traces
from tracescore.store import SpanStore, open_store

PROCESSES = 3
TOKENS = (1000, 100)
CALL_USD = 1000 * 0.15e-6 + 100 * 0.6e-6
"""gpt-4o-mini's price of one scripted answer."""
RUN_USD = 2 * CALL_USD
"""Toxicity asks for the verdicts, then for the reason."""
VERDICT = Reply(content=json.dumps({"verdicts": [{"verdict": "no", "reason": "polite"}]}))


def _stored_trace(db_url: str) -> tuple[SpanStore, str]:
    store = open_store(db_url)
    (trace,) = load_traces([CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"])
    store.write(trace.spans, trace.logs)
    return store, trace.spans[0].trace_id


def _start_flood(
    tmp_path: Path, db_url: str, judge: JudgeServer, limits: str, runs: int, interval: float
) -> list[subprocess.Popen[bytes]]:
    """``PROCESSES`` processes, each starting ``runs`` scores of the capped binding."""
    store, trace_id = _stored_trace(db_url)
    store.close()
    config = tmp_path / "flood.yaml"
    config.write_text(
        f"judges:\n  default: {{model: openai/gpt-4o-mini, api_base: '{judge.base_url}', "
        "cache: false, timeout: 30}\n"
        f"scorers:\n  - {{name: capped, scorer: toxicity, limits: {limits}}}\n"
        "workers: {concurrency: 64}\n"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    command = [sys.executable, "-m", "tests.support.judge_flood", db_url, str(config), trace_id]
    return [
        subprocess.Popen([*command, str(runs), str(interval)], stdout=subprocess.PIPE, env=env)
        for _ in range(PROCESSES)
    ]


def _statuses(floods: list[subprocess.Popen[bytes]]) -> list[str]:
    """Statuses of every score the flood's processes made."""
    statuses: list[str] = []
    for flood in floods:
        out, _ = flood.communicate(timeout=300)
        assert flood.returncode == 0
        statuses += json.loads(out)
    return statuses


def test_the_daily_budget_overshoots_by_at_most_one_run(tmp_path: Path, db_url: str) -> None:
    budget = 3.5 * RUN_USD
    with JudgeServer() as judge:
        judge.script("ToxicityVerdicts", Reply(VERDICT.content, delay=0.3, usage=TOKENS))
        judge.default = Reply("A scripted reason.", usage=TOKENS)
        limits = f"{{usd_per_day: {budget}}}"
        statuses = _statuses(_start_flood(tmp_path, db_url, judge, limits, 10, 0.0))
        calls = judge.count
    spent = calls * CALL_USD
    # The estimate is the cost of one run: the last admission may pass the cap by that much.
    assert budget <= spent <= budget + RUN_USD, (calls, statuses)
    assert 2 * statuses.count("ok") == calls and len(statuses) == 10 * PROCESSES
    assert set(statuses) == {"ok", "skipped_budget"}


def _most_in_a_minute(times: list[float]) -> int:
    times = sorted(times)
    return max(
        sum(1 for other in times[index:] if other < start + 60.0)
        for index, start in enumerate(times)
    )


def _verdict_times(judge: JudgeServer) -> list[float]:
    """When each run's first call, for its verdicts, reached the judge: per_minute counts runs."""
    return [
        at
        for at, body in zip(judge.received_at, judge.requests, strict=True)
        if "ToxicityVerdicts" in json.dumps(body)
    ]


def test_per_minute_holds_in_every_60_s_window_under_a_flood(
    tmp_path: Path, sqlite_url: str, pg_url: str
) -> None:
    """Both databases flooded at once, each by its own processes against its own judge server:
    the minute the window must move past is waited out once, not once per database."""
    per_minute = 4
    floods = {}
    with ExitStack() as stack:
        for name, db_url in (("sqlite", sqlite_url), ("postgresql", pg_url)):
            judge = stack.enter_context(JudgeServer())
            # Replies of varied length: calls do not land when they were admitted.
            judge.default = Reply("A scripted reason.", usage=TOKENS)
            judge.script(
                "ToxicityVerdicts",
                *(
                    Reply(VERDICT.content, delay=delay, usage=TOKENS)
                    for delay in (2.5, 0.1, 1.2, 0.4) * 10
                ),
            )
            (tmp_path / name).mkdir()
            # 65 s of a new run every half second from each process: past the first minute.
            limits = f"{{per_minute: {per_minute}}}"
            floods[name] = (judge, _start_flood(tmp_path / name, db_url, judge, limits, 130, 0.5))
        for name, (judge, processes) in floods.items():
            statuses = _statuses(processes)
            verdicts = _verdict_times(judge)
            assert _most_in_a_minute(verdicts) <= per_minute, (name, sorted(verdicts))
            # The window moves: runs past the first minute were judged too.
            assert len(verdicts) > per_minute, name
            assert statuses.count("ok") == len(verdicts) == judge.count / 2, name
            assert set(statuses) == {"ok", "skipped_rate"}, name
