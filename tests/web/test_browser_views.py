"""The dashboard's regression views in headless Chromium, on the demo's traffic, shortened.

``tracescore demo`` with its regression rule for two minutes is the scenario the dashboard must
answer ("what regressed, for which agent, since when"): weather-bot's answers degrade, an alert
fires. Here the same traces (the demo's own :class:`DemoSender`, seeded, so what is sent is the
same on every run) go to a real ``tracescore serve`` with the default scorers, for 12 s before
the drop and 12 s after, and the demo's rule runs on shorter windows (the last 8 s against the
minute before, evaluated every second: the baseline outlasts the degraded traffic, so the alert
is still firing when the traffic stops; in the two-minute demo the degraded answers fill part of
the 2-minute baseline and the alert may resolve and fire again, which tests/web/test_web_pages.py
checks on the rendered pages), with a stricter test (p < 0.001, a drop of 0.2 at least): evaluated every second, a rule makes
many tests, and the other agents must not fire by chance.
Times are real: scores are stamped when scored.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from sqlalchemy import create_engine, select
from typer.testing import CliRunner

from tests.support.browser_support import layout_problems, shot
from tests.support.server_process import ServerProcess, login_session, start_server, wait_for
from tracescore.cli import app
from tracescore.offline.demo import DEGRADING_AGENT, DemoSender
from tracescore.store.alerts import AlertStateRow
from tracescore.store.dialect import as_utc
from tracescore.store.scores import SCORES
from tracescore.web.auth import COOKIE_NAME

pytestmark = pytest.mark.browser

API_KEY = "views-test-key"
HEADERS_VARIABLE = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
AUTHORIZATION = {"Authorization": f"Bearer {API_KEY}"}
RULE = "answers-regressed"
RATE = 10.0
"""Traces per second: about 3 per agent, so an 8 s window holds 20 or more of weather-bot's."""
BEFORE, AFTER = 120, 120
"""Traces sent before and after weather-bot starts answering badly (12 s each at RATE)."""
CONFIG = {
    "server": {"api_keys": [API_KEY]},
    "workers": {"poll_interval": 0.05},
    "alerts": {
        "rules": [
            {
                "name": RULE,
                "type": "regression",
                "binding": "keyword-coverage",
                "segment_by": ["agent"],
                "window": "8s",
                "baseline": "1m",
                "min_samples": 10,
                "min_baseline_samples": 10,
                "alpha": 0.001,
                "min_delta": 0.2,
            }
        ],
        "channels": [{"name": "log", "type": "log"}],
    },
    "monitor": {"evaluation_interval": "1s"},
}


def _rows(db_url: str, table: Any) -> list[dict[str, Any]]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            return [dict(row._mapping) for row in connection.execute(select(table))]
    finally:
        engine.dispose()


def _send_demo_traffic(base_url: str) -> datetime:
    """The demo's traces at :data:`RATE`, degrading after :data:`BEFORE`; returns the drop time."""
    # The exporters take their headers from the standard variable, as an instrumented app's do.
    previous = os.environ.get(HEADERS_VARIABLE)
    os.environ[HEADERS_VARIABLE] = f"Authorization=Bearer%20{API_KEY}"
    try:
        sender = DemoSender(base_url, seed=26, drop_after=float("inf"))
    finally:
        if previous is None:
            del os.environ[HEADERS_VARIABLE]
        else:
            os.environ[HEADERS_VARIABLE] = previous
    dropped = datetime.now(UTC)
    try:
        next_at = time.monotonic()
        for index in range(BEFORE + AFTER):
            if index == BEFORE:
                sender.drop_after, dropped = 0.0, datetime.now(UTC)
            sender.send_one()
            next_at += 1 / RATE
            time.sleep(max(0.0, next_at - time.monotonic()))
    finally:
        sender.shutdown()  # flushes the exporters
    return dropped


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, datetime]]:
    workdir = tmp_path_factory.mktemp("views")
    with start_server(workdir, config=CONFIG, idle_timeout=0.3) as server:
        dropped = _send_demo_traffic(server.base_url)

        with httpx.Client(base_url=server.base_url, headers=AUTHORIZATION) as client:

            def all_scored() -> bool:
                answer = client.get("/api/traces", params={"limit": 1000}).json()["traces"]
                return len(answer) == BEFORE + AFTER and all(
                    t["state"] in ("scored", "failed") for t in answer
                )

            wait_for(all_scored, 60, "every demo trace scored")
        wait_for(
            lambda: any(
                s["rule"] == RULE and s["state"] == "firing"
                for s in _rows(server.db_url, AlertStateRow.__table__)
            ),
            30,
            "the regression alert firing",
        )
        yield server, dropped


