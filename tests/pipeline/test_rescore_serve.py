"""``rescore_on_change`` on a running service (issue 37, item 5).

A binding's judge prompt changes between two starts (same scorer version, another rubric): the
second start logs its cost estimate, re-scores a sample of the runs the first scored, within
the binding's daily budget (the runs beyond it stored and counted as ``skipped_budget``), beside
the old scores; ``GET /api/compare`` pairs them. A third start with the same prompt re-scores
nothing, and a start killed mid-way resumes where its last stored run left it.

The first start (rubric A scoring the six runs) is the same for both tests: it runs once for
the module, and each test starts from a copy of its database.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.judge_server import JudgeServer, Reply
from tests.support.paths import REPO
from tests.support.score_rows import ScoreView
from tests.support.server_process import ServerProcess, start_server, wait_for
from tracescore.store.rescores import RescoreJob, rescore_job
from tracescore.store.scores import SCORES

KEY = "rescore-test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
CITIES = ["Paris", "Rome", "Oslo", "Lima", "Kyiv", "Quito"]
USAGE = (1000, 100)
"""Tokens every scripted judge answer reports: each call then costs the same."""

SCORERS_IMPORTABLE = {"PYTHONPATH": str(REPO)}
"""The server's environment: the rubric scorer lives in ``tests.support``."""


def _reply(score: float, delay: float = 0.0) -> Reply:
    return Reply(content=json.dumps({"score": score}), usage=USAGE, delay=delay)


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    """The judge of the test's starts, after the first version's: rubric B's answers."""
    with JudgeServer() as server:
        server.script("[rubric RUBRIC-B]", _reply(0.7))
        server.script("Sunny in Oslo. [rubric RUBRIC-B]", _reply(0.1))
        yield server


def _config(
    judge: JudgeServer,
    rubric: str,
    sample: int,
    limits: dict[str, Any] | None = None,
    processes: int = 2,
) -> dict[str, Any]:
    return {
        "server": {"api_keys": [KEY]},
        "judges": {"default": {"model": "openai/gpt-4o-mini", "api_base": judge.base_url}},
        "scorers": [
            {
                "name": "rubric",
                "scorer": "tests.support.rubric_scorer:rubric_judge",
                "judge": "default",
                "options": {"rubric": rubric},
                "threshold": 0.5,
                "limits": limits or {},
                # The process that waits on the other's re-score looks again soon.
                "rescore_on_change": {"sample": sample, "since": "7d", "poll": 0.5},
            }
        ],
        "workers": {"processes": processes, "poll_interval": 0.05},
    }


def _send_traces(server: ServerProcess) -> None:
    rng = random.Random(37)
    for city in CITIES:
        response = server.http.post(
            "/v1/traces",
            content=export_request(agent_trace(rng, city).spans),
            headers={"Content-Type": "application/x-protobuf", **AUTH},
        )
        assert response.status_code == 200, response.text


def _rows(db_url: str) -> list[ScoreView]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            return [ScoreView(**r._mapping) for r in connection.execute(select(SCORES))]
    finally:
        engine.dispose()


def _job(db_url: str) -> RescoreJob | None:
    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            return rescore_job(connection, "rubric")
    finally:
        engine.dispose()


def _asked(judge: JudgeServer, rubric: str) -> int:
    return sum(f"[rubric {rubric}]" in json.dumps(body) for body in list(judge.requests))


@pytest.fixture(scope="module")
def first_version(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ScoreView]]:
    """A database on which rubric A scored the six runs and the fingerprint was recorded, and
    its rows: started once, with a judge server of its own (the tests count only rubric B's
    calls, on theirs), scoring in the service process: two scoring processes, each importing
    litellm (seconds of CPU), are for the tests' starts, where they share the re-score."""
    workdir = tmp_path_factory.mktemp("first-version")
    with JudgeServer() as judge:
        judge.script("[rubric RUBRIC-A]", _reply(0.8))
        judge.script("Sunny in Rome. [rubric RUBRIC-A]", _reply(0.6))
        config = _config(judge, "RUBRIC-A", 5, processes=0)
        with start_server(workdir, config=config, env=SCORERS_IMPORTABLE) as server:
            _send_traces(server)
            wait_for(lambda: len(_rows(server.db_url)) >= len(CITIES), 60, "six scores")
            job = wait_for(lambda: _job(server.db_url), 30, "the recorded fingerprint")
    assert job.state == "recorded" and job.scorer_version == "1" and job.runs == []
    rows = _rows(server.db_url)
    assert {row.status for row in rows} == {"ok"} and len(rows) == len(CITIES)
    return workdir / "tracescore.db", rows


