"""``kill -9`` under sustained load, then a restart on the same database.

A client keeps exporting agent traces (one OTLP/HTTP request per trace, 4 spans each) while the
server scores them with ``tests.support.counting_scorer:counting``, which appends a ``start`` and a
``done`` line per call (with the process id) to a file. After 10 scorings the first process
hangs inside the scorer, so it surely holds claimed traces when it is killed with SIGKILL; it
is restarted on the same database while the client, like an OTLP exporter, retries what was not
acknowledged. The restarted process must finish the stranded traces once their leases expire.

What "scored exactly once" means here, precisely:

- **stored once**: the ``scores`` table holds exactly one row per (run, binding) for every
  acknowledged run, and never two for any run;
- **executed to completion at least once**: every acknowledged run has a ``done`` line;
- **re-executed only when a crash lost the claim**: a run may have two ``done`` lines only if
  the first came from the killed process (it scored the trace but died before completing the
  claim; the restarted process claims the trace again after its lease and writes the same
  deterministic score id). That can only happen to traces the killed process held at the
  moment of the crash, so at most ``claim_batch`` runs; no process ever completes a run twice.

And: every span the server acknowledged (HTTP 200) is in the ``spans`` table afterwards.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text

from tests.support.agent_otlp import AgentTrace, agent_trace, export_request
from tests.support.counting_scorer import CALL_LOG_ENV, HANG_AFTER_ENV
from tests.support.paths import REPO
from tests.support.server_process import ServerProcess, start_server, wait_for

BINDING = "counted"
CLAIM_BATCH = 4
LEASE_SECONDS = 2.0
CONFIG = {
    "assembly": {"lease_seconds": LEASE_SECONDS},
    "scorers": [{"name": BINDING, "scorer": "tests.support.counting_scorer:counting"}],
    "workers": {"claim_batch": CLAIM_BATCH, "concurrency": 4, "poll_interval": 0.05},
}


class Exporter(threading.Thread):
    """Sends one trace per request to whichever server is current; keeps what was acknowledged.

    A request that fails (connection refused or reset while the server is down) is retried,
    as OTLP exporters do, until it is acknowledged or the exporter is stopped.
    """

    def __init__(self, server: ServerProcess, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.server, self.interval = server, interval
        self.acknowledged: list[AgentTrace] = []
        self.failures = 0
        self.stopping = threading.Event()
        self._rng = random.Random(20261122)

    def run(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self.stopping.is_set():
                trace = agent_trace(self._rng, city=f"city-{len(self.acknowledged)}")
                while not self.stopping.is_set():
                    try:
                        response = client.post(
                            f"{self.server.base_url}/v1/traces",
                            content=export_request(trace.spans),
                            headers={"Content-Type": "application/x-protobuf"},
                        )
                        if response.status_code == 200:
                            self.acknowledged.append(trace)
                            break
                    except httpx.TransportError:
                        pass
                    self.failures += 1
                    time.sleep(0.05)
                time.sleep(self.interval)


def _calls(path: Path) -> list[tuple[str, str, str, int]]:
    lines = [line.split() for line in path.read_text().splitlines()] if path.exists() else []
    return [(event, trace_id, span_id, int(pid)) for event, trace_id, span_id, pid in lines]


def _count(engine, sql: str) -> int:
    with engine.connect() as connection:
        return connection.execute(text(sql)).scalar_one()


def test_kill_9_under_load_loses_no_acknowledged_span_and_stores_each_score_once(
    tmp_path: Path,
) -> None:
    db_url = f"sqlite:///{tmp_path / 'crash.db'}"
    call_log = tmp_path / "calls.log"
    env = {"PYTHONPATH": str(REPO), CALL_LOG_ENV: str(call_log)}
    engine = create_engine(db_url)
    first = start_server(
        tmp_path / "first", db_url=db_url, config=CONFIG, env={**env, HANG_AFTER_ENV: "10"}
    )
    exporter = Exporter(first)
    exporter.start()

    first_pids = set(first.pids())  # the service and its scoring process

    def first_is_stuck() -> bool:
        events = Counter(event for event, *_, pid in _calls(call_log) if pid in first_pids)
        return events["start"] > events["done"] >= 10

    try:
        wait_for(first_is_stuck, 60, "the first process to score 10 runs and hang in the next")
        time.sleep(0.5)  # it keeps acknowledging spans meanwhile
        first.kill()
        acknowledged_before_crash = len(exporter.acknowledged)
        second = start_server(tmp_path / "second", db_url=db_url, config=CONFIG, env=env)
        exporter.server = second
        try:
            wait_for(
                lambda: len(exporter.acknowledged) >= acknowledged_before_crash + 20,
                60,
                "load after restart",
            )
            exporter.stopping.set()
            exporter.join()
            traces = exporter.acknowledged
            runs = {(t.trace_id, t.agent_span_id) for t in traces}

            def all_scored() -> bool:
                with engine.connect() as connection:
                    stored = {
                        (bytes(t).hex(), bytes(s).hex())  # ids are stored as bytes
                        for t, s in connection.execute(text("SELECT trace_id, span_id FROM scores"))
                    }
                return runs <= stored

            wait_for(all_scored, LEASE_SECONDS + 60, f"{len(runs)} scores")
            time.sleep(LEASE_SECONDS + 1)  # room for a wrongful second claim to show up
            with engine.connect() as connection:
                spans = {
                    (bytes(t).hex(), bytes(s).hex())  # ids are stored as bytes
                    for t, s in connection.execute(text("SELECT trace_id, span_id FROM spans"))
                }
                scores = [
                    (bytes(t).hex(), bytes(s).hex(), binding, status)
                    for t, s, binding, status in connection.execute(
                        text(
                            "SELECT trace_id, span_id, binding, status FROM scores JOIN score_series ON score_series.id = scores.series_id"
                        )
                    )
                ]
        finally:
            second.stop()
    finally:
        exporter.stopping.set()
        first.kill()
        engine.dispose()

    # Every acknowledged span survived the crash.
    sent = {(t.trace_id, span.span_id.hex()) for t in traces for span in t.spans}
    assert len(sent) == 4 * len(traces)
    assert sent <= spans, f"{len(sent - spans)} acknowledged spans lost"
    # Stored once: one row per run and binding, never two for any run (acknowledged or not).
    per_run = Counter((trace_id, span_id, binding) for trace_id, span_id, binding, _ in scores)
    assert set(per_run.values()) == {1}
    assert {(trace_id, span_id) for trace_id, span_id, _ in per_run} >= runs
    assert {status for *_, status in scores} == {"ok"}
    # Executed at least once; re-executed only for claims the crash lost, never twice by one process.
    calls = _calls(call_log)
    done = Counter((trace_id, span_id) for event, trace_id, span_id, _ in calls if event == "done")
    assert all(done[run] >= 1 for run in runs)
    done_by_process = Counter(
        (trace_id, span_id, pid) for event, trace_id, span_id, pid in calls if event == "done"
    )
    assert set(done_by_process.values()) == {1}
    rescored = {run for run, count in done.items() if count > 1}
    assert len(rescored) <= CLAIM_BATCH
    by_killed = {
        event: {(t, s) for e, t, s, pid in calls if pid in first_pids and e == event}
        for event in ("start", "done")
    }
    assert rescored <= by_killed["done"]
    stranded = by_killed["start"] - by_killed["done"]  # claims the crash left behind
    assert stranded and stranded <= {run for run, count in done.items() if count == 1}
    print(
        f"\ncrash: {len(traces)} traces / {len(sent)} spans acknowledged "
        f"({acknowledged_before_crash} traces before the kill), {len(sent & spans)} of them stored; "
        f"{len(per_run)} score rows for {len(runs)} acknowledged runs; {len(stranded)} runs stranded "
        f"mid-scoring by the kill and finished after the restart; {len(rescored)} runs re-executed; {exporter.failures} export attempts refused or failed while down"
    )