@pytest.fixture
def page(context: Any, demo: tuple[ServerProcess, datetime]) -> Any:
    """A page signed in the way the login form signs in: with the session cookie."""
    server, _ = demo
    context.add_cookies(
        [
            {
                "name": COOKIE_NAME,
                "value": login_session(server.base_url, API_KEY),
                "url": server.base_url,
            }
        ]
    )
    return context.new_page()


def _chart(page: Any, binding: str) -> Any:
    return page.locator(f'article[data-binding="{binding}"] svg.chart')


def _largest_label(page: Any) -> float:
    """The height in pixels of the tallest text label in the charts as laid out."""
    return page.evaluate(
        "Math.max(...Array.from(document.querySelectorAll('svg.chart text.tick'),"
        " t => t.getBoundingClientRect().height))"
    )


def _on_top(link: Any) -> bool:
    """Whether a click on the middle of this point's circle reaches it (another segment's point
    may be drawn over it: the click would go to that one)."""
    return link.locator("circle").evaluate(
        """c => { const r = c.getBoundingClientRect();
                  return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2) === c; }"""
    )


def _points(chart: Any, segment: str) -> list[tuple[datetime, float]]:
    circles = chart.locator(f'g.series[data-segment="{segment}"] circle.point')
    return [
        (datetime.fromisoformat(c.get_attribute("data-start")), float(c.get_attribute("data-mean")))
        for c in circles.all()
    ]


