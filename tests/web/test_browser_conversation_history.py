"""A conversation's score history in headless Chromium (issue 37, item 6): scored at 3 turns,
continued to 5 and scored again, its page shows the latest scores as cards and a table of both
scorings, latest first, and the conversations list shows only the latest; the layout holds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser_support import REPO, layout_problems, shot
from tests.support.conversation_turns import send_turns, wait_for_scorings
from tests.support.server_process import ServerProcess, start_server

pytestmark = pytest.mark.browser

CONVERSATION = "trip-ada"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {
        "scorers": [
            {
                "name": "turns",
                "scorer": "tests.support.conversation_scorers:turn_order",
                "target": "conversation",
            },
            {
                "name": "order",
                "scorer": "tests.support.conversation_scorers:turn_order",
                "target": "conversation",
            },
        ],
        "conversations": {"idle_timeout": 2.0},
        "workers": {"poll_interval": 0.05, "processes": 0},
    }
    workdir = tmp_path_factory.mktemp("conversation-history")
    with start_server(workdir, config=config, env={"PYTHONPATH": str(REPO)}) as running:
        send_turns(running.base_url, CONVERSATION, 1, 3)
        wait_for_scorings(running.base_url, CONVERSATION, [3, 3])
        send_turns(running.base_url, CONVERSATION, 4, 5)
        wait_for_scorings(running.base_url, CONVERSATION, [3, 3, 5, 5])
        yield running


@pytest.fixture
def page(context: Any) -> Any:
    return context.new_page()


def test_the_conversation_page_draws_its_score_history(server: ServerProcess, page: Any) -> None:
    page.goto(f"{server.base_url}/ui/conversations/{CONVERSATION}")
    assert page.locator("#turns > li").count() == 5
    latest = page.locator("#conversation-scores .score-card")
    assert sorted(latest.locator("h4").all_inner_texts()) == ["order", "turns"]
    assert "covering 5 turns" in page.locator("#conversation-scores h2").inner_text()
    history = page.locator("#score-history tbody tr")
    assert history.count() == 2
    assert [history.nth(i).get_attribute("data-turns") for i in range(2)] == ["5", "3"]
    assert page.locator("#score-history thead th").all_text_contents() == [
        "Turns",
        "When",
        "order",
        "turns",
    ]
    shown = [history.nth(i).locator('td[data-binding="turns"]').inner_text() for i in range(2)]
    assert shown == ["5.000", "3.000"]
    assert layout_problems(page) == []
    shot(page, "conversation-history")


def test_the_list_shows_each_bindings_latest_score(server: ServerProcess, page: Any) -> None:
    page.goto(f"{server.base_url}/ui/conversations")
    (row,) = page.locator("#conversations tbody tr").all()
    assert row.locator(".score").all_inner_texts() == ["5.000", "5.000"]
    assert layout_problems(page) == []
