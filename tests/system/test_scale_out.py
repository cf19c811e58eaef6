"""Three ``tracescore serve`` processes on one PostgreSQL, as docker-compose.yml runs them.

Correctness must not depend on the gateway's trace-id routing, so every span and GenAI log
record of every trace goes to a process picked at random. One process is made to hang while it holds leases and is
then killed with ``kill -9``; the other two must finish its traces once the leases expire.
Evidence comes from three independent places: the ``spans`` and ``logs`` tables (nothing lost,
nothing doubled), the ``scores`` table (one row per run and binding) and the scorer's own call log
(each run scored to completion exactly once, so leases, not upserts, prevented double work).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support.agent_otlp import AgentTrace, agent_trace, export_logs_request, scatter
from tests.support.counting_scorer import CALL_LOG_ENV, HANG_AFTER_ENV
from tests.support.paths import REPO
from tests.support.server_process import ServerProcess, start_server, wait_for

LEASE_SECONDS = 3.0
BINDING = "counted"
CONFIG = {
    "assembly": {"lease_seconds": LEASE_SECONDS, "idle_timeout": 0.5},
    "scorers": [{"name": BINDING, "scorer": "tests.support.counting_scorer:counting"}],
    # Small claims so the doomed process holds a few traces, not the whole backlog; one scoring
    # process per replica: three replicas of the default two each on 2 cores starved the
    # scorers until their 3 s leases expired, and then a run is rightly scored twice.
    "workers": {"claim_batch": 2, "poll_interval": 0.05, "processes": 1},
}


def _send(servers: list[ServerProcess], traces: list[AgentTrace], rng: random.Random) -> None:
    """Each GenAI log record to a random process, even before its spans; then the spans."""
    logs = [
        (rng.randrange(len(servers)), "/v1/logs", export_logs_request([record]))
        for trace in traces
        for record in trace.logs
    ]
    spans = [(target, "/v1/traces", body) for target, body in scatter(traces, len(servers), rng)]
    with httpx.Client(timeout=30) as client:
        for target, path, body in logs + spans:
            response = client.post(
                servers[target].base_url + path,
                content=body,
                headers={"Content-Type": "application/x-protobuf"},
            )
            assert response.status_code == 200, response.text


def _calls(path: Path) -> list[tuple[str, str, str, int]]:
    """(event, trace id, span id, pid) per line of the scorer's call log."""
    if not path.exists():
        return []
    lines = [line.split() for line in path.read_text().splitlines()]
    return [(event, trace_id, span_id, int(pid)) for event, trace_id, span_id, pid in lines]


@pytest.fixture
def servers(tmp_path: Path, empty_pg_url: str) -> Iterator[list[ServerProcess]]:
    """Three processes on ``empty_pg_url``; the first hangs in the scorer after one completed call.

    The first starts alone and creates the schema; the other two then start together.
    (Replicas starting at the same instant on an empty database race on CREATE TABLE, which
    this test is not about.)
    """
    call_log = tmp_path / "calls.log"
    env = {"PYTHONPATH": str(REPO), CALL_LOG_ENV: str(call_log)}

    def start(n: int) -> ServerProcess:
        return start_server(
            tmp_path / f"replica-{n}",
            db_url=empty_pg_url,
            config=CONFIG,
            idle_timeout=None,
            env={**env, HANG_AFTER_ENV: "1"} if n == 0 else env,
        )

    with ExitStack() as stack:
        first = stack.enter_context(start(0))
        with ThreadPoolExecutor(2) as pool:
            others = [
                stack.enter_context(f.result())
                for f in [pool.submit(start, 1), pool.submit(start, 2)]
            ]
        yield [first, *others]