def test_default_overview_shows_the_regression_its_alert_and_its_runs(
    demo: tuple[ServerProcess, datetime], page: Any
) -> None:
    """The issue's "done when", in the browser, step by step as a user clicks through."""
    server, dropped = demo
    scores = [
        r
        for r in _rows(server.db_url, SCORES)
        if r["binding"] == "keyword-coverage" and r["status"] == "ok"
    ]
    page.goto(f"{server.base_url}/")
    # The default range is chosen from the data: 24 s of scores get the 5-minute preset.
    assert page.locator("a.preset.active").inner_text() == "5m"
    assert "range chosen from the data" in page.locator("#range-text").inner_text()
    page.click('nav.splits a:text-is("agent")')
    page.wait_for_url("**/?split=agent")
    chart = _chart(page, "keyword-coverage")
    assert 30 <= int(chart.get_attribute("data-points")) <= 120

    # Weather-bot's line: the bucket means of its scores, falling after the drop.
    points = _points(chart, DEGRADING_AGENT)
    size = 5
    expected: dict[int, list[float]] = {}
    for row in scores:
        if row["agent"] == DEGRADING_AGENT:
            stamp = int(as_utc(row["created_at"]).timestamp()) // size * size
            expected.setdefault(stamp, []).append(row["score"])
    assert {int(start.timestamp()): round(mean, 6) for start, mean in points} == {
        stamp: round(statistics.fmean(values), 6) for stamp, values in expected.items()
    }
    before = [mean for start, mean in points if start + timedelta(seconds=size) <= dropped]
    after = [mean for start, mean in points if start >= dropped + timedelta(seconds=3)]
    # (Means of the points, not each point: a bucket just after the drop may still hold traces
    # sent before it, as scores are stamped when scored.)
    assert before and after and statistics.fmean(after) < statistics.fmean(before) - 0.3, (
        before,
        after,
    )
    others = [_points(chart, name) for name in ("support-bot", "research-agent")]
    assert all(len(line) >= 4 for line in others)  # one line per agent, with a legend entry each
    legend = page.locator('article[data-binding="keyword-coverage"] ul.legend li')
    assert sorted(legend.evaluate_all("els => els.map(e => e.dataset.segment)")) == sorted(
        {r["agent"] for r in scores}
    )
    weather = legend.filter(has_text=DEGRADING_AGENT)
    assert "firing" in weather.inner_text()

    # The alert's band: on this chart, in weather-bot's colour, from when it fired to the end.
    bands = chart.locator(f'g.alert-band[data-rule="{RULE}"]')
    assert bands.count() == 1
    assert bands.get_attribute("data-segment") == f"agent={DEGRADING_AGENT}"
    line_colour = chart.locator(f'g.series[data-segment="{DEGRADING_AGENT}"]').get_attribute(
        "class"
    )
    edge = chart.locator(f'a.band-link:has(rect.alert-edge[data-rule="{RULE}"])')
    edge_colour = edge.locator("rect").get_attribute("class")
    runs_of_firing = parse_qs(urlparse(edge.get_attribute("href")).query)
    assert runs_of_firing["agent"] == [DEGRADING_AGENT]
    assert line_colour.split()[-1] == edge_colour.split()[-1]
    (state,) = [s for s in _rows(server.db_url, AlertStateRow.__table__) if s["state"] == "firing"]
    assert state["segment"] == {"agent": DEGRADING_AGENT}
    fired = datetime.fromtimestamp(state["since"], UTC)
    assert dropped < fired < dropped + timedelta(seconds=45)
    assert bands.get_attribute("data-start") == fired.isoformat()
    band = bands.locator("rect.alert-area").bounding_box()
    low = chart.locator(f'g.series[data-segment="{DEGRADING_AGENT}"] circle.point').last
    assert band["x"] <= low.bounding_box()["x"] <= band["x"] + band["width"]
    # Weather-bot's points from the firing on are filled; no other agent's are.
    alerting = chart.locator("circle.point.alerting")
    assert alerting.count() >= 1
    assert set(alerting.evaluate_all("cs => cs.map(c => c.closest('g').dataset.segment)")) == {
        DEGRADING_AGENT
    }
    for start in alerting.evaluate_all("cs => cs.map(c => c.dataset.start)"):
        assert datetime.fromisoformat(start) + timedelta(seconds=size) > fired
    for name in ("tone", "completeness"):  # other charts carry no band
        assert _chart(page, name).locator("g.alert-band").count() == 0
    shot(page, "views-regression-overview")

    # The alerts page lists the firing, with its notification's outcome and links.
    page.click('header.top a[href="/ui/alerts"]')
    assert page.locator('header.top a[aria-current="page"]').inner_text() == "Alerts"
    row = page.locator(f'article[data-rule="{RULE}"] tr[data-segment="agent={DEGRADING_AGENT}"]')
    assert "firing" in row.locator("td").nth(1).inner_text()
    assert "sent" in row.locator("td.outcome").inner_text()
    history = page.locator("#history tbody tr.event-firing")
    assert history.count() == 1 and DEGRADING_AGENT in history.inner_text()
    assert "sent" in history.locator("td.outcome").inner_text()
    assert page.locator("#rules tr.state-firing").count() == 1  # no other agent fired
    behind = parse_qs(urlparse(row.locator("a.runs-link").get_attribute("href")).query)
    assert behind["binding"] == ["keyword-coverage"] and behind["agent"] == [DEGRADING_AGENT]
    assert datetime.fromisoformat(behind["since"][0].replace("Z", "+00:00")) < fired
    page.locator("#live-status.ok").wait_for(timeout=5000)  # the page keeps itself current
    shot(page, "views-alerts")
    row.locator("a.chart-link").click()
    page.wait_for_url("**split=agent**")
    assert page.locator("article.chart-card").count() == 1  # focused on the rule's chart
    assert _chart(page, "keyword-coverage").locator("g.alert-band").count() == 1

    # Clicking one of weather-bot's points in the band lists that bucket's runs, lowest first.
    # (A point another agent's point happens to cover is skipped: the click would go to that.)
    chart = _chart(page, "keyword-coverage")
    area = chart.locator("g.alert-band rect.alert-area").bounding_box()
    candidates = chart.locator(f'g.series[data-segment="{DEGRADING_AGENT}"] a.point-link').all()
    point = next(
        link
        for link in reversed(candidates)
        if area["x"] <= link.bounding_box()["x"] and _on_top(link)
    )
    start = datetime.fromisoformat(point.locator("circle").get_attribute("data-start"))
    point.click()
    page.wait_for_url("**/ui/runs?**")
    query = parse_qs(urlparse(page.url).query)
    assert query["binding"] == ["keyword-coverage"] and query["agent"] == [DEGRADING_AGENT]
    # The bucket is this chart's (the alerts page's chart link narrows the range, and with it
    # the bucket, which may then be smaller than the overview's 5 s): the one the link names.
    since, until = (
        datetime.fromisoformat(query[key][0].replace("Z", "+00:00")) for key in ("since", "until")
    )
    assert since == start
    in_bucket = [
        r
        for r in scores
        if r["agent"] == DEGRADING_AGENT and since <= as_utc(r["created_at"]) < until
    ]
    listed = page.locator("#runs-table tbody tr[data-row]")
    assert listed.count() == len(in_bucket) > 0
    values = [float(v) for v in listed.locator(".score").all_inner_texts()]
    assert values == sorted(values) == sorted(round(r["score"], 3) for r in in_bucket)
    assert set(listed.locator("td:nth-child(3)").all_inner_texts()) == {DEGRADING_AGENT}
    shot(page, "views-runs")
    listed.first.locator("a.trace-link").click()
    page.wait_for_url("**/ui/traces/**")
    assert DEGRADING_AGENT in page.locator(".run header h2").first.inner_text()


