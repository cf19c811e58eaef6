"""The dashboard in a real browser (headless Debian Chromium driven by Playwright) against the
real ``tracescore serve`` subprocess, seeded by posting the captured OTLP files and letting the
live pipeline score them.

Screenshots go to ``test-artifacts/`` at the repository root.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, select

from tests.support.browser_support import REPO, layout_problems, shot
from tests.support.paths import CAPTURES
from tests.support.score_rows import ScoreView
from tests.support.server_process import ServerProcess, signed_in_page, start_server, wait_for
from tests.support.web_traces import HOSTILE_SYSTEM, agent_trace_json
from tracescore.store.dialect import as_utc
from tracescore.store.scores import SCORES

pytestmark = pytest.mark.browser

BINDINGS = [
    {
        "name": "answer-present",
        "scorer": "tests.support.custom_scorers:answer_present",
        "threshold": 0.5,
    },
    {"name": "tone", "scorer": "tone"},
    {"name": "textual-difference", "scorer": "textual-difference"},
]
# Two batches of captures, sent in different seconds: the 1-second chart then has several points.
API_KEY = "browser-test-key"
AUTHORIZATION = {"Authorization": f"Bearer {API_KEY}"}
JSON_BODY = {"Content-Type": "application/json"}
FIRST_BATCH = ["otel-genai-openai-v2-latest", "openinference-openai", "mastra", "vercel-ai-sdk-v6"]


def _post_captures(base_url: str, folders: list[Path]) -> None:
    """POST every OTLP/JSON request of the folders as the libraries sent them (spans, then logs)."""
    with httpx.Client(base_url=base_url, timeout=10, headers=AUTHORIZATION) as client:
        for folder in folders:
            for scenario in sorted(p for p in folder.iterdir() if p.is_dir()):
                for path in sorted(scenario.glob("*.json")):
                    kind = path.name.split(".")[1]
                    if kind not in ("json", "logs"):
                        continue  # .raw.json repeats 0001.json; metrics are not stored
                    endpoint = "/v1/logs" if kind == "logs" else "/v1/traces"
                    response = client.post(endpoint, content=path.read_bytes(), headers=JSON_BODY)
                    assert response.status_code == 200, (path, response.text)


def _wait_until_scored(base_url: str, timeout: float = 30.0) -> None:
    traces: list[dict[str, Any]] = []
    # One client for every look: ``httpx.get`` builds one, SSL context included, ~25 ms of CPU.
    with httpx.Client(base_url=base_url, headers=AUTHORIZATION) as client:

        def all_scored() -> bool:
            answer = client.get("/api/traces", params={"limit": 1000})
            traces[:] = answer.json()["traces"]
            return bool(traces) and all(t["state"] in ("scored", "failed") for t in traces)

        wait_for(all_scored, timeout, lambda: f"traces scored ({traces})", every=0.1)


def _scores(db_url: str) -> list[ScoreView]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            return [ScoreView(**row._mapping) for row in connection.execute(select(SCORES))]
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {
        "server": {"api_keys": [API_KEY]},
        "scorers": BINDINGS,
        "workers": {"poll_interval": 0.05},
    }
    workdir = tmp_path_factory.mktemp("dashboard")
    with start_server(
        workdir, config=config, idle_timeout=0.3, env={"PYTHONPATH": str(REPO)}
    ) as running:
        folders = sorted(p for p in CAPTURES.iterdir() if p.is_dir())
        _post_captures(running.base_url, [f for f in folders if f.name in FIRST_BATCH])
        _wait_until_scored(running.base_url)
        time.sleep(1.0 - time.time() % 1.0 + 0.05)  # the next batch lands in a later second
        _post_captures(running.base_url, [f for f in folders if f.name not in FIRST_BATCH])
        _wait_until_scored(running.base_url)
        yield running


@pytest.fixture
def page(context: Any, server: ServerProcess) -> Any:
    return signed_in_page(context, server.base_url, API_KEY)


def test_overview_draws_a_point_per_second_that_had_scores(
    server: ServerProcess, page: Any
) -> None:
    page.goto(f"{server.base_url}/?window=2m&bucket=1s")
    rows = _scores(server.db_url)
    for binding in ("answer-present", "tone", "textual-difference"):
        seconds = {
            int(as_utc(r.created_at).timestamp())
            for r in rows
            if r.binding == binding and r.status == "ok"
        }
        points = page.locator(f'article[data-binding="{binding}"] svg.chart circle.point')
        assert points.count() == len(seconds) >= 2, binding
        samples = page.locator(f'article[data-binding="{binding}"] dd.samples').inner_text()
        assert int(samples) == sum(r.binding == binding and r.status == "ok" for r in rows)
    box = page.locator('article[data-binding="tone"] svg.chart').bounding_box()
    assert box["width"] > 400 and box["height"] > 120  # laid out as a readable chart
    shot(page, "dashboard-overview")


def test_clicking_the_lowest_score_opens_its_trace(server: ServerProcess, page: Any) -> None:
    page.goto(f"{server.base_url}/?window=15m")
    page.select_option('form.filters select[name="scorer"]', "answer-present")
    page.click('form.filters button[type="submit"]')
    page.wait_for_url("**scorer=answer-present**")
    rows = [r for r in _scores(server.db_url) if r.binding == "answer-present" and r.status == "ok"]
    lowest = min(r.score for r in rows)
    first = page.locator("#lowest-table tbody tr").first
    assert first.locator(".score").inner_text() == f"{lowest:.3f}"
    score_id = first.get_attribute("data-row")
    row = next(r for r in rows if r.id == score_id)
    assert row.score == lowest

    first.locator("a.score-link").click()
    page.wait_for_url(f"**/ui/traces/{row.trace_id}#score-{row.id}")
    card = page.locator(f"#score-{row.id}")
    assert card.is_visible()
    assert row.reason and row.reason in card.locator(".reason").inner_text()
    tool_calls = page.locator(f"#run-{row.span_id} .tool-call")
    assert tool_calls.count() >= 1
    assert "get_weather" in tool_calls.first.locator(".tool-name").inner_text()
    assert '"city": "Paris"' in tool_calls.first.locator("pre.args").inner_text()
    page.click("#raw-spans > summary")
    assert page.locator("#raw-spans details.span").first.is_visible()
    shot(page, "dashboard-trace")


def test_a_newly_scored_trace_appears_without_reload(server: ServerProcess, page: Any) -> None:
    page.goto(f"{server.base_url}/?window=15m")
    page.evaluate("window.__sameDocument = true")
    trace_id = f"{time.time_ns():032x}"[-32:]
    response = httpx.post(
        f"{server.base_url}/v1/traces",
        content=agent_trace_json(trace_id),
        headers={**JSON_BODY, **AUTHORIZATION},
    )
    assert response.status_code == 200
    arrived = page.locator(f'#latest-table tr:has(a[href^="/ui/traces/{trace_id}"])').first
    arrived.wait_for(state="visible", timeout=30_000)
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    assert "fresh" in arrived.get_attribute("class")
    shot(page, "dashboard-live")

    # The new trace is hostile: its page shows the markup as text and runs none of it.
    arrived.locator("a.trace-link").click()
    page.wait_for_url(f"**/ui/traces/{trace_id}**")
    assert HOSTILE_SYSTEM in page.locator(".system").first.inner_text()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("main script, main img, main iframe").count() == 0
    shot(page, "dashboard-hostile-trace")


def test_the_live_clock_is_24_hour_utc_like_every_other_time(
    server: ServerProcess, page: Any
) -> None:
    """The header clock followed the browser's locale (en-US: "3:52:10 PM") while every time
    the server writes is 24-hour UTC."""
    page.goto(f"{server.base_url}/?window=15m")
    status = page.locator("#live-status")
    page.locator("#live-status.ok").wait_for(timeout=15_000)  # the first poll answered
    assert re.fullmatch(r"live · \d{2}:\d{2}:\d{2} UTC", status.inner_text()), status.inner_text()


def test_the_trace_page_draws_its_spans_as_a_timeline(server: ServerProcess, page: Any) -> None:
    """A waterfall of the trace's spans, parents above children, each bar inside its parent's
    time; a row leads to that span's raw attributes."""
    scored = {
        r.trace_id
        for r in _scores(server.db_url)
        if r.binding == "answer-present" and r.status == "ok"
    }
    # a trace of several spans (a per-call loop's answering call is one span of its own)
    spans, trace_id = next(
        (found, trace_id)
        for trace_id in sorted(scored)
        if len(
            found := httpx.get(
                f"{server.base_url}/api/traces/{trace_id}", headers=AUTHORIZATION
            ).json()["spans"]
        )
        >= 2
    )
    page.goto(f"{server.base_url}/ui/traces/{trace_id}")
    rows = page.locator("#timeline svg.waterfall g.row")
    assert rows.count() == len(spans) >= 2
    drawn = {}
    for index in range(rows.count()):
        entry = rows.nth(index)
        box = entry.locator("rect.bar").bounding_box()
        drawn[entry.get_attribute("data-span")] = (box["x"], box["x"] + box["width"])
    by_id = {span["span_id"]: span for span in spans}
    assert set(drawn) == set(by_id)
    for span_id, (left, right) in drawn.items():
        parent = by_id[span_id].get("parent_span_id")
        if parent in drawn:  # a child is drawn within its parent's bar
            assert drawn[parent][0] - 1 <= left and right <= drawn[parent][1] + 1, span_id
    assert layout_problems(page) == []
    shot(page, "dashboard-trace-timeline")
    first = rows.first.get_attribute("data-span")
    page.locator("#timeline a.span-row").first.click()
    page.wait_for_url(f"**#span-{first}")


def test_login_form_sets_a_session_cookie(server: ServerProcess, context: Any) -> None:
    page = context.new_page()
    page.goto(f"{server.base_url}/?window=1h")
    page.wait_for_url("**/ui/login?next=**")
    page.fill('input[name="key"]', "wrong-key")
    page.click('form.login button[type="submit"]')
    assert page.locator(".error").inner_text() == "That key is not valid."
    context.problems.remove(
        "Failed to load resource: the server responded with a status of 401 (Unauthorized)"
    )
    page.fill('input[name="key"]', API_KEY)
    page.click('form.login button[type="submit"]')
    page.wait_for_url(f"{server.base_url}/?window=1h")
    assert page.locator('article[data-binding="tone"]').is_visible()
    (cookie,) = context.cookies()
    assert cookie["httpOnly"] and API_KEY not in cookie["value"] and API_KEY not in page.url
    # The live script's polls carry the session too: its status turns to "live".
    page.locator("#live-status.ok").wait_for(timeout=5000)
    page.click("form.logout button")
    page.wait_for_url("**/ui/login")
    page.goto(f"{server.base_url}/")
    page.wait_for_url("**/ui/login?next=**")
