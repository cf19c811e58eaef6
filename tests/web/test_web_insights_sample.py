"""The failure-modes page says when the latest pass read only a sample of its window's failed
runs (``insights.max_runs``) or clustered only some of them (``insights.cluster_sample``),
and says nothing of the kind when it saw every run (issue 48, views). A real SQLite store
holding the planted stream's traces and failing scores, real passes, the real app."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.support.failure_modes import planted_stream, store_runs
from tests.support.web_traces import visible_text
from tracescore.config import parse_config
from tracescore.extract.registry import CONVENTIONS
from tracescore.insights.config import InsightsConfig
from tracescore.insights.passes import run_pass
from tracescore.service import create_app
from tracescore.store import SpanStore, open_store

START = 1_800_000_000.0
NOW = datetime.fromtimestamp(START + 7200, UTC)
PER_MODE, NOISE = 40, 40
"""160 failed runs."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SpanStore]:
    opened = open_store(f"sqlite:///{tmp_path / 'tracescore.db'}")
    store_runs(opened, planted_stream(PER_MODE, NOISE, start=START))
    yield opened
    opened.close()


def _page_note(store: SpanStore) -> str | None:
    app = TestClient(create_app(parse_config("insights: {enabled: false}\n"), store))
    markup = app.get("/ui/insights").text
    found = re.search(r'<p id="pass-sample">(.*?)</p>', markup, re.S)
    return visible_text(found.group(1)) if found else None


def test_a_pass_that_read_a_sample_says_how_many_of_how_many(store: SpanStore) -> None:
    result = run_pass(store, InsightsConfig(max_runs=100, cluster_sample=60), CONVENTIONS, now=NOW)
    assert result.read == 100 and result.groups
    assert result.groups[0]["details"]["pass"]["capped"] is True
    note = _page_note(store)
    assert note is not None
    counted = re.search(r"read a sample: 100 of at least ([\d,]+) failed runs", note)
    assert counted is not None, note
    assert 100 < int(counted.group(1).replace(",", "")) <= PER_MODE * 3 + NOISE
    assert "60 of the runs it read" in note and "insights.cluster_sample" in note


def test_a_pass_that_saw_every_run_says_no_sample(store: SpanStore) -> None:
    result = run_pass(store, InsightsConfig(), CONVENTIONS, now=NOW)
    assert result.read == result.failed == PER_MODE * 3 + NOISE and result.groups
    assert result.groups[0]["details"]["pass"]["capped"] is False
    assert _page_note(store) is None
