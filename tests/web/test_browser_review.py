"""The review pages in headless Chromium: from the queue to a run, a verdict recorded with the
form, behind the API key's login (signed in through the login form itself)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.browser_support import layout_problems, shot
from tests.support.live_app import serve_app
from tests.support.score_streams import insert_rows, score_row
from tests.support.web_traces import agent_trace_json
from tracescore.config import parse_config
from tracescore.ingest.unpack import drain
from tracescore.service import create_app
from tracescore.store import SpanStore, open_store
from tracescore.store.feedback import FeedbackStore

pytestmark = pytest.mark.browser

API_KEY = "review-test-key"
CONFIG = f"""
server: {{api_keys: [{API_KEY}]}}
scorers: [{{name: quality, scorer: completeness, threshold: 0.5}}, {{name: tone, scorer: tone}}]
"""
ANSWER = "It rains in Paris, take an umbrella."
REASON = "The answer covers the city but not the temperature the user asked for."


def _agent_span(trace_id: str) -> str:
    return f"{trace_id[:12]}{1:04x}"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, SpanStore, str]]:
    """A running app whose store holds one scored agent run nobody has reviewed."""
    store = open_store(f"sqlite:///{tmp_path / 'tracescore.db'}")
    app = create_app(parse_config(CONFIG), store)
    trace_id = uuid.uuid4().hex
    body = agent_trace_json(
        trace_id,
        system="You are WeatherBot.",
        user="Weather in Paris?",
        tool_result='{"forecast": "sunny, 21"}',
        answer=ANSWER,
        agent="WeatherBot",
    )
    response = TestClient(app).post(
        "/v1/traces",
        content=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"},
    )
    assert response.status_code == 200
    drain(store)
    insert_rows(
        store.engine,
        [
            score_row(
                datetime.now(UTC),
                0.52,
                binding="quality",
                trace_id=trace_id,
                span_id=_agent_span(trace_id),
                reason=REASON,
            )
        ],
    )
    with serve_app(app) as base_url:
        yield base_url, store, trace_id
    store.close()


def test_a_reviewer_records_a_verdict_from_the_queue(
    context: Any,
    served: tuple[str, SpanStore, str],
) -> None:
    base_url, store, trace_id = served
    page = context.new_page()
    page.goto(f"{base_url}/ui/review")
    assert "/ui/login" in page.url  # signed out: the login form, then back to the queue
    page.fill("input[name=key]", API_KEY)
    page.click("form.login button[type=submit]")
    page.wait_for_url(f"{base_url}/ui/review")

    row = page.locator(f'#review-queue tr[data-trace="{trace_id}"]')
    assert "near the threshold" in row.inner_text() or "random sample" in row.inner_text()
    assert layout_problems(page) == []
    row.locator("a.review-link").click()
    page.wait_for_url(f"{base_url}/ui/review/{trace_id}?**")

    # The rebuilt run and its score with the judge's reason, beside the form.
    assert ANSWER in page.locator(f"#run-{_agent_span(trace_id)}").inner_text()
    assert REASON in page.locator(f"#run-{_agent_span(trace_id)}-scores").inner_text()
    assert page.locator("select[name=binding]").input_value() == "quality"
    assert layout_problems(page) == []
    shot(page, "review-run")

    page.check("input[name=label][value=fail]")
    page.fill("input[name=value]", "0.1")
    page.fill("textarea[name=comment]", "It is sunny: the tool said so.")
    page.fill("input[name=author]", "ana")
    page.click("form.verdict button[type=submit]")
    page.wait_for_url(f"{base_url}/ui/review?recorded={trace_id}")
    assert trace_id in page.locator("#recorded").inner_text()
    assert page.locator(f'#review-queue tr[data-trace="{trace_id}"]').count() == 0  # reviewed now

    (verdict,) = FeedbackStore(store).find(trace_id=trace_id)
    assert verdict | {"id": None, "created_at": None} == {
        "id": None,
        "trace_id": trace_id,
        "span_id": _agent_span(trace_id),
        "name": "quality",
        "value": 0.1,
        "label": "fail",
        "comment": "It is sunny: the tool said so.",
        "author": "ana",
        "source": "api",
        "created_at": None,
    }

    # The run's page lists the verdict now.
    page.goto(f"{base_url}/ui/review/{trace_id}")
    assert "It is sunny: the tool said so." in page.locator("#recorded-feedback").inner_text()
    # ... beside what the judge said of the run (the binding it names, no trigger there).
    beside = page.locator("#recorded-feedback td.judge-beside").inner_text()
    assert "quality" in beside and "0.520" in beside and REASON in beside


def test_a_verdict_with_nothing_in_it_is_refused_with_the_reason(
    served: tuple[str, SpanStore, str],
) -> None:
    base_url, store, trace_id = served
    with TestClient(create_app(parse_config(CONFIG), store), base_url=base_url) as client:
        client.post("/ui/login", data={"key": API_KEY, "next": "/"})
        refused = client.post(
            f"/ui/review/{trace_id}",
            data={"binding": "quality", "comment": "hm"},
            follow_redirects=False,
        )
        assert (
            refused.status_code == 422
            and "give a &#39;value&#39;, a &#39;label&#39; or both" in refused.text
        )
        unknown = client.post(
            f"/ui/review/{trace_id}",
            data={"binding": "nope", "label": "pass"},
            follow_redirects=False,
        )
        assert unknown.status_code == 422 and "no binding named" in unknown.text
        signed_out = TestClient(create_app(parse_config(CONFIG), store))
        assert (
            signed_out.post(
                f"/ui/review/{trace_id}",
                data={"binding": "quality", "label": "pass"},
                follow_redirects=False,
            ).status_code
            == 303
        )
    assert FeedbackStore(store).find(trace_id=trace_id) == []
