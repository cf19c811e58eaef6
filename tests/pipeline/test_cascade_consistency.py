"""The ``consistency`` scorer upstream of a judge on a running service (issue 47), on SQLite and
PostgreSQL: agent traces
sent over OTLP (the demo's sender: GenAI spans with tool calls, one of them failing), scored by
``consistency``, then by answer-relevancy ``after: {binding: consistency, below: 1}`` on the
scripted judge. The judge is asked about the runs a check failed on and no other; the stored
rows carry the failed checks as their label and every check's findings in the ``checks`` step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.judge_server import JudgeServer, json_reply
from tests.support.score_rows import wait_for_scores
from tests.support.server_process import start_server
from tracescore.offline.demo import Agent, DemoSender, ToolFailure, Turn


def _never(_: Any) -> Turn:
    raise NotImplementedError


AGENT = Agent(
    "weather-bot",
    "weather-app",
    "gpt-4o-mini",
    "openai",
    "You are WeatherBot. Always call get_weather before answering.",
    _never,
)


def _weather(city: str, celsius: float, conditions: str) -> dict[str, Any]:
    return {"city": city, "temperature_c": celsius, "conditions": conditions, "humidity": 60}


RUNS: dict[str, tuple[str, list[tuple[str, dict[str, Any], Any]], str, str]] = {
    # city: (question, tool calls, answer, the label consistency gives)
    "Oslo": (
        "What's the weather in Oslo?",
        [("get_weather", {"city": "Oslo"}, _weather("Oslo", 4.2, "light rain"))],
        "Right now in Oslo it's about 4°C with light rain, so bring a jacket.",
        "ok",
    ),
    "Lisbon": (
        "How warm is it in Lisbon?",
        [("get_weather", {"city": "Lisbon"}, _weather("Lisbon", 18.5, "sunny"))],
        "It's 25°C and sunny in Lisbon.",
        "contradiction",
    ),
    "Nairobi": (
        "Is it raining in Nairobi?",
        [("get_weather", {"city": "Nairobi"}, _weather("Nairobi", 22.0, "overcast"))],
        "I'm sorry, but I can't help with that request.",
        "non_answer",
    ),
    "Denver": (
        "Current conditions in Denver?",
        [("get_weather", {"city": "Denver"}, ToolFailure("timeout", "timed out after 10s"))],
        "Sorry, the weather service isn't responding right now. Please try again later.",
        "ok",
    ),
    "Tokyo": (
        "Do I need an umbrella in Tokyo today?",
        [("get_weather", {"city": "Kyoto"}, _weather("Kyoto", 12.0, "drizzle"))],
        "Yes: it's 12°C with drizzle in Kyoto, take an umbrella.",
        "entities",
    ),
    "Seoul": (
        "What's the temperature in Seoul right now?",
        [("get_weather", {"city": "Seoul"}, _weather("Seoul", 9.0, "clear skies"))],
        "Seoul is at 25°C under clear skies, with the wind picking up later and",
        "contradiction+truncation",  # longer than a pass/fail label: stored whole
    ),
}


def test_a_judge_after_consistency_judges_the_runs_a_check_failed_on(
    tmp_path: Path, db_url: str
) -> None:
    with JudgeServer() as judge:
        reply = json_reply(
            {"statements": ["An answer."], "results": [{"result": "yes", "reason": "scripted"}]}
        )
        judge.script("AnswerStatements", reply)  # each step reads its own key of the reply
        judge.script("RelevancyResults", reply)
        config = {
            "judges": {
                "default": {"model": "openai/judge", "api_base": judge.base_url, "cache": False}
            },
            "scorers": [
                {"name": "consistency", "scorer": "consistency"},
                {
                    "name": "relevancy",
                    "scorer": "answer-relevancy",
                    "after": {"binding": "consistency", "below": 1, "explore": 0},
                },
            ],
        }
        with start_server(tmp_path, db_url=db_url, config=config) as server:
            sender = DemoSender(server.base_url, seed=47, drop_after=float("inf"))
            cities = {
                sender.send_turn(
                    AGENT, Turn(question, tools, "Look it up.", answer, answer, answer), answer
                ): city
                for city, (question, tools, answer, _) in RUNS.items()
            }
            sender.shutdown()
            rows = wait_for_scores(server.db_url, 2 * len(RUNS), timeout=90)
        asked = [str(request) for request in judge.requests]
    checked = {cities[row.trace_id]: row for row in rows if row.binding == "consistency"}
    judged = {cities[row.trace_id]: row for row in rows if row.binding == "relevancy"}
    assert {city: row.label for city, row in checked.items()} == {
        city: label for city, (_, _, _, label) in RUNS.items()
    }
    flagged = {city for city, (_, _, _, label) in RUNS.items() if label != "ok"}
    assert {city for city, row in judged.items() if row.status == "ok"} == flagged
    for city in set(RUNS) - flagged:
        assert judged[city].status == "skipped_cascade"
        assert judged[city].reason == (
            "not triggered: consistency scored 1: not flagged (flags below 1)"
        )
    # The judge read the flagged runs (each names its city), and no other run.
    assert {city for city in RUNS if any(city in body for body in asked)} == flagged
    lisbon = checked["Lisbon"]
    assert lisbon.score is not None and lisbon.score < 1
    assert lisbon.reason == (
        "contradiction: answer says 25°C, get_weather returned temperature_c 18.5"
    )
    steps = {step["name"]: step["result"] for step in (lisbon.steps or {})["steps"]}
    assert steps["checks"]["contradiction"] == {
        "passed": False,
        "findings": ["answer says 25°C, get_weather returned temperature_c 18.5"],
    }
    assert steps["checks"]["grounding"] == {"passed": True, "findings": []}
