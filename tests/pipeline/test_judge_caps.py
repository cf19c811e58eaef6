"""A binding's ``usd_per_day`` and ``per_minute`` hold while several scoring processes flood it
at once (issue 46, item 4: feedback-triggered judging with ``usd_per_day: 0.001`` spent
$0.002688, 2.7×, in 32 calls; with ``per_minute: 30``, 48 calls landed within 60 s).

Three real processes (:mod:`tests.support.judge_flood`, the service's own scoring worker)
score one binding against the scripted judge server, on SQLite and PostgreSQL; the judge
server's own log of requests is what the caps are checked against. Both databases are flooded
at once, each against its own judge server, by the same processes (their start-ups are most of
a flood's CPU). The per-minute floods must outlast a minute of the limiters' clock: they are
handed one running ``SPEED`` times faster than the wall clock
(:class:`~tests.support.judge_flood.FastClock`), on which the judge server's arrival times are
read too, so a minute's window passes in six seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from tests.support.judge_flood import WALL, FastClock
from tests.support.judge_server import JudgeServer, Reply
from tests.support.paths import CAPTURES
from tracescore.ingest.files import load_traces
from tracescore.store import open_store

PROCESSES = 3
TOKENS = (1000, 100)
CALL_USD = 1000 * 0.15e-6 + 100 * 0.6e-6
"""gpt-4o-mini's price of one scripted answer."""
RUN_USD = 2 * CALL_USD
"""Toxicity asks for the verdicts, then for the reason."""
VERDICT = Reply(content=json.dumps({"verdicts": [{"verdict": "no", "reason": "polite"}]}))
SPEED = 10.0
"""How much faster than the wall clock the per-minute flood's limiter clock runs."""


def _target(tmp_path: Path, db_url: str, judge: JudgeServer, limits: str) -> list[str]:
    """A flood's database, config and trace: the trace stored, the capped binding judged by
    ``judge``."""
    store = open_store(db_url)
    (trace,) = load_traces([CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"])
    store.write(trace.spans, trace.logs)
    store.close()
    tmp_path.mkdir()
    config = tmp_path / "flood.yaml"
    config.write_text(
        f"judges:\n  default: {{model: openai/gpt-4o-mini, api_base: '{judge.base_url}', "
        "cache: false, timeout: 30}\n"
        f"scorers:\n  - {{name: capped, scorer: toxicity, limits: {limits}}}\n"
        "workers: {concurrency: 64}\n"
    )
    return [db_url, str(config), trace.spans[0].trace_id]


def _flood(
    targets: list[list[str]], runs: int, interval: float, clock: FastClock
) -> list[list[str]]:
    """``PROCESSES`` processes, each starting ``runs`` scores of every target's capped binding,
    one every ``interval`` seconds of the wall clock, their limiters reading ``clock``: the
    statuses of every score made, by target."""
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    command = [sys.executable, "-m", "tests.support.judge_flood", str(runs), str(interval)]
    command += [str(clock.speed), repr(clock.origin), *(part for t in targets for part in t)]
    floods = [subprocess.Popen(command, stdout=subprocess.PIPE, env=env) for _ in range(PROCESSES)]
    statuses: list[list[str]] = [[] for _ in targets]
    for flood in floods:
        out, _ = flood.communicate(timeout=300)
        assert flood.returncode == 0
        for found, more in zip(statuses, json.loads(out), strict=True):
            found += more
    return statuses


def _judges(stack: ExitStack, *replies: Reply) -> dict[str, JudgeServer]:
    """A judge server per database, answering verdicts with ``replies`` and reasons alike."""
    judges = {}
    for name in ("sqlite", "postgresql"):
        judge = judges[name] = stack.enter_context(JudgeServer())
        judge.script("ToxicityVerdicts", *replies)
        judge.default = Reply("A scripted reason.", usage=TOKENS)
    return judges


def test_the_daily_budget_overshoots_by_at_most_one_run(
    tmp_path: Path, sqlite_url: str, pg_url: str
) -> None:
    budget = 3.5 * RUN_USD
    limits = f"{{usd_per_day: {budget}}}"
    urls = {"sqlite": sqlite_url, "postgresql": pg_url}
    with ExitStack() as stack:
        judges = _judges(stack, Reply(VERDICT.content, delay=0.3, usage=TOKENS))
        targets = [
            _target(tmp_path / name, urls[name], judge, limits) for name, judge in judges.items()
        ]
        floods = _flood(targets, 10, 0.0, WALL)
    for (name, judge), statuses in zip(judges.items(), floods, strict=True):
        calls = judge.count
        spent = calls * CALL_USD
        # The estimate is the cost of one run: the last admission may pass the cap by that much.
        assert budget <= spent <= budget + RUN_USD, (name, calls, statuses)
        assert 2 * statuses.count("ok") == calls and len(statuses) == 10 * PROCESSES, name
        assert set(statuses) == {"ok", "skipped_budget"}, name


def _most_in_a_minute(times: list[float]) -> int:
    times = sorted(times)
    return max(
        sum(1 for other in times[index:] if other < start + 60.0)
        for index, start in enumerate(times)
    )


def _verdict_times(judge: JudgeServer, clock: FastClock) -> list[float]:
    """When each run's first call, for its verdicts, reached the judge, on ``clock``:
    per_minute counts runs."""
    return [
        clock.at(at)
        for at, body in zip(judge.received_at, judge.requests, strict=True)
        if "ToxicityVerdicts" in json.dumps(body)
    ]


def test_per_minute_holds_in_every_60_s_window_under_a_flood(
    tmp_path: Path, sqlite_url: str, pg_url: str
) -> None:
    """The minute the window must move past is waited out once, not once per database, on a
    clock ``SPEED`` times faster than the wall's (times below are on it, /SPEED on the wall)."""
    per_minute = 4
    limits = f"{{per_minute: {per_minute}}}"
    urls = {"sqlite": sqlite_url, "postgresql": pg_url}
    clock = FastClock(time.time(), SPEED)
    with ExitStack() as stack:
        # Replies of varied length: calls do not land when they were admitted.
        judges = _judges(
            stack,
            *(
                Reply(VERDICT.content, delay=delay / SPEED, usage=TOKENS)
                for delay in (2.5, 0.1, 1.2, 0.4) * 10
            ),
        )
        targets = [
            _target(tmp_path / name, urls[name], judge, limits) for name, judge in judges.items()
        ]
        # 90 s of a new run every half second from each process: well past the first minute,
        # whose first runs free their slots a minute after they end.
        floods = _flood(targets, 180, 0.5 / SPEED, clock)
    for (name, judge), statuses in zip(judges.items(), floods, strict=True):
        verdicts = _verdict_times(judge, clock)
        assert _most_in_a_minute(verdicts) <= per_minute, (name, sorted(verdicts))
        # The window moves: runs past the first minute were judged too.
        assert len(verdicts) > per_minute, name
        assert statuses.count("ok") == len(verdicts) == judge.count / 2, name
        assert set(statuses) == {"ok", "skipped_rate"}, name