def test_every_trace_scored_once_across_processes_and_a_crash(
    servers: list[ServerProcess], tmp_path: Path, empty_pg_url: str
) -> None:
    doomed, survivors = servers[0], servers[1:]
    call_log = tmp_path / "calls.log"
    rng = random.Random(20261122)
    before_crash = [agent_trace(rng, city=f"city-{n}") for n in range(24)]
    after_crash = [agent_trace(rng, city=f"city-{n}") for n in range(24, 40)]

    for wave in range(0, len(before_crash), 4):
        _send(servers, before_crash[wave : wave + 4], rng)

    def doomed_is_stuck() -> bool:
        """It completed a call, and stored that trace's scores, and hangs in the next call.

        (Killed between a call's end and its trace's commit, the process leaves that run to be
        scored again, rightly: nothing of it was recorded.)
        """
        calls = _calls(call_log)
        doomed_pids = set(doomed.pids())
        events = Counter((event, pid in doomed_pids) for event, *_, pid in calls)
        if not events["start", True] > events["done", True] >= 1:
            return False
        finished = {
            trace for event, trace, _, pid in calls if event == "done" and pid in doomed_pids
        }
        with watcher.connect() as connection:
            scored = {
                bytes(trace_id).hex()  # stored as its bytes
                for trace_id in connection.execute(
                    text("SELECT trace_id FROM traces WHERE state = 'scored'")
                ).scalars()
            }
        return finished <= scored

    watcher = create_engine(empty_pg_url)
    try:
        wait_for(
            doomed_is_stuck,
            30,
            "the first process to complete one call, store it, and hang in the next",
        )
    finally:
        watcher.dispose()
    doomed.kill()  # kill -9 of the service and its scoring process

    for wave in range(0, len(after_crash), 4):
        _send(survivors, after_crash[wave : wave + 4], rng)

    traces = before_crash + after_crash
    runs = {(t.trace_id, t.agent_span_id) for t in traces}
    engine = create_engine(empty_pg_url)
    try:

        def all_scored() -> bool:
            with engine.connect() as connection:
                return connection.execute(text("SELECT count(*) FROM scores")).scalar() >= len(runs)

        wait_for(all_scored, LEASE_SECONDS + 30, f"{len(runs)} scores")
        time.sleep(LEASE_SECONDS)  # room for any wrongful second claim to show up
        with engine.connect() as connection:
            spans = [
                (bytes(t).hex(), bytes(s).hex())  # ids are stored as bytes
                for t, s in connection.execute(text("SELECT trace_id, span_id FROM spans"))
            ]
            logs = [
                (bytes(t).hex(), bytes(s).hex())
                for t, s in connection.execute(text("SELECT trace_id, span_id FROM logs"))
            ]
            scores = [
                (bytes(t).hex(), bytes(s).hex(), binding, status)
                for t, s, binding, status in connection.execute(
                    text(
                        "SELECT trace_id, span_id, binding, status FROM scores JOIN score_series ON score_series.id = scores.series_id"
                    )
                )
            ]
            states = Counter(connection.execute(text("SELECT state FROM traces")).scalars())
    finally:
        engine.dispose()

    # No lost or doubled span or log record, including those only the killed process took.
    sent = Counter((t.trace_id, span.span_id.hex()) for t in traces for span in t.spans)
    assert Counter(map(tuple, spans)) == sent
    assert Counter(map(tuple, logs)) == Counter(
        (t.trace_id, record.span_id.hex()) for t in traces for record in t.logs
    )
    # One stored score per (trace, span, binding), all successful.
    assert Counter(
        (trace_id, span_id, binding) for trace_id, span_id, binding, _ in scores
    ) == Counter((trace_id, span_id, BINDING) for trace_id, span_id in runs)
    assert {status for *_, status in scores} == {"ok"}
    assert states == {"scored": len(traces)}

    calls = _calls(call_log)
    survivor_pids = {pid for server in survivors for pid in server.pids()}

    def runs_of(event: str, pids: set[int] | None = None) -> Counter[tuple[str, str]]:
        return Counter(
            (t, s) for e, t, s, pid in calls if e == event and (pids is None or pid in pids)
        )

    assert runs_of("done") == Counter(runs), "each run must be scored to completion exactly once"
    # Runs started but never finished are exactly the killed process's stuck ones...
    doomed_pid = {pid for *_, pid in calls} - survivor_pids
    stranded = runs_of("start") - runs_of("done")
    assert stranded and set(stranded) == set(
        runs_of("start", doomed_pid) - runs_of("done", doomed_pid)
    )
    # ...and the other processes finished them once its leases expired.
    assert set(stranded) <= set(runs_of("done", survivor_pids))
