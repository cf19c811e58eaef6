"""The Sources page in headless Chromium: one row per service and scope the pipeline read, the
unread ones first with their reason and what to change, the read ones marked read; reachable
from the navigation; the layout holds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.browser_support import layout_problems, shot
from tests.support.server_process import ServerProcess, signed_in_page, start_server, wait_for
from tests.support.source_traces import (
    CONTENTLESS_SPANS,
    GENAI_SERVICE,
    LATEST,
    LEGACY_SCOPE,
    acme_export,
)

pytestmark = pytest.mark.browser

API_KEY = "sources-browser-key"
AUTHORIZATION = {"Authorization": f"Bearer {API_KEY}"}
READ_SCOPE = "opentelemetry.util.genai.handler"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {
        "server": {"api_keys": [API_KEY]},
        "scorers": [{"name": "tone", "scorer": "tone"}],
        "workers": {"poll_interval": 0.05, "processes": 0},
    }
    with start_server(tmp_path_factory.mktemp("sources"), config=config) as running:
        bodies = [acme_export(1), CONTENTLESS_SPANS.read_bytes(), (LATEST / "0001.pb").read_bytes()]
        for signal, body in [("traces", body) for body in bodies] + [
            ("logs", (LATEST / "0002.logs.pb").read_bytes())
        ]:
            response = httpx.post(
                f"{running.base_url}/v1/{signal}",
                content=body,
                timeout=10,
                headers={**AUTHORIZATION, "Content-Type": "application/x-protobuf"},
            )
            assert response.status_code == 200
        with httpx.Client(base_url=running.base_url, headers=AUTHORIZATION, timeout=10) as client:
            wait_for(
                lambda: len(client.get("/api/sources").json()["sources"]) == 3,
                60,
                "the three sources",
            )
        yield running


@pytest.fixture
def page(context: Any, server: ServerProcess) -> Any:
    return signed_in_page(context, server.base_url, API_KEY)


def test_the_sources_page_lists_each_source_with_its_reason(
    server: ServerProcess, page: Any
) -> None:
    page.goto(f"{server.base_url}/")
    page.locator("nav a", has_text="Sources").click()
    page.wait_for_url("**/ui/sources")
    rows = page.locator("#sources tbody tr")
    assert rows.evaluate_all("rows => rows.map(r => r.dataset.source)") == [
        "acme-shop/acme.agents",
        f"{GENAI_SERVICE}/{LEGACY_SCOPE}",
        f"{GENAI_SERVICE}/{READ_SCOPE}",
    ]  # those with a reason first
    acme, contentless, read = (rows.nth(index).locator("td") for index in range(3))
    assert (
        acme.nth(8)
        .inner_text()
        .startswith(
            "unknown_convention unknown convention: scope acme.agents, content in acme.answer"
        )
    )
    assert contentless.all_inner_texts()[2:8] == ["otel-genai", "2", "2", "2", "0", "2"]
    assert (
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT"
        in contentless.nth(8).inner_text()
    )
    assert read.all_inner_texts()[2:9] == ["otel-genai", "2", "2", "2", "2", "0", "read"]
    assert layout_problems(page) == []
    shot(page, "sources")
