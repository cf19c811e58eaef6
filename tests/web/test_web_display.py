"""What the dashboard's pages show, issue 34: badges coloured by score, no "0 ms" on code
scorers' cards, no Reason column where nothing has a reason. On the stores of
tests/web/test_web_pages.py: real captures scored by the real worker (code scorers and a judge).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from tests.support.scored_dashboard import stored_scores
from tests.support.web_traces import visible_text


def test_score_badges_are_coloured_by_how_good_the_score_is(client: TestClient) -> None:
    page = client.get("/", params={"window": "15m"}).text
    badges = re.findall(r'<span class="score ([^"]*)">([0-9.]+)</span>', page)
    assert {"0.000", "1.000"} <= {shown for _, shown in badges}
    tones = {shown: tone for tone, shown in badges if tone not in ("pass", "fail")}
    assert tones["0.000"] == "low" and tones["1.000"] == "high"
    from tracescore.web.rendering import score_tone

    assert all(score_tone(float(shown)) == tone for shown, tone in tones.items())
    assert score_tone(0.0) == "low" and score_tone(0.987) == "high" and score_tone(0.6) == "mid"
    assert score_tone(7.0) == "" and score_tone(None) == ""


def test_code_scorer_cards_say_nothing_meaningless_about_time(
    client: TestClient, store: object
) -> None:
    rows = [r for r in stored_scores(store) if r.binding == "tone" and r.status == "ok"]  # type: ignore[arg-type]
    assert rows
    page = client.get(f"/ui/traces/{rows[0].trace_id}").text
    card = re.search(
        rf'<article class="score-card" id="score-{rows[0].id}">(.*?)</article>', page, re.S
    )
    assert card
    text = visible_text(card.group(1))
    assert " 0 ms" not in text and "0.0 ms" not in text
    from tracescore.web.rendering import elapsed

    assert elapsed(0.0) == "" and elapsed(0.3) == "under 1 ms" and elapsed(2.25) == "2.2 ms"
    assert elapsed(1234) == "1234 ms"


def test_the_reason_column_is_left_out_when_no_row_has_a_reason(client: TestClient) -> None:
    """The tone scorer gives no reason: its lowest scores have no Reason column, whose cells
    were all empty. Where some row has one (a judge's, a not-scorable run's), it stays."""
    code_only = client.get("/", params={"window": "15m", "binding": "tone"}).text
    table = re.search(r'<table class="scores" id="lowest-table">(.*?)</table>', code_only, re.S)
    assert table and "<tr data-row=" in table.group(1)
    assert "<th>Reason</th>" not in table.group(1) and 'class="reason"' not in table.group(1)
    since = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    judged = client.get("/ui/runs", params={"since": since, "binding": "faithfulness"}).text
    assert "<th>Reason</th>" in judged and "One of two claims is backed" in visible_text(judged)