def test_clicking_a_bucket_column_lists_all_its_runs(
    demo: tuple[ServerProcess, datetime], page: Any
) -> None:
    """Unsplit, the whole column of a bucket is the link (clicked at its foot, below the
    points): every run of the binding in that bucket, whatever the agent."""
    server, _ = demo
    page.goto(f"{server.base_url}/?binding=tone")
    column = _chart(page, "tone").locator("a.bucket-link rect.hit").nth(-2)  # a whole bucket
    start = datetime.fromisoformat(column.get_attribute("data-start"))
    box = column.bounding_box()
    column.click(position={"x": box["width"] / 2, "y": box["height"] - 2})
    page.wait_for_url("**/ui/runs?**")
    query = parse_qs(urlparse(page.url).query)
    assert query["binding"] == ["tone"] and "agent" not in query
    size = timedelta(seconds=5)
    in_bucket = [
        r
        for r in _rows(server.db_url, SCORES)
        if r["binding"] == "tone" and start <= as_utc(r["created_at"]) < start + size
    ]
    assert int(page.locator("#runs-total").inner_text()) == len(in_bucket) > 0
    listed = page.locator("#runs-table tbody tr[data-row]")
    assert sorted(listed.evaluate_all("rows => rows.map(r => r.dataset.row)")) == sorted(
        r["id"] for r in in_bucket
    )
    assert len({r["agent"] for r in in_bucket}) > 1  # all agents' runs, not one segment's
    page.click("#runs-range a")  # back to the chart around it
    page.wait_for_url("**binding=tone**")
    assert _chart(page, "tone").locator(f'rect.hit[data-start="{start.isoformat()}"]').count() == 1


