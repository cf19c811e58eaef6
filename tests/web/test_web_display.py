"""What the dashboard's pages show, issues 34 and 50: badges coloured by what a score means
(pass or fail against its binding's pass threshold, grey without one), no "0 ms" on code
scorers' cards, a reason on every code score, times in 24-hour UTC. On the stores of
tests/web/test_web_pages.py: real captures scored by the real worker (code scorers and a judge).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from tests.support.scored_dashboard import stored_scores
from tests.support.web_traces import visible_text


def test_score_badges_are_coloured_by_their_pass_threshold(
    client: TestClient, store: object
) -> None:
    """tone states what a good run scores (0.5) and answer-present's binding gives 0.5: their
    badges are green at or above it and red below it; a score no threshold gives a meaning
    (the exploding scorer's errors aside, faithfulness's judge states 0.8) is never coloured
    by an arbitrary cut."""
    page = client.get("/", params={"window": "15m"}).text
    rows = re.findall(
        r'<tr data-row="([0-9a-f]+)">\s*<td><a class="score-link"[^>]*><span class="score ?([^"]*)">([0-9.]+)</span>',
        page,
    )
    assert rows
    stored = {r.id: r for r in stored_scores(store)}  # type: ignore[arg-type]
    for row_id, colour, _shown in rows:
        row = stored[row_id]
        if row.binding == "tone":
            assert colour == ("pass" if row.score >= 0.5 else "fail"), (row.score, colour)
        if row.binding == "faithfulness":
            assert colour == ("pass" if row.score >= 0.8 else "fail"), (row.score, colour)
    assert {"pass", "fail"} <= {colour for _, colour, _ in rows}
    from tracescore.web.rendering import verdict

    assert (verdict("pass"), verdict("ok"), verdict("fail"), verdict("non_answer")) == (
        "pass",
        "pass",
        "fail",
        "fail",
    )
    assert verdict(None) == ""


def test_the_custom_range_is_typed_in_24_hour_utc(client: TestClient) -> None:
    """A datetime-local input showed the range in the browser's locale: 12-hour local time
    in en-US, where the docs and every other time on the page say 24-hour UTC."""
    page = client.get(
        "/", params={"since": "2026-05-04T13:05:00Z", "until": "2026-05-04T15:00:00Z"}
    )
    assert page.status_code == 200
    assert 'type="datetime-local"' not in page.text
    assert 'name="since" required size="19"' in page.text
    assert 'value="2026-05-04 13:05:00"' in page.text and 'value="2026-05-04 15:00:00"' in page.text
    typed = client.get("/", params={"since": "2026-05-04 13:05:00", "until": "2026-05-04 15:00"})
    assert typed.status_code == 200 and 'value="2026-05-04 13:05:00"' in typed.text


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


def test_every_code_score_shows_its_reason(client: TestClient) -> None:
    """The code scorers gave no reason (a column of empty cells, or "keyword-coverage 0.000"
    with nothing to say why): tone's scores now each say how much its sentiment varies. A
    judge's reason shows as before."""
    code_only = client.get("/", params={"window": "15m", "binding": "tone"}).text
    table = re.search(r'<table class="scores" id="lowest-table">(.*?)</table>', code_only, re.S)
    assert table and "<tr data-row=" in table.group(1)
    assert "<th>Reason</th>" in table.group(1)
    reasons = re.findall(r'<td class="reason">([^<]*)</td>', table.group(1))
    assert reasons and all("sentiment" in reason for reason in reasons), reasons
    since = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    judged = client.get("/ui/runs", params={"since": since, "binding": "faithfulness"}).text
    assert "<th>Reason</th>" in judged and "One of two claims is backed" in visible_text(judged)
