"""The conversation pages in headless Chromium: from a turn's trace page to its conversation,
whose turns are in order with their run scores, next to the conversation's own score; the
conversations list and its links; the layout holds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.support.browser_support import REPO, layout_problems, shot
from tests.support.paths import CAPTURES
from tests.support.server_process import ServerProcess, login_session, signed_in_page, start_server
from tracescore.web.auth import COOKIE_NAME

pytestmark = pytest.mark.browser

API_KEY = "conversations-test-key"
AUTHORIZATION = {"Authorization": f"Bearer {API_KEY}"}
USERS = [
    "Hi, my name is Ada and I live in Lyon.",
    "Can you recommend a museum in my city?",
    "What is my name?",
]
CONVERSATION = "thread-mastra-ada"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {
        "server": {"api_keys": [API_KEY]},
        "scorers": [
            {
                "name": "turns",
                "scorer": "tests.support.conversation_scorers:turn_order",
                "target": "conversation",
            },
            {
                "name": "answer",
                "scorer": "tests.support.custom_scorers:answer_present",
                "threshold": 0.5,
            },
        ],
        "conversations": {"idle_timeout": 0.5},
        "workers": {"poll_interval": 0.05, "processes": 0},
    }
    workdir = tmp_path_factory.mktemp("conversations")
    with start_server(workdir, config=config, env={"PYTHONPATH": str(REPO)}) as running:
        for library in ("mastra", "openinference-openai"):
            for path in sorted((CAPTURES / library / "conversation").glob("*.pb")):
                if ".metrics." in path.name:
                    continue
                signal = "logs" if ".logs." in path.name else "traces"
                response = httpx.post(
                    f"{running.base_url}/v1/{signal}",
                    content=path.read_bytes(),
                    timeout=10,
                    headers={**AUTHORIZATION, "Content-Type": "application/x-protobuf"},
                )
                assert response.status_code == 200
        deadline = time.monotonic() + 60
        with httpx.Client(base_url=running.base_url, headers=AUTHORIZATION, timeout=10) as client:
            while time.monotonic() < deadline:
                items = client.get("/api/conversations").json()["items"]
                if len(items) == 2 and all(item["scores"] for item in items):
                    break
                time.sleep(0.2)
            else:
                raise AssertionError("conversations not scored in time")
        yield running


@pytest.fixture
def page(context: Any, server: ServerProcess) -> Any:
    return signed_in_page(context, server.base_url, API_KEY)


def test_a_turns_trace_page_leads_to_its_conversation_in_order(
    server: ServerProcess, page: Any
) -> None:
    document = httpx.get(
        f"{server.base_url}/api/conversations/{CONVERSATION}", headers=AUTHORIZATION
    ).json()
    second = document["turns"][1]["trace_id"]
    page.goto(f"{server.base_url}/ui/traces/{second}")
    link = page.locator("a.conversation-link")
    assert link.inner_text() == CONVERSATION
    link.click()
    page.wait_for_url(f"**/ui/conversations/{CONVERSATION}")
    assert page.locator("#conversation-id").inner_text() == CONVERSATION
    turns = page.locator("#turns > li")
    assert turns.count() == 3
    assert [turns.nth(i).locator(".message.user .text").inner_text() for i in range(3)] == USERS
    assert "Your name is Ada" in turns.nth(2).locator(".message.assistant .text").inner_text()
    # Each turn shows its run score; the conversation shows its own.
    for index in range(3):
        assert turns.nth(index).locator(".score-card h4").all_inner_texts() == ["answer"]
    own = page.locator("#conversation-scores .score-card")
    assert own.locator("h4").all_inner_texts() == ["turns"]
    assert own.locator(".score").inner_text() == "3.000"
    assert " | ".join(USERS) in own.locator(".reason").inner_text()
    # Back to a turn's trace from the conversation.
    turns.nth(0).locator("a.trace-link").click()
    page.wait_for_url(f"**/ui/traces/{document['turns'][0]['trace_id']}")
    shot(page, "conversation-trace")
    # The last turn's trace shows its run's score, not the conversation's kept on it.
    page.goto(f"{server.base_url}/ui/traces/{document['turns'][2]['trace_id']}")
    assert page.locator(".scores-panel .score-card h4").all_inner_texts() == ["answer"]
    assert page.locator("#orphan-scores").count() == 0


def test_the_conversations_list_links_each_conversation(server: ServerProcess, page: Any) -> None:
    page.goto(f"{server.base_url}/ui/conversations")
    rows = page.locator("#conversations tbody tr")
    assert rows.count() == 2
    ids = rows.locator("td:first-child a").all_inner_texts()
    assert sorted(ids) == ["session-oi-ada", CONVERSATION]
    page.locator("#conversations a", has_text="session-oi-ada").click()
    page.wait_for_url("**/ui/conversations/session-oi-ada")
    assert page.locator("#turns > li").count() == 3
    page.goto(f"{server.base_url}/ui/conversations?agent=Concierge")
    assert page.locator("#conversations tbody tr td:first-child a").all_inner_texts() == [
        CONVERSATION
    ]
    missing = httpx.get(  # a 404 page (a browser would log the status as a console error)
        f"{server.base_url}/ui/conversations/{quote('no such conversation')}",
        cookies={COOKIE_NAME: login_session(server.base_url, API_KEY)},
        timeout=10,
    )
    assert missing.status_code == 404 and "No conversation" in missing.text


def test_the_runs_list_links_conversation_scores_to_their_conversation(
    server: ServerProcess, page: Any
) -> None:
    since = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    page.goto(f"{server.base_url}/ui/runs?binding=turns&since={since}")
    links = page.locator("#runs-table a.trace-link")
    assert sorted(links.all_inner_texts()) == ["session-oi-ada", CONVERSATION]
    page.locator("#runs-table a.trace-link", has_text=CONVERSATION).click()
    page.wait_for_url(f"**/ui/conversations/{CONVERSATION}#score-*")
    assert page.locator("#conversation-id").inner_text() == CONVERSATION
    page.goto(f"{server.base_url}/ui/runs?binding=answer&since={since}")  # run scores: their traces
    assert all(
        href.startswith("/ui/traces/")
        for href in page.locator("#runs-table a.trace-link").evaluate_all(
            "links => links.map(l => l.getAttribute('href'))"
        )
    )


def test_conversation_pages_layout_has_no_overlaps_or_cut_text(
    server: ServerProcess, page: Any
) -> None:
    for path in ("/ui/conversations", f"/ui/conversations/{CONVERSATION}"):
        page.goto(f"{server.base_url}{path}")
        assert layout_problems(page) == [], path
    shot(page, "conversation")
