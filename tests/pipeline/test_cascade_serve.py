"""Cascades on a running service (issue 37, item 2): a judge ``after:`` a code scorer judges
exactly the runs it flagged plus the explored share, and the coverage API shows each stage; an
errored or absent upstream score triggers or not as configured, with a reason; a cascade
after a judge waits for that judge's verdict.

The judge is the scripted OpenAI-compatible server, answer-relevancy's two steps scripted per
city (the city is in every prompt of its run). The code scorer is keyword-coverage: a run whose
city name repeats the question's keyword "weather" covers every keyword (1.0), others half
(0.5), so a cascade ``below: 0.75`` flags the plain cities.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_otlp import AgentTrace, agent_trace, export_request
from tests.support.judge_server import JudgeServer, json_reply
from tests.support.paths import REPO
from tests.support.score_rows import ScoreView, wait_for_scores
from tests.support.server_process import ServerProcess, start_server

PLAIN = [f"Town{n}" for n in range(8)]
"""Cities keyword-coverage scores 0.5: flagged below 0.75."""
COVERED = [f"Weather Town{n}" for n in range(24)]
"""Cities it scores 1.0: judged only when explored."""
IRRELEVANT = "Town-irrelevant"
"""The city the judge finds the answer irrelevant for (score 0)."""


def _relevant(verdict: str) -> Any:
    """An answer both steps read (each ignores the other's key): the script matching a city
    answers every step of its run."""
    return json_reply(
        {
            "statements": ["It is sunny."],
            "results": [{"result": verdict, "reason": f"scripted {verdict}"}],
        }
    )


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        server.script("AnswerStatements", json_reply({"statements": ["It is sunny."]}))
        server.script("RelevancyResults", _relevant("yes"))
        server.script(IRRELEVANT, _relevant("no"))
        yield server


def _judge_config(server: JudgeServer, **extra: Any) -> dict[str, Any]:
    return {
        "default": {
            "model": "openai/judge",
            "api_base": server.base_url,
            "cache": False,
            "backoff_base": 0.01,
            **extra,
        }
    }


def _send(server: ServerProcess, traces: list[AgentTrace]) -> None:
    for trace in traces:
        response = server.http.post(
            "/v1/traces",
            content=export_request(trace.spans),
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert response.status_code == 200


def _by(rows: list[ScoreView], binding: str) -> dict[str, ScoreView]:
    return {row.trace_id: row for row in rows if row.binding == binding}


def _coverage(server: ServerProcess) -> dict[str, dict[str, Any]]:
    found = server.http.get("/api/coverage").json()["bindings"]
    return {entry["binding"]: entry for entry in found}


def _cities_judged(judge: JudgeServer, cities: dict[str, str]) -> set[str]:
    """The trace ids whose question some request to the judge held ("in Town1?" is no part of
    "in Weather Town1?" nor of "in Town12?")."""
    bodies = [str(request) for request in judge.requests]
    return {t for t, city in cities.items() if any(f"in {city}?" in body for body in bodies)}


def test_a_judge_after_a_code_scorer_judges_the_flagged_runs_and_the_explored_share(
    tmp_path: Path, judge: JudgeServer
) -> None:
    config = {
        "judges": _judge_config(judge),
        "scorers": [
            {
                "name": "relevancy",
                "scorer": "answer-relevancy",
                "after": {"binding": "cheap", "below": 0.75, "explore": 0.3},
            },
            {"name": "cheap", "scorer": "keyword-coverage"},  # after its cascade: order is found
        ],
    }
    rng = random.Random(37)
    traces = {city: agent_trace(rng, city) for city in PLAIN + COVERED}
    cities = {trace.trace_id: city for city, trace in traces.items()}
    with start_server(tmp_path, config=config) as server:
        _send(server, list(traces.values()))
        rows = wait_for_scores(server.db_url, 2 * len(traces), timeout=60)
        coverage = _coverage(server)
        page = server.http.get("/").text
    cheap, judged = _by(rows, "cheap"), _by(rows, "relevancy")
    assert {cities[t] for t, row in cheap.items() if row.score == 0.5} == set(PLAIN)
    flagged = {
        t for t, row in judged.items() if (row.steps or {})["cascade"]["trigger"] == "flagged"
    }
    explored = {
        t for t, row in judged.items() if (row.steps or {})["cascade"]["trigger"] == "explored"
    }
    skipped = {t for t, row in judged.items() if row.status == "skipped_cascade"}
    assert {cities[t] for t in flagged} == set(PLAIN)  # every flagged run judged
    assert all(judged[t].status == "ok" for t in flagged | explored)
    assert explored and explored < {traces[c].trace_id for c in COVERED}  # a share, not all
    assert 2 <= len(explored) <= 14  # 30 % of 24, deterministic by run
    assert skipped == set(cities) - flagged - explored  # every other run: not triggered
    for trace_id in skipped:
        assert judged[trace_id].reason == (
            "not triggered: cheap scored 1: not flagged (flags below 0.75)"
        )
    # The judge was asked about exactly the judged runs' cities, no other.
    assert _cities_judged(judge, cities) == flagged | explored
    stages = coverage["relevancy"]
    assert stages["eligible"] == len(traces)
    assert stages["sampled"] == stages["scored"] == len(flagged | explored)  # none lost
    assert stages["cascade"] == {
        "after": "cheap",
        "upstream_scored": len(traces),
        "upstream_errored": 0,
        "flagged": len(PLAIN),
        "explored": len(explored),
        "not_triggered": len(skipped),
        "scored": len(flagged | explored),
        "cost_usd": pytest.approx(sum(judged[t].cost_usd for t in flagged | explored)),
    }
    assert coverage["cheap"]["cascade"] is None
    # The dashboard's coverage table shows the stages under the cascade's row.
    (shown,) = re.findall(
        r'<tr class="cascade-stages" data-binding="relevancy">.*?</tr>', page, re.S
    )
    figures = dict(re.findall(r'data-stage="([a-z-]+)">\$?([0-9.]+)<', shown))
    assert "after <strong>cheap</strong>" in shown
    assert figures == {
        "upstream": str(len(traces)),
        "flagged": str(len(PLAIN)),
        "explored": str(len(explored)),
        "not-triggered": str(len(skipped)),
        "scored": str(len(flagged | explored)),
        "cost": f"{stages['cascade']['cost_usd']:.4f}",
    }
    assert page.count('class="cascade-stages"') == 1  # none under the cheap binding's row


def test_an_errored_or_absent_upstream_triggers_as_configured_with_a_reason(
    tmp_path: Path,
) -> None:
    config = {
        "scorers": [
            {"name": "broken", "scorer": "tests.support.custom_scorers:exploding"},
            {
                "name": "on-error",
                "scorer": "completeness",
                "after": {"binding": "broken", "errored": True},
            },
            {
                "name": "below-only",
                "scorer": "completeness",
                "after": {"binding": "broken", "below": 0.5},
            },
            {
                "name": "searches",
                "scorer": "keyword-coverage",
                "when": {"tool_called": "search_web"},
            },
            {
                "name": "after-searches",
                "scorer": "completeness",
                "after": {"binding": "searches", "below": 2},
            },
        ]
    }
    rng = random.Random(7)
    searched = [agent_trace(rng, "Lima", tool="search_web") for _ in range(2)]
    plain = [agent_trace(rng, "Quito") for _ in range(3)]
    with start_server(tmp_path, config=config, env={"PYTHONPATH": str(REPO)}) as server:
        _send(server, searched + plain)
        rows = wait_for_scores(server.db_url, 5 * 4 + 2, timeout=60)
    assert {row.status for row in _by(rows, "broken").values()} == {"error"}
    on_error = _by(rows, "on-error")
    assert len(on_error) == 5 and {row.status for row in on_error.values()} == {"ok"}
    assert {(row.steps or {})["cascade"]["reason"] for row in on_error.values()} == {
        "broken errored"
    }
    below_only = _by(rows, "below-only")
    assert {row.status for row in below_only.values()} == {"skipped_cascade"}
    assert {row.reason for row in below_only.values()} == {
        "not triggered: broken errored: not flagged (flags below 0.5)"
    }
    after = _by(rows, "after-searches")
    assert {t for t, row in after.items() if row.status == "ok"} == {t.trace_id for t in searched}
    for trace in plain:  # its upstream's when: left the run out: recorded, with the reason
        row = after[trace.trace_id]
        assert row.status == "skipped_cascade"
        assert row.reason is not None and "searches has no score for this run" in row.reason


def test_a_cascade_after_a_judge_waits_for_its_verdict(tmp_path: Path, judge: JudgeServer) -> None:
    judge.delay = 0.5  # every judge answer takes half a second: the verdict comes late
    config = {
        "judges": _judge_config(judge),
        "scorers": [
            {"name": "relevancy", "scorer": "answer-relevancy"},
            {
                "name": "second-look",
                "scorer": "completeness",
                "after": {"binding": "relevancy", "below": 0.5},
            },
        ],
    }
    rng = random.Random(11)
    traces = {city: agent_trace(rng, city) for city in [IRRELEVANT, *PLAIN[:3]]}
    with start_server(tmp_path, config=config) as server:
        _send(server, list(traces.values()))
        rows = wait_for_scores(server.db_url, 2 * len(traces), timeout=60)
    relevancy, second = _by(rows, "relevancy"), _by(rows, "second-look")
    irrelevant = traces[IRRELEVANT].trace_id
    assert relevancy[irrelevant].score == 0.0
    assert second[irrelevant].status == "ok"  # decided on the judge's verdict, once it came
    assert (second[irrelevant].steps or {})["cascade"]["upstream_score"] == 0.0
    for city in PLAIN[:3]:
        row = second[traces[city].trace_id]
        assert relevancy[traces[city].trace_id].score == 1.0
        assert row.status == "skipped_cascade"
        assert row.reason == "not triggered: relevancy scored 1: not flagged (flags below 0.5)"
