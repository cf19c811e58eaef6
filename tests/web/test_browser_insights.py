"""The failure-modes page in headless Chromium, on a running service whose database holds an
insights pass over the planted failure modes: reachable from the navigation, one row per mode
named by its terms, a mode's page listing its runs linked to their traces; the layout holds."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.support.browser_support import layout_problems, shot
from tests.support.failure_modes import planted_stream, store_runs
from tests.support.server_process import ServerProcess, signed_in_page, start_server
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
    store_runs(store, planted_stream(per_mode=60, noise=30, start=START, span=1800))
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
    assert len(names) >= 3
    assert any("lisbon" in name for name in names[:3])
    assert layout_problems(page) == []
    shot(page, "insights")
    size = int(page.locator("#insights tbody tr").first.locator("td").nth(1).inner_text())
    assert size >= 55
    page.locator("#insights tbody tr td:first-child a").first.click()
    page.wait_for_url("**/ui/insights/*")
    assert page.locator("#group-runs tbody tr").count() == size
    page.locator("#group-runs tbody tr a").first.click()
    page.wait_for_url("**/ui/traces/*")
    api = httpx.get(
        f"{server.base_url}/api/v1/insights",
        headers={"Authorization": f"Bearer {API_KEY}"},
        timeout=10,
    ).json()
    assert len(api["items"]) == len(names) and api["next_cursor"] is None
