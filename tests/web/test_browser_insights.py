"""The failure-modes page in headless Chromium, on a running service whose database holds an
insights pass over realistic support traffic: reachable from the navigation, one row per mode
named by how it failed, a mode's page showing its signature and its runs (the failing answer,
the scorers' reasons, the run's own time) linked to their traces; the layout holds. And an
empty page, on a service with passes on: what it waits for, and a button that runs a pass."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.support.browser_support import layout_problems, shot
from tests.support.server_process import ServerProcess, signed_in_page, start_server
from tests.support.support_traffic import store_support_runs, support_stream
from tracescore.extract.registry import CONVENTIONS
from tracescore.insights.config import InsightsConfig
from tracescore.insights.passes import run_pass
from tracescore.store import open_store

pytestmark = pytest.mark.browser

API_KEY = "insights-browser-key"
START = datetime.now(UTC).timestamp() - 3600


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("insights")
    url = f"sqlite:///{workdir / 'tracescore.db'}"
    store = open_store(url)
    runs = support_stream(300, "heldout", start=START, span=1800)
    store_support_runs(store, runs)
    run_pass(store, InsightsConfig(), CONVENTIONS)
    store.close()
    config = {"server": {"api_keys": [API_KEY]}, "insights": {"enabled": False}}
    with start_server(workdir, db_url=url, config=config) as running:
        yield running


@pytest.fixture
def page(context: Any, server: ServerProcess) -> Any:
    return signed_in_page(context, server.base_url, API_KEY)


def test_the_insights_page_lists_the_modes_and_a_mode_its_runs(
    server: ServerProcess, page: Any
) -> None:
    page.goto(f"{server.base_url}/")
    page.locator("nav a", has_text="Failure modes").click()
    page.wait_for_url("**/ui/insights")
    names = page.locator("#insights tbody tr td:first-child a").all_inner_texts()
    assert len(names) >= 5
    assert any(name.endswith("timed out, answer apologised") for name in names[:5])
    assert "answer leaked the system prompt" in names[:5]
    assert page.locator("#run-pass").count() == 0  # passes are off on this service
    assert "insights.enabled: false" in page.locator("#next-pass").inner_text()
    assert layout_problems(page) == []
    shot(page, "insights")
    row = page.locator("#insights tbody tr", has_text="timed out")
    size = int(row.locator("td").nth(1).inner_text())
    assert size >= 40
    row.locator("td:first-child a").click()
    page.wait_for_url("**/ui/insights/*")
    signature = page.locator("#group-signature tbody").inner_text()
    assert "tool error" in signature and "timeout" in signature
    assert page.locator("#group-runs tbody tr").count() == size
    first = page.locator("#group-runs tbody tr").first
    answer = first.locator("td.answer").inner_text()
    assert "sorry" in answer.lower() or "apolog" in answer.lower()
    assert first.locator("td").nth(6).inner_text().strip()  # what the judge said
    # The run's own start, half a minute before its verdict (and so not every row's second).
    times = page.locator("#group-runs tbody td.when").all_inner_texts()
    assert len(set(times)) > size // 2
    assert layout_problems(page) == []
    shot(page, "insights-group")
    page.locator("#group-runs tbody tr a").first.click()
    page.wait_for_url("**/ui/traces/*")
    api = httpx.get(
        f"{server.base_url}/api/v1/insights",
        headers={"Authorization": f"Bearer {API_KEY}"},
        timeout=10,
    ).json()
    assert len(api["items"]) == len(names) and api["next_cursor"] is None


def test_an_empty_page_says_what_it_waits_for_and_runs_a_pass(
    tmp_path_factory: pytest.TempPathFactory, context: Any
) -> None:
    workdir = tmp_path_factory.mktemp("insights-empty")
    config = {
        "server": {"api_keys": [API_KEY]},
        "scorers": [{"name": "coverage", "scorer": "keyword-coverage", "threshold": 0.5}],
        "insights": {"enabled": True, "interval": "1h"},
    }
    with start_server(workdir, config=config) as running:
        page = signed_in_page(context, running.base_url, API_KEY)
        page.goto(f"{running.base_url}/ui/insights")
        assert page.locator("#insights tbody td.empty").count() == 1
        means = page.locator("#failed-means").inner_text()
        assert "below its binding's pass threshold (coverage)" in means
        assert "human feedback labelled fail" in means
        assert "Next pass:" in page.locator("#next-pass").inner_text()
        assert layout_problems(page) == []
        shot(page, "insights-empty")
        page.locator("#run-pass").click()
        page.wait_for_url("**/ui/insights?asked=*")
        assert page.locator("#pass-asked").inner_text() in (
            "A pass is due now: its groups replace these when it ends (reload in a minute).",
            "A pass is running already: its groups come at its end.",
        )