def _score_first_version(
    tmp_path: Path, first_version: tuple[Path, list[ScoreView]]
) -> list[ScoreView]:
    """The first version's database copied into ``tmp_path``, where the test's servers start."""
    database, rows = first_version
    tmp_path.mkdir(parents=True, exist_ok=True)
    for stored in database.parent.glob(database.name + "*"):  # its -wal file, if any
        if stored.is_file():
            shutil.copy(stored, tmp_path / stored.name)
    return rows


def _log_length(tmp_path: Path) -> int:
    log = tmp_path / "server.log"
    return len(log.read_text()) if log.exists() else 0


def test_a_changed_prompt_rescores_a_sample_within_the_budget_once(
    tmp_path: Path, judge: JudgeServer, first_version: tuple[Path, list[ScoreView]]
) -> None:
    first = _score_first_version(tmp_path, first_version)
    cost = first[0].cost_usd
    assert cost > 0 and all(row.cost_usd == pytest.approx(cost) for row in first)
    assert {row.score for row in first} == {0.8, 0.6}  # Rome's answer scored 0.6
    spent = sum(row.cost_usd for row in first)
    limits = {"usd_per_day": spent + 2.5 * cost}  # room for three more judge calls today

    log_start = _log_length(tmp_path)
    with start_server(
        tmp_path, config=_config(judge, "RUBRIC-B", 5, limits), env=SCORERS_IMPORTABLE
    ) as server:
        job = wait_for(
            lambda: (found := _job(server.db_url)) and found.state == "done" and found,
            90,
            "the re-score's end",
        )
        compared = server.http.get("/api/v1/compare", headers=AUTH).json()
        legacy = server.http.get("/api/compare", params={"binding": "rubric"}, headers=AUTH).json()
        first_page = server.http.get("/api/v1/compare", params={"limit": 2}, headers=AUTH).json()
        second_page = server.http.get(
            "/api/v1/compare",
            params={"limit": 2, "cursor": first_page["next_cursor"]},
            headers=AUTH,
        ).json()
        unauthenticated = server.http.get("/api/v1/compare")
        unknown = server.http.get("/api/v1/compare", params={"binding": "nope"}, headers=AUTH)
    log = (tmp_path / "server.log").read_text()[log_start:]

    # The job: five runs sampled of the six, three re-scored within the budget, two skipped.
    assert job.old_version == "1" and re.fullmatch(r"1\+[0-9a-f]{8}", job.new_version or "")
    assert len(job.runs) == 5 and job.position == 5
    counts = (job.rescored, job.skipped_budget, job.skipped_rate, job.missing, job.errored)
    assert counts == (3, 2, 0, 0, 0), (counts, log)
    assert job.estimate_usd == pytest.approx(5 * cost)
    assert _asked(judge, "RUBRIC-B") == 3

    # The cost estimate was logged before the re-score began, and its end after.
    planned = log.index("rescore_on_change of rubric: the scorer changed")
    assert f"estimated cost ${5 * cost:.4f}" in log[planned:]
    assert planned < log.index("rescore_on_change of rubric done: 3 re-scored")

    # New scores beside the old: the six old ones untouched, five new rows on sampled runs.
    rows = _rows(server.db_url)
    old = {(r.trace_id, r.span_id): r for r in rows if r.scorer_version == "1"}
    new = {(r.trace_id, r.span_id): r for r in rows if r.scorer_version == job.new_version}
    assert len(old) == 6 and {r.score for r in old.values()} == {0.8, 0.6}
    assert set(new) == set(job.runs) and set(new) <= set(old)
    assert sorted(r.status for r in new.values()) == ["ok"] * 3 + ["skipped_budget"] * 2
    assert all(r.error and "daily budget" in r.error for r in new.values() if r.status != "ok")
    rescored = {key: r for key, r in new.items() if r.status == "ok"}
    assert {r.score for r in rescored.values()} <= {0.7, 0.1}

    # GET /api/compare pairs them: figures computed here from the stored rows.
    pairs = [(old[key].score, r.score) for key, r in rescored.items()]
    agreement = compared["agreement"]
    assert (compared["binding"], compared["version_a"], compared["version_b"]) == (
        "rubric",
        "1",
        job.new_version,
    )
    assert agreement["n_paired"] == 3 and agreement["n_a"] == 6 and agreement["n_b"] == 3
    assert agreement["mean_difference"] == pytest.approx(statistics.fmean(b - a for a, b in pairs))
    same = sum((a >= 0.5) == (b >= 0.5) for a, b in pairs) / 3
    assert agreement["label_agreement"] == pytest.approx(same)
    assert compared["rescore"]["rescored"] == 3 and compared["rescore"]["skipped_budget"] == 2
    items = compared["items"]
    assert len(items) == 3 and compared["next_cursor"] is None
    gaps = [abs(item["difference"]) for item in items]
    assert gaps == sorted(gaps, reverse=True)
    assert gaps[0] == pytest.approx(max(abs(b - a) for a, b in pairs))
    assert items[0]["url"] == f"/ui/traces/{items[0]['trace_id']}#score-{items[0]['id_b']}"
    assert legacy["agreement"] == agreement
    assert [i["trace_id"] for i in first_page["items"] + second_page["items"]] == [
        i["trace_id"] for i in items
    ]
    assert second_page["next_cursor"] is None
    assert unauthenticated.status_code == 401 and unknown.status_code == 404

    # A third start with the same prompt re-scores nothing. Scored in the service process, whose
    # log shows (at info) that its look found nothing to do: the scoring processes log only
    # warnings, and the look is the same code in either.
    asked = judge.count
    log_start = _log_length(tmp_path)
    third = _config(judge, "RUBRIC-B", 5, limits, processes=0)
    with start_server(tmp_path, config=third, env=SCORERS_IMPORTABLE) as server:
        wait_for(
            lambda: (
                "rescore_on_change of rubric: nothing to re-score (the job of this scorer "
                "is done)" in server.output()[log_start:]
            ),
            60,
            "the third start's look at the job",
        )
        again = _job(server.db_url)
    assert again == job
    assert judge.count == asked
    assert len(_rows(server.db_url)) == len(rows)