def test_presets_and_a_custom_range_are_kept_in_the_url(
    demo: tuple[ServerProcess, datetime], page: Any
) -> None:
    server, _ = demo
    page.goto(f"{server.base_url}/?split=agent&binding=keyword-coverage")
    expected = {"5m": 60, "15m": 90, "1h": 120, "6h": 72, "24h": 96, "7d": 84}
    for name, points in expected.items():
        page.click(f'nav.presets a:text-is("{name}")')
        page.wait_for_url(f"**window={name}**")
        assert "split=agent" in page.url and "binding=keyword-coverage" in page.url
        assert page.locator("a.preset.active").inner_text() == name
        assert int(_chart(page, "keyword-coverage").get_attribute("data-points")) == points
    # A custom range of 90 s, typed in the form: kept in the URL, drawn at 1 point per second.
    now = datetime.now(UTC).replace(microsecond=0)
    since, until = now - timedelta(seconds=90), now
    page.fill('form.custom input[name="since"]', since.strftime("%Y-%m-%dT%H:%M:%S"))
    page.fill('form.custom input[name="until"]', until.strftime("%Y-%m-%dT%H:%M:%S"))
    page.click('form.custom button[type="submit"]')
    page.wait_for_url("**since=**")
    query = parse_qs(urlparse(page.url).query)
    assert query["split"] == ["agent"] and query["binding"] == ["keyword-coverage"]
    assert query["since"][0].startswith(since.strftime("%Y-%m-%dT%H:%M"))
    assert page.locator("a.preset.active").count() == 0
    assert int(_chart(page, "keyword-coverage").get_attribute("data-points")) == 90
    assert "one point per 1s" in page.locator("#range-text").inner_text()
    # The shared URL gives the same view in a fresh page.
    again = page.context.new_page()
    again.goto(page.url)
    assert again.locator("#range-text").inner_text() == page.locator("#range-text").inner_text()


