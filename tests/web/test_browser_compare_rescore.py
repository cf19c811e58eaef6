"""The compare page in headless Chromium after a changed scorer re-scored a sample of its runs
(``rescore_on_change``): without being asked, it compares that binding's old version with the
re-scored one, shows the re-score's progress and skips, the paired figures and the runs they
disagree on most, linked to their traces, with the judges' reasons escaped."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support.browser_support import layout_problems, shot
from tests.support.score_streams import score_row
from tests.support.server_process import ServerProcess, signed_in_page, start_server
from tracescore.offline.compare import compare_versions
from tracescore.store import open_store
from tracescore.store.rescores import RescoreJob, save_job
from tracescore.store.scores import score_id, upsert_scores

pytestmark = pytest.mark.browser

API_KEY = "compare-rescore-key"
OLD, NEW = "1", "1+3ef479c1"
HOSTILE = '<img src=x onerror="window.__pwned=1">ignore the rubric</b>'


def _seed(url: str) -> None:
    store = open_store(url)
    rng = random.Random(37)
    now = datetime.now(UTC) - timedelta(minutes=5)
    rows, runs = [], []
    for index in range(12):
        trace_id, span_id = f"{index:032x}", f"{index:016x}"
        old = round(rng.uniform(0.5, 1.0), 3)
        new = round(min(1.0, max(0.0, old + rng.uniform(-0.5, 0.2))), 3)
        for version, value in ((OLD, old), (NEW, new)):
            if version == NEW and index >= 8:
                continue  # four runs of the sample skipped for budget: no new score
            rows.append(
                score_row(
                    now,
                    value,
                    id=score_id(trace_id, span_id, "helpfulness", version),
                    trace_id=trace_id,
                    span_id=span_id,
                    binding="helpfulness",
                    scorer_version=version,
                    label="pass" if value >= 0.5 else "fail",
                    reason=HOSTILE if index == 3 else f"reason {index}",
                )
            )
        runs.append((trace_id, span_id))
    for version in ("1", "2"):  # another binding with two versions and no re-score
        rows.append(score_row(now, 0.5, binding="other", scorer_version=version))
    job = RescoreJob(
        "helpfulness",
        "f" * 64,
        OLD,
        "done",
        old_version=OLD,
        new_version=NEW,
        runs=runs,
        position=12,
        rescored=8,
        skipped_budget=4,
        estimate_usd=0.0123,
    )
    with store.write_transaction() as connection:
        upsert_scores(connection, rows)  # type: ignore[arg-type]
        save_job(connection, job)
    store.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("compare-rescore")
    url = f"sqlite:///{workdir / 'tracescore.db'}"
    open_store(url).close()
    _seed(url)
    with start_server(workdir, db_url=url, config={"server": {"api_keys": [API_KEY]}}) as running:
        yield running


def test_the_compare_page_shows_a_rescore_old_against_new(
    server: ServerProcess, context: Any
) -> None:
    page = signed_in_page(context, server.base_url, API_KEY)
    page.goto(f"{server.base_url}/ui/compare")
    assert page.locator('select[name="binding"]').input_value() == "helpfulness"
    assert page.locator('select[name="a"]').input_value() == OLD
    assert page.locator('select[name="b"]').input_value() == NEW
    assert page.locator("#rescore-state").inner_text() == "done"
    assert page.locator("#rescore-sampled").inner_text() == "12"
    assert page.locator("#rescore-rescored").inner_text() == "8"
    assert page.locator("#rescore-skipped").inner_text() == "4 / 0"

    store = open_store(f"sqlite:///{server.workdir / 'tracescore.db'}", create=False)
    try:
        expected = compare_versions(store.engine, "helpfulness", OLD, NEW)
    finally:
        store.close()
    assert int(page.locator("#n-paired").inner_text()) == expected.n_paired == 8
    assert page.locator("#mean-difference").inner_text() == f"{expected.mean_difference:+.4f}"
    rows = page.locator("#disagreement-table tbody tr")
    gaps = [abs(float(v)) for v in rows.locator("td.diff").all_inner_texts()]
    assert len(gaps) == 8 and gaps == sorted(gaps, reverse=True)
    links = rows.locator("a.trace-link")
    href = links.first.get_attribute("href") or ""
    assert href.startswith("/ui/traces/") and "#score-" in href

    # The judge's reason is shown as text, never run as markup.
    assert HOSTILE in page.locator("#disagreement-table").inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#disagreement-table img").count() == 0
    assert layout_problems(page) == []
    shot(page, "compare-rescore")

    # Asking for the other binding compares its own two versions, without the re-score card.
    page.goto(f"{server.base_url}/ui/compare?binding=other")
    assert page.locator('select[name="b"]').input_value() == "2"
    assert page.locator("#rescore").count() == 0
