"""The review page in headless Chromium on a running service with ``on_feedback`` bindings
(issue 37, item 4): a reviewer marks an unsampled run ``fail`` with the form, and the run's
page then shows, beside that verdict, the judge's score of the run (judged because of it) and
the binding whose budget was spent recording its skip with the reason."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.browser_support import layout_problems, shot
from tests.support.judge_server import JudgeServer, json_reply
from tests.support.server_process import ServerProcess, signed_in_page, start_server, wait_for

pytestmark = pytest.mark.browser

API_KEY = "feedback-trigger-key"


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with JudgeServer() as judge:
        judge.script("AnswerStatements", json_reply({"statements": ["It is sunny."]}))
        judge.script(
            "RelevancyResults", json_reply({"results": [{"result": "yes", "reason": "on topic"}]})
        )
        config = {
            "server": {"api_keys": [API_KEY]},
            "judges": {
                "default": {"model": "openai/judge", "api_base": judge.base_url, "cache": False}
            },
            "scorers": [
                {
                    "name": "relevancy",
                    "scorer": "answer-relevancy",
                    "sampling": {"rate": 0.0},
                    "on_feedback": True,
                },
                {
                    "name": "no-budget",
                    "scorer": "answer-relevancy",
                    "sampling": {"rate": 0.0},
                    "on_feedback": True,
                    "limits": {"usd_per_day": 0},
                },
            ],
            # Judged in a scoring process, as by default: the first judge call loads litellm
            # (seconds), which in the service process would hold up the pages meanwhile.
            "workers": {"processes": 1, "poll_interval": 0.05},
        }
        with start_server(tmp_path_factory.mktemp("triggers"), config=config) as running:
            yield running


def test_the_review_page_shows_the_judge_beside_the_verdict_it_triggered(
    context: Any, server: ServerProcess
) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    trace = agent_trace(random.Random(5), city="Lisbon")
    response = httpx.post(
        f"{server.base_url}/v1/traces",
        content=export_request(trace.spans),
        headers={**headers, "Content-Type": "application/x-protobuf"},
    )
    assert response.status_code == 200

    def finished() -> bool:
        engine = create_engine(server.db_url)
        try:
            with engine.connect() as connection:
                state = connection.execute(
                    text("SELECT state FROM traces WHERE trace_id = :t"),
                    {"t": bytes.fromhex(trace.trace_id)},
                ).scalar()
        finally:
            engine.dispose()
        return state == "scored"

    wait_for(finished, 30, "the trace through the pipeline")

    page = signed_in_page(context, server.base_url, API_KEY)
    page.goto(f"{server.base_url}/ui/review/{trace.trace_id}")
    assert "Not scored." in page.locator(f"#run-{trace.agent_span_id}-scores").inner_text()
    page.select_option("select[name=binding]", "relevancy")
    page.check("input[name=label][value=fail]")
    page.fill("textarea[name=comment]", "Lisbon was rainy <b>all day</b>.")
    page.fill("input[name=author]", "ana")
    page.click("form.verdict button[type=submit]")
    page.wait_for_url(f"{server.base_url}/ui/review?recorded={trace.trace_id}")

    def judged() -> str | None:
        page.goto(f"{server.base_url}/ui/review/{trace.trace_id}")
        cell = page.locator("#recorded-feedback td.judge-beside").first.inner_text()
        return cell if "judged on feedback" in cell and "skipped" in cell else None

    cell = wait_for(judged, 90, "the judge's result beside the verdict")
    relevancy = page.locator('.judged[data-binding="relevancy"]').inner_text()
    assert re.search(r"\b(0|1)(\.\d+)?\b", relevancy), relevancy  # the judge's score
    assert "(judged on feedback)" in relevancy
    skipped = page.locator('.judged[data-binding="no-budget"]').inner_text()
    assert "skipped (budget)" in skipped and "daily budget" in skipped
    assert "Lisbon was rainy <b>all day</b>." in page.locator("#recorded-feedback").inner_text()
    assert "ana" in cell or "ana" in page.locator("#recorded-feedback").inner_text()
    assert layout_problems(page) == []
    shot(page, "review-feedback-trigger")