def test_overview_layout_has_no_overlaps_or_cut_text(
    demo: tuple[ServerProcess, datetime], page: Any
) -> None:
    """Each page is loaded once and measured at 1400 and 800 px wide: a resize lays the page
    out again as a load at that width would (the stylesheet's media queries included)."""
    server, _ = demo
    now = datetime.now(UTC)
    runs = f"/ui/runs?binding=keyword-coverage&since={(now - timedelta(minutes=5)).isoformat()}"
    for path, name in (
        ("/?split=agent", "split"),
        ("/", "default"),
        ("/ui/alerts", "alerts"),
        (runs.replace("+", "%2B"), "runs"),
    ):
        page.goto(f"{server.base_url}{path}")
        for width in (1400, 800):
            page.set_viewport_size({"width": width, "height": 1000})
            shot(page, f"views-{name}-{width}")
            problems = layout_problems(page)
            assert problems == [], (path, width, problems)
            if name == "split":  # readable charts: side by side or one per row
                chart = _chart(page, "keyword-coverage").bounding_box()
                assert chart["width"] >= min(460, width - 80) and chart["height"] > 150
                assert _largest_label(page) <= 18  # chart text at about the page's size
    page.goto(f"{server.base_url}/?split=agent&binding=keyword-coverage")  # one chart alone
    assert _largest_label(page) <= 18
    # The check sees what it is for: a card pulled over the next one, a title running out of
    # its card (set through the CSSOM, which the pages' CSP allows, unlike inline styles).
    page.evaluate("document.getElementById('range').style.marginBottom = '-80px'")
    page.evaluate("document.querySelector('.chart-card h3').style.minWidth = '2000px'")
    found = layout_problems(page)
    assert any(p.startswith("section#range.controls.card overlaps section#trends") for p in found)
    assert any(" sticks out of " in p for p in found), found


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The captured traces scored by two versions of one binding (``tracescore rescore`` twice,
    the second with a changed formula), served by the real app over HTTP."""
    from tests.support.live_app import serve_app
    from tests.support.paths import CAPTURES
    from tracescore.config import parse_config
    from tracescore.ingest.files import load_traces
    from tracescore.service import create_app
    from tracescore.store import open_store

    workdir = tmp_path_factory.mktemp("compare")
    url = f"sqlite:///{workdir / 'tracescore.db'}"
    store = open_store(url)
    for trace in load_traces([CAPTURES]):
        store.write(trace.spans, trace.logs)
    for version, per_char in (("1", 0.005), ("2", 0.02)):
        config = workdir / f"v{version}.yaml"
        config.write_text(
            f"scorers: [{{name: length, scorer: 'tests.support.custom_scorers:answer_length', "
            f"threshold: 0.5, options: {{version: '{version}', per_char: {per_char}}}}}]\n"
            f"server: {{api_keys: [{API_KEY}]}}\n"
        )
        # The command as typed, run in a thread of its own (it runs an event loop, and
        # Playwright's owns this thread): in process, it skips a second interpreter's start.
        with ThreadPoolExecutor(1) as thread:
            result = thread.submit(
                CliRunner().invoke, app, ["rescore", "--db", url, "--config", str(config)]
            ).result(timeout=120)
        assert result.exit_code == 0, result.output
    served = create_app(parse_config(config.read_text()), store)
    try:
        with serve_app(served) as base_url:
            yield base_url, url
    finally:
        store.close()


def test_version_comparison_shows_agreement_and_the_largest_disagreements(
    versions: tuple[str, str], context: Any
) -> None:
    from tracescore.offline.compare import compare_versions
    from tracescore.store import open_store

    base_url, url = versions
    context.add_cookies(
        [{"name": COOKIE_NAME, "value": login_session(base_url, API_KEY), "url": base_url}]
    )
    page = context.new_page()
    page.goto(f"{base_url}/")
    page.click('header.top a[href="/ui/compare"]')
    # The binding's two versions are offered and compared without being asked (older as A).
    assert page.locator('select[name="a"]').input_value() == "1"
    assert page.locator('select[name="b"]').input_value() == "2"
    store = open_store(url)
    try:
        expected = compare_versions(store.engine, "length", "1", "2")
        with_threshold = compare_versions(store.engine, "length", "1", "2", 0.9)
    finally:
        store.close()
    assert int(page.locator("#n-paired").inner_text()) == expected.n_paired > 25
    assert page.locator("#mean-difference").inner_text() == f"{expected.mean_difference:+.4f}"
    assert page.locator("#pearson").inner_text() == f"{expected.pearson:.4f}"
    assert (
        page.locator("#label-agreement")
        .inner_text()
        .startswith(f"{expected.label_agreement * 100:.1f}%")
    )
    # The runs they disagree on most, largest first, each linking to its trace.
    rows = page.locator("#disagreement-table tbody tr")
    gaps = [abs(float(v)) for v in rows.locator("td.diff").all_inner_texts()]
    assert len(gaps) == 25 and gaps == sorted(gaps, reverse=True)
    shot(page, "views-compare")
    # Submitted as it is (no threshold typed): the same comparison, now in the URL.
    page.click('form.compare-form button[type="submit"]')
    page.wait_for_url("**a=1&b=2**")
    assert int(page.locator("#n-paired").inner_text()) == expected.n_paired
    # A threshold relabels both sides, as `tracescore compare --threshold` does.
    page.fill('input[name="threshold"]', "0.9")
    page.click('form.compare-form button[type="submit"]')
    page.wait_for_url("**threshold=0.9**")
    assert (
        page.locator("#label-agreement")
        .inner_text()
        .startswith(f"{with_threshold.label_agreement * 100:.1f}%")
    )
    page.set_viewport_size({"width": 800, "height": 1000})
    assert layout_problems(page) == []
    shot(page, "views-compare-800")
    rows.first.locator("a.trace-link").click()
    page.wait_for_url("**/ui/traces/**")
    assert page.locator(".score-card").count() >= 2  # both versions' scores of the run


def test_a_split_shows_the_five_largest_segments_and_the_rest_as_other(
    versions: tuple[str, str], context: Any
) -> None:
    """The captures hold more agents than a chart draws lines for: the top five by runs get
    a line each, the rest one grey "other" line, whose points link to the whole bucket."""
    from tracescore.web.trends import TOP_SEGMENTS

    base_url, url = versions
    context.add_cookies(
        [{"name": COOKIE_NAME, "value": login_session(base_url, API_KEY), "url": base_url}]
    )
    page = context.new_page()
    page.goto(f"{base_url}/?split=agent&window=1h")
    rows = [r for r in _rows(url, SCORES) if r["scorer_version"] == "2"]
    runs: dict[str, int] = {}
    for row in rows:
        runs[row["agent"] or "(none)"] = runs.get(row["agent"] or "(none)", 0) + 1
    assert len(runs) > TOP_SEGMENTS
    legend = page.locator('article[data-binding="length"] ul.legend li')
    names = legend.evaluate_all("els => els.map(e => e.dataset.segment)")
    assert names[-1] == f"other ({len(runs) - TOP_SEGMENTS})" and len(names) == TOP_SEGMENTS + 1
    assert min(runs[name] for name in names[:-1]) >= max(
        count for name, count in runs.items() if name not in names
    )
    chart = _chart(page, "length")
    keys = legend.locator("span.key").evaluate_all("els => els.map(e => e.className)")
    lines = chart.locator("g.series").evaluate_all("els => els.map(e => e.getAttribute('class'))")
    assert [k.split()[-1] for k in keys] == [c.split()[-1] for c in lines]  # legend = lines
    assert lines[-1] == "series other" and len(set(lines)) == len(lines)
    shot(page, "views-split-other")
    assert _largest_label(page) <= 18  # a lone chart is not stretched across the page
    next(
        link for link in chart.locator("g.series.other a.point-link").all() if _on_top(link)
    ).click()
    page.wait_for_url("**/ui/runs?**")
    assert "agent" not in parse_qs(urlparse(page.url).query)


def test_the_unsplit_chart_shows_the_alerting_agents_line_in_its_own_colour(
    demo: tuple[ServerProcess, datetime], page: Any
) -> None:
    """While the alert fires, the unsplit chart (the default view) draws weather-bot's line over
    the overall one: the overall mean hid the drop the banner announced. The line has
    weather-bot's colour, which is the same at every range and on the split chart (it
    followed weather-bot's rank by run count)."""
    from tracescore.web.overview import segment_colour

    server, dropped = demo
    colour = f"s{segment_colour(DEGRADING_AGENT)}"
    page.goto(f"{server.base_url}/?window=5m")
    chart = _chart(page, "keyword-coverage")
    line = chart.locator(f'g.series[data-segment="agent={DEGRADING_AGENT}"]')
    assert line.count() == 1 and colour in line.get_attribute("class").split()
    alerting = line.locator("circle.point.alerting")
    assert alerting.count() >= 1
    after = [
        mean
        for start, mean in _points(chart, f"agent={DEGRADING_AGENT}")
        if start >= dropped + timedelta(seconds=2)
    ]
    before = [
        mean
        for start, mean in _points(chart, f"agent={DEGRADING_AGENT}")
        if start < dropped - timedelta(seconds=2)
    ]
    assert after and before and max(after) < min(before)  # the drop is there to see
    legend = page.locator('article[data-binding="keyword-coverage"] .alerting-line')
    assert DEGRADING_AGENT in legend.inner_text() and "firing" in legend.inner_text()
    shot(page, "views-unsplit-alerting-line")
    for window in ("5m", "15m", "1h"):
        page.goto(f"{server.base_url}/?window={window}&split=agent")
        split_line = _chart(page, "keyword-coverage").locator(
            f'g.series[data-segment="{DEGRADING_AGENT}"]'
        )
        assert colour in split_line.get_attribute("class").split(), window