def test_a_rescore_killed_mid_way_resumes_without_scoring_a_run_twice(
    tmp_path: Path, judge: JudgeServer, first_version: tuple[Path, list[ScoreView]]
) -> None:
    _score_first_version(tmp_path, first_version)
    judge.script("[rubric RUBRIC-B]", _reply(0.7, delay=1.0))
    config = _config(judge, "RUBRIC-B", 6)
    server = start_server(tmp_path, config=config, env=SCORERS_IMPORTABLE)
    try:
        wait_for(
            lambda: (job := _job(server.db_url)) and 2 <= job.position < 6,
            90,
            "two runs re-scored",
        )
    finally:
        server.kill()
    stopped = _job(server.db_url)
    assert stopped is not None and stopped.state == "running" and stopped.position < 6

    log_start = _log_length(tmp_path)
    with start_server(tmp_path, config=config, env=SCORERS_IMPORTABLE) as server:
        job = wait_for(
            lambda: (found := _job(server.db_url)) and found.state == "done" and found,
            90,
            "the resumed re-score's end",
        )
    log = (tmp_path / "server.log").read_text()[log_start:]
    assert f"resuming at run {stopped.position + 1} of 6" in log
    assert job.runs == stopped.runs and job.rescored == 6 and job.position == 6
    new = [r for r in _rows(server.db_url) if r.scorer_version == job.new_version]
    assert len(new) == 6 and {(r.trace_id, r.span_id) for r in new} == set(job.runs)
    assert {r.status for r in new} == {"ok"}
    # Each run's judge call once, but for the one in flight at the kill (if its answer was
    # not in the verdict cache yet).
    assert 6 <= _asked(judge, "RUBRIC-B") <= 7
