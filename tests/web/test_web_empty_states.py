"""Empty states that say what to do (issue 34): a conversation no binding will ever score is not
"pending", compare with one scored version says how to get a second, the review queue speaks
words rather than reason ids. Real stores, real ingest, the real app."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.support.paths import CAPTURES
from tests.support.score_streams import insert_rows, score_row
from tests.support.scored_dashboard import FAR_FUTURE
from tests.support.web_traces import visible_text
from tracescore.config import parse_config
from tracescore.ingest.unpack import drain
from tracescore.pipeline.scoring_task import build_worker
from tracescore.service import create_app
from tracescore.store import open_store

RUNS_ONLY = "scorers: [{name: quality, scorer: completeness, threshold: 0.5}]\n"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """The app without any conversation binding, holding a three-turn conversation."""
    store = open_store(f"sqlite:///{tmp_path / 'tracescore.db'}")
    app = TestClient(create_app(parse_config(RUNS_ONLY), store))
    for path in sorted((CAPTURES / "mastra" / "conversation").glob("*.pb")):
        if ".metrics." in path.name or ".logs." in path.name:
            continue
        response = app.post(
            "/v1/traces",
            content=path.read_bytes(),
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert response.status_code == 200
    drain(store)
    worker = build_worker(parse_config(RUNS_ONLY).scoring(), store)

    async def score_all() -> None:  # the worker records the turns, as the running service does
        for claim in store.queue.claim(worker.owner, 1000, 30.0, now=FAR_FUTURE):
            await worker.process(claim)

    asyncio.run(score_all())
    yield app
    store.close()


def test_conversations_without_a_conversation_binding_say_how_to_score_them(
    client: TestClient,
) -> None:
    listed = client.get("/ui/conversations").text
    rows = re.findall(r'<tr>\s*<td><a class="mono" href="(/ui/conversations/[^"]+)"', listed)
    assert rows, "the capture's conversation is listed"
    text = visible_text(listed)
    assert "pending" not in text and "target: conversation" in text
    assert "not covered" in text
    page = client.get(rows[0]).text
    one = visible_text(page)
    assert "idle timeout" not in one and "target: conversation" in one
    # the header says the word the list says: the pipeline's "scored" state is not shown
    assert '<span class="status" data-status="not covered"' in page


def test_compare_with_one_scored_version_says_how_to_get_a_second(client: TestClient) -> None:
    page = client.get("/ui/compare", params={"binding": "quality"}).text
    text = visible_text(page)
    assert "version(s)" not in text
    assert "nothing to compare it with yet" in text and "tracescore rescore" in text


def test_the_review_queue_names_why_a_run_is_proposed_in_words(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'review.db'}")
    try:
        insert_rows(store.engine, [score_row(datetime.now(UTC), 0.52, binding="quality")])
        page = TestClient(create_app(parse_config(RUNS_ONLY), store)).get("/ui/review").text
        chips = re.findall(r'<span class="chip" data-why="([a-z_]+)">([^<]*)</span>', page)
        assert chips
        assert all("_" not in shown for _, shown in chips), chips
    finally:
        store.close()