def test_a_firing_alert_whose_traffic_stopped_is_marked_stale(
    demo: tuple[ServerProcess, datetime], page: Any
) -> None:
    """The demo's traffic has stopped; weather-bot's alert still fires on scores older than the
    rule's 8 s window. Both the banner and the alerts page say so, with the last score's time."""
    server, _ = demo
    newest = max(
        as_utc(row["created_at"])
        for row in _rows(server.db_url, SCORES)
        if row["agent"] == DEGRADING_AGENT and row["binding"] == "keyword-coverage"
    )
    time.sleep(max(0.0, (newest + timedelta(seconds=9) - datetime.now(UTC)).total_seconds()))
    page.goto(f"{server.base_url}/?window=5m")
    banner = page.locator("#alerts li", has_text=RULE)
    assert f"stale: no scores since {newest:%Y-%m-%d %H:%M:%S} UTC" in banner.inner_text()
    page.goto(f"{server.base_url}/ui/alerts")
    row = page.locator(f'tr.state-firing[data-segment="agent={DEGRADING_AGENT}"]')
    assert "stale" in row.inner_text() and f"{newest:%H:%M:%S}" in row.inner_text()
    shot(page, "views-alerts-stale")


def test_a_firing_alert_is_silenced_and_acknowledged_from_the_alerts_page(
    demo: tuple[ServerProcess, datetime], page: Any
) -> None:
    """The form under the firing row silences weather-bot's segment for 4 h with a note; the row
    then shows who silenced it, until when, and the note; the REST API lists the same silence.
    An acknowledgement of the whole rule shows on the row too; both end with their buttons."""
    server, _ = demo
    api = f"{server.base_url}/api/v1/alerts/silences"
    page.goto(f"{server.base_url}/ui/alerts")
    row = page.locator(f'article[data-rule="{RULE}"] tr[data-silencing="agent={DEGRADING_AGENT}"]')
    assert row.locator(".chip").count() == 0
    row.locator("details.silence-form summary").click()
    form = row.locator("details.silence-form form")
    form.locator('select[name="duration"]').select_option("4h")
    form.locator('input[name="note"]').fill("prompt rollback under way")
    form.locator('input[name="author"]').fill("ana")
    before = datetime.now(UTC)
    form.locator('button[type="submit"]').click()
    page.wait_for_url(f"{server.base_url}/ui/alerts")
    (stored,) = httpx.get(api, headers=AUTHORIZATION).json()["items"]
    assert stored["rule"] == RULE and stored["segment"] == {"agent": DEGRADING_AGENT}
    assert stored["kind"] == "silence" and stored["author"] == "ana"
    expires = datetime.fromisoformat(stored["expires_at"])
    assert before + timedelta(hours=4) - timedelta(seconds=1) <= expires
    assert expires <= datetime.now(UTC) + timedelta(hours=4)
    held = row.locator("div.silence")
    assert "silenced" in held.inner_text() and "by ana" in held.inner_text()
    assert f"until {expires:%Y-%m-%d %H:%M:%S} UTC" in held.inner_text()
    assert held.locator(".note").inner_text() == "prompt rollback under way"

    row.locator("details.silence-form summary").click()
    form.locator('input[name="kind"][value="ack"]').check()
    form.locator('select[name="scope"]').select_option("rule")
    form.locator('input[name="author"]').fill("ben")
    form.locator('button[type="submit"]').click()
    page.wait_for_url(f"{server.base_url}/ui/alerts")
    acked = row.locator("div.ack")
    assert "acknowledged" in acked.inner_text() and "by ben" in acked.inner_text()
    assert "(every segment)" in acked.inner_text()
    kinds = {item["kind"]: item for item in httpx.get(api, headers=AUTHORIZATION).json()["items"]}
    assert kinds["ack"]["segment"] is None and kinds["ack"]["author"] == "ben"
    shot(page, "views-alerts-silenced")
    row.locator("details.silence-form summary").click()
    page.set_viewport_size({"width": 800, "height": 1000})
    shot(page, "views-alerts-silenced-800")
    assert layout_problems(page) == []  # the silence column and an open form fit a narrow window

    # A bad form answers with the page and the reason (here a duration the form does not offer).
    answer = page.request.post(
        f"{server.base_url}/ui/alerts/silences", form={"rule": RULE, "duration": "forever"}
    )
    assert answer.status == 422 and "Not silenced: duration" in answer.text()

    for kind in ("silence", "ack"):
        row.locator(f"button:has-text('End {kind}')").click()
        page.wait_for_url(f"{server.base_url}/ui/alerts")
    assert row.locator(".chip").count() == 0
    assert httpx.get(api, headers=AUTHORIZATION).json()["items"] == []
