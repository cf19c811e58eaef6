"""The dashboard's pages over a real store holding really scored captures (FastAPI TestClient).

The store is seeded once per module: every capture under ``tests/fixtures/captures`` plus a
hostile agent trace (HTML and script in its prompt, messages, tool result and agent name),
scored by the real worker with code scorers, a custom scorer with reasons, and faithfulness
through the scripted judge server (so judge claims, verdicts and cost are real rows).
"""

from __future__ import annotations

import asyncio
import html
import re
import time
from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient

from tests.support.databases import fresh_pg_database
from tests.support.judge_server import JudgeServer
from tests.support.paths import CAPTURES
from tests.support.score_rows import ScoreView
from tests.support.scored_dashboard import (
    CLAIMS,
    FAR_FUTURE,
    HOSTILE_TRACE,
    dashboard_config,
    seed_scored_store,
    stored_scores,
)
from tests.support.web_traces import (
    HOSTILE_AGENT,
    HOSTILE_ANSWER,
    HOSTILE_SYSTEM,
    HOSTILE_USER,
    agent_trace_json,
    visible_text,
)
from tracescore.config import parse_config
from tracescore.ingest.files import load_traces
from tracescore.ingest.unpack import drain
from tracescore.pipeline.scoring_task import build_worker
from tracescore.service import create_app
from tracescore.store.dialect import as_utc
from tracescore.web.auth import COOKIE_NAME
from tracescore.web.live import VERSION_TTL
from tracescore.web.runs import RUNS_LIMIT


def chart_card(page: str, binding: str) -> str:
    match = re.search(
        rf'<article class="card chart-card" data-binding="{re.escape(binding)}"[^>]*>(.*?)</article>',
        page,
        re.S,
    )
    assert match, f"no chart for {binding}"
    return match.group(1)


def lowest_rows(page: str) -> list[str]:
    table = re.search(r'<table class="scores" id="lowest-table">(.*?)</table>', page, re.S)
    assert table
    return re.findall(r"<tr data-row=.*?</tr>", table.group(1), re.S)


def _expected_points(rows: list[ScoreView], binding: str, bucket: int) -> int:
    stamps = {
        int(as_utc(r.created_at).timestamp()) // bucket
        for r in rows
        if r.binding == binding and r.status == "ok"
    }
    return len(stamps)


def test_overview_has_one_chart_per_binding_with_a_point_per_scored_bucket(
    client: TestClient, store: Any
) -> None:
    page = client.get("/", params={"window": "15m", "bucket": "1s"})
    assert page.status_code == 200
    assert page.headers["content-security-policy"].startswith(
        "default-src 'none'; script-src 'self'"
    )
    rows = stored_scores(store)
    for binding in ("answer-present", "tone", "faithfulness"):
        card = chart_card(page.text, binding)
        ok = [r for r in rows if r.binding == binding and r.status == "ok"]
        assert ok, binding
        assert card.count('class="point"') == _expected_points(rows, binding, 1)
        samples = re.search(r'<dd class="samples">(\d+)</dd>', card)
        assert samples and int(samples.group(1)) == len(ok)
    # A scorer that always fails: no points, a 100 % error rate and its runs drawn in red.
    failing = chart_card(page.text, "exploding")
    errors = [r for r in rows if r.binding == "exploding"]
    assert errors and all(r.status == "error" for r in errors)
    assert failing.count('class="point"') == 0 and "no scores in this range" in failing
    assert '<dd class="bad">100.0%</dd>' in failing and 'class="errors"' in failing
    # Judge spend per day is drawn from the faithfulness rows' real token costs.
    spent = sum(r.cost_usd for r in rows if r.judge_model)
    assert spent > 0
    assert f"${spent:.4f} over the last 14 days" in page.text
    assert page.text.count('class="bar"') == 1  # everything was judged today


def test_lowest_scores_are_ascending_and_filterable(client: TestClient, store: Any) -> None:
    page = client.get("/", params={"window": "1h"}).text
    values = [
        float(v)
        for v in re.findall(
            r'<span class="score[^"]*">([0-9.]+)</span>', "".join(lowest_rows(page))
        )
    ]
    assert values and values == sorted(values)
    assert values[0] == min(r.score for r in stored_scores(store) if r.status == "ok")

    narrowed = client.get(
        "/", params={"window": "1h", "scorer": "answer-present", "agent": "WeatherBot"}
    ).text
    rows = lowest_rows(narrowed)
    expected = [
        r
        for r in stored_scores(store)
        if r.scorer_id == "answer-present" and r.agent == "WeatherBot"
    ]
    assert len(rows) == min(len(expected), 25) > 0
    assert all("answer-present" in row and ">WeatherBot<" in row for row in rows)
    assert '<option value="WeatherBot" selected>' in narrowed
    assert "answer of " in visible_text("".join(rows))  # the reasons are listed
    # A filter value with no scores in the window still shows as selected, over an empty list.
    nothing = client.get("/", params={"window": "1h", "agent": "<b>nobody</b>"}).text
    assert '<option value="&lt;b&gt;nobody&lt;/b&gt;" selected>' in nothing
    assert "No scores match." in nothing


def test_trace_page_shows_the_rebuilt_run_beside_its_scores(client: TestClient, store: Any) -> None:
    capture = next(
        t for t in load_traces([CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"])
    )
    response = client.get(f"/ui/traces/{capture.trace_id}")
    assert response.status_code == 200
    text = visible_text(response.text)
    assert "You are WeatherBot, a concise weather assistant." in text  # system prompt
    assert "What's the weather like in Paris today?" in text  # conversation
    assert "get_weather" in text and '"city": "Paris"' in text  # tool call arguments
    assert '"temperature_c": 21' in text  # tool result
    assert "It is sunny in Paris today" in text  # final answer
    rows = [r for r in stored_scores(store) if r.trace_id == capture.trace_id]
    assert rows and all(f'id="score-{r.id}"' in response.text for r in rows)
    faithfulness = next(r for r in rows if r.binding == "faithfulness")
    # Judge claims and verdicts from the step results, and the judge's reason.
    assert all(claim in text for claim in CLAIMS)
    assert "no temperature in the context" in text and "the tool said sunny" in text
    assert faithfulness.reason and faithfulness.reason in text
    assert "scorer exploded on purpose" in text  # a failed scorer shows its error
    assert "Raw spans (" in text and capture.spans[0].span_id in text

    assert client.get(f"/ui/traces/{'f' * 32}").status_code == 404
    assert client.get("/ui/traces/not-a-trace").status_code == 400


def test_untrusted_trace_content_is_shown_as_text_never_as_markup(client: TestClient) -> None:
    markup = client.get(f"/ui/traces/{HOSTILE_TRACE}").text
    text = visible_text(markup)
    for hostile in (HOSTILE_SYSTEM, HOSTILE_USER, HOSTILE_AGENT, HOSTILE_ANSWER, "<i>21</i>"):
        assert hostile in text, hostile
    assert "</pre><script>window.__pwned = 'tool'</script>sunny" in text
    assert "<script>window" not in markup and "<img" not in markup and "<iframe" not in markup
    assert "<svg onload" not in markup and "<i>21" not in markup
    assert html.escape(HOSTILE_AGENT, quote=False) in markup
    # The only script the page loads is our own.
    assert re.findall(r"<script[^>]*>", markup) == ['<script src="/ui/static/live.js" defer>']
    overview = client.get("/").text
    assert "<svg onload" not in overview and html.escape(HOSTILE_AGENT, quote=False) in overview


def test_live_version_changes_when_a_score_arrives(
    client: TestClient, store: Any, judge: JudgeServer
) -> None:
    before = client.get("/ui/live").json()["version"]
    assert client.get("/ui/live").json()["version"] == before
    trace_id = "1ce" + "0" * 29
    body = agent_trace_json(
        trace_id, system="sys", user="hi", tool_result="{}", answer="Fine.", agent="Late"
    )
    response = client.post("/v1/traces", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200
    drain(store)  # as the unpacker of a running service would
    # Its page exists before it is scored, and polls a version of this trace's scores only.
    unscored = client.get(f"/ui/traces/{trace_id}").text
    assert "Not scored (yet)." in unscored
    assert f'data-live-url="/ui/live?trace={trace_id}"' in unscored
    trace_before = client.get("/ui/live", params={"trace": trace_id}).json()["version"]
    other = client.get("/ui/live", params={"trace": HOSTILE_TRACE}).json()["version"]
    worker = build_worker(parse_config(dashboard_config(judge.base_url)).scoring(), store)

    async def score() -> None:
        for claim in store.queue.claim(worker.owner, 10, 30.0, now=FAR_FUTURE):
            await worker.process(claim)

    asyncio.run(score())
    time.sleep(VERSION_TTL)  # the version every tab polls is read once per VERSION_TTL
    assert client.get("/ui/live").json()["version"] != before
    assert client.get("/ui/live", params={"trace": trace_id}).json()["version"] != trace_before
    assert client.get("/ui/live", params={"trace": HOSTILE_TRACE}).json()["version"] == other
    assert client.get("/ui/live", params={"trace": "nope"}).status_code == 400
    assert f"/ui/traces/{trace_id}" in client.get("/").text
    assert "Not scored (yet)." not in client.get(f"/ui/traces/{trace_id}").text


def test_static_files_are_our_own_and_nothing_else_is_served(client: TestClient) -> None:
    from tracescore.web.router import STATIC_FILES

    app_client = client
    script = app_client.get("/ui/static/live.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith(
        "text/javascript"
    )
    assert "http" not in script.text.replace("/ui/live", "")  # never fetches anything elsewhere
    assert app_client.get("/ui/static/../router.py").status_code == 404
    assert app_client.get("/ui/static/other.js").status_code == 404
    assert set(STATIC_FILES) == {"style.css", "live.js"}
    assert "url(" not in app_client.get("/ui/static/style.css").text  # no fonts or images fetched


def test_api_keys_protect_every_page(store: Any, judge: JudgeServer) -> None:
    key = "s3cret-key-for-tests"
    client = TestClient(
        create_app(parse_config(dashboard_config(judge.base_url, [key, "other-key"])), store)
    )
    page = client.get("/?window=1h", follow_redirects=False)
    assert (
        page.status_code == 303 and page.headers["location"] == "/ui/login?next=%2F%3Fwindow%3D1h"
    )
    assert client.get(f"/ui/traces/{HOSTILE_TRACE}", follow_redirects=False).status_code == 303
    assert client.get("/ui/live").status_code == 401
    assert (
        client.get(
            "/", headers={"Authorization": "Bearer wrong"}, follow_redirects=False
        ).status_code
        == 303
    )
    assert client.get("/", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert client.get("/ui/live", headers={"Authorization": "Bearer other-key"}).status_code == 200

    form = client.get("/ui/login?next=/ui/live")
    assert form.status_code == 200 and 'name="key"' in form.text and 'method="post"' in form.text
    refused = client.post("/ui/login", data={"key": "nope", "next": "/"}, follow_redirects=False)
    assert refused.status_code == 401 and COOKIE_NAME not in refused.cookies
    signed_in = client.post(
        "/ui/login", data={"key": key, "next": "/?window=1h"}, follow_redirects=False
    )
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/?window=1h"
    cookie = signed_in.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and key not in cookie
    assert client.get("/").status_code == 200  # the client now sends the cookie
    assert client.get("/ui/live").status_code == 200
    client.post("/ui/logout")
    assert client.get("/", follow_redirects=False).status_code == 303

    # After login only same-site paths are followed.
    for target in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        answer = client.post("/ui/login", data={"key": key, "next": target}, follow_redirects=False)
        assert answer.headers["location"] == "/"


def test_overview_and_trace_page_on_postgresql(judge: JudgeServer) -> None:
    """Percentiles and day buckets are computed by PostgreSQL there: same page, same numbers."""
    with fresh_pg_database() as url:
        store = seed_scored_store(
            url, judge, [CAPTURES / "otel-genai-openai-v2-latest", CAPTURES / "mastra"]
        )
        try:
            client = TestClient(create_app(parse_config(dashboard_config(judge.base_url)), store))
            page = client.get("/", params={"window": "15m", "bucket": "1s"}).text
            rows = stored_scores(store)
            for binding in ("answer-present", "faithfulness"):
                assert chart_card(page, binding).count('class="point"') == _expected_points(
                    rows, binding, 1
                )
            spent = sum(r.cost_usd for r in rows if r.judge_model)
            assert spent > 0 and f"${spent:.4f} over the last 14 days" in page
            assert HOSTILE_SYSTEM in visible_text(client.get(f"/ui/traces/{HOSTILE_TRACE}").text)
            # The views of issue 26 run their own SQL: the same answers on PostgreSQL.
            split = chart_card(client.get("/", params={"split": "agent"}).text, "answer-present")
            legend = [int(n) for n in re.findall(r"n=(\d+)</span>", split)]
            assert sum(legend) == sum(
                r.binding == "answer-present" and r.status == "ok" for r in rows
            )
            ok = sorted(r.score for r in rows if r.binding == "answer-present" and r.status == "ok")
            since = min(as_utc(r.created_at) for r in rows) - timedelta(seconds=1)
            runs = client.get(
                "/ui/runs", params={"binding": "answer-present", "since": since.isoformat()}
            )
            listed = re.findall(r'<span class="score[^"]*">([0-9.]+)</span>', runs.text)
            assert [float(v) for v in listed] == [round(v, 3) for v in ok]
            firing = _evaluate_once(
                store,
                parse_config(dashboard_config(judge.base_url) + ALWAYS_FIRING),
                "answers-missing",
            )
            assert firing and client.get("/ui/alerts").text.count('class="state-firing"') == len(
                firing
            )
            version = next(r.scorer_version for r in rows if r.binding == "answer-present")
            compared = client.get(
                "/ui/compare", params={"binding": "answer-present", "a": version, "b": version}
            ).text
            assert f'<dd id="n-paired">{len(ok)}</dd>' in compared
            assert compared.count('<td class="diff">+0.000</td>') == min(len(ok), 25)
            assert client.get("/ui/compare", params={"threshold": ""}).status_code == 200
            assert client.get("/ui/compare", params={"threshold": "high"}).status_code == 422
        finally:
            store.close()


ALWAYS_FIRING = (
    "alerts:\n  rules:\n    - {name: answers-missing, type: threshold, "
    "scorer: answer-present, below: 0.99, window: 1h, segment_by: [model], min_samples: 3}\n"
)


def _evaluate_once(store: Any, config: Any, rule: str) -> list[Any]:
    """One real evaluation round of the configured rules; the firing verdicts of ``rule``."""
    from tracescore.monitor.alerts import AlertEvaluator

    evaluator = AlertEvaluator(store.engine, config.alerts, config.monitor)
    report = evaluator.run_once()
    evaluator.release()  # the next test's evaluator takes the lease at once
    evaluator.close()
    return [v for v in report.verdicts[rule] if v.firing]


def test_firing_alerts_are_shown_on_top(store: Any, judge: JudgeServer) -> None:
    """A real evaluation of a real rule over the stored scores, then the overview."""
    config = parse_config(dashboard_config(judge.base_url) + ALWAYS_FIRING)
    client = TestClient(create_app(config, store))
    before = client.get("/ui/live").json()["version"]
    assert "firing" not in visible_text(client.get("/").text)
    firing = _evaluate_once(store, config, "answers-missing")
    assert firing
    time.sleep(
        VERSION_TTL
    )  # tabs share the overview of one live version, read once per VERSION_TTL
    page = client.get("/").text
    alerts = re.search(r'<section id="alerts" data-live>(.*?)</section>', page, re.S)
    assert (
        alerts
        and f"{len(firing)} alert" in alerts.group(1)
        and "answers-missing" in alerts.group(1)
    )
    assert page.index('id="alerts"') < page.index('id="trends"')
    assert client.get("/ui/live").json()["version"] != before  # open pages pick the alert up live


def test_window_and_bucket_are_validated(client: TestClient) -> None:
    assert (
        client.get("/", params={"window": "1d", "bucket": "1s"}).status_code == 422
    )  # too many points
    assert client.get("/", params={"window": "soon"}).status_code == 422
    assert client.get("/", params={"window": "7d"}).status_code == 200


def _segment_counts(store: Any, binding: str, column: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in stored_scores(store):
        if row.binding == binding and row.status == "ok":
            name = getattr(row, column) or "(none)"
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_split_draws_a_line_per_segment_top_five_and_other(client: TestClient, store: Any) -> None:
    from tracescore.web.trends import TOP_SEGMENTS

    page = client.get("/", params={"window": "15m", "split": "agent"})
    assert page.status_code == 200
    card = chart_card(page.text, "answer-present")
    counts = _segment_counts(store, "answer-present", "agent")
    assert len(counts) > TOP_SEGMENTS  # the captures hold more agents than get a line
    legend = re.findall(r'<li data-segment="([^"]*)">.*?n=(\d+)</span>', card, re.S)
    names = [html.unescape(name) for name, _ in legend]
    assert len(names) == TOP_SEGMENTS + 1 and names[-1] == f"other ({len(counts) - TOP_SEGMENTS})"
    assert sum(int(n) for _, n in legend) == sum(counts.values())  # every score in one line
    top = names[:TOP_SEGMENTS]
    assert all(counts[name] == int(n) for name, (_, n) in zip(top, legend, strict=False))
    assert min(counts[name] for name in top) >= max(
        n for name, n in counts.items() if name not in top
    )
    series = re.findall(r'<g class="series (s\d|other)" data-segment="([^"]*)">', card)
    assert [html.unescape(name) for _, name in series] == names
    assert series[-1][0] == "other" and len({colour for colour, _ in series}) == len(series)
    # A segment's colour is the same on every chart.
    tone = re.findall(
        r'<g class="series (s\d|other)" data-segment="([^"]*)">', chart_card(page.text, "tone")
    )
    shared = set(series) & set(tone)
    assert shared and all(dict(series)[c] == dict(tone)[c] for c in dict(series) if c in dict(tone))
    # Points of a segment link to that segment's runs of the bucket; the agent name is escaped.
    assert "<svg onload" not in page.text
    assert 'href="/ui/runs?binding=answer-present&amp;agent=' in card
    for split in ("model", "service", "version"):
        assert client.get("/", params={"window": "15m", "split": split}).status_code == 200
    assert client.get("/", params={"split": "colour"}).status_code == 422


def test_a_buckets_runs_are_listed_lowest_first_failures_last(
    client: TestClient, store: Any
) -> None:
    rows = [
        r for r in stored_scores(store) if r.binding == "exploding" or r.binding == "answer-present"
    ]
    since = min(as_utc(r.created_at) for r in rows).replace(microsecond=0)
    until = max(as_utc(r.created_at) for r in rows).replace(microsecond=0) + timedelta(seconds=1)
    params = {"since": since.isoformat(), "until": until.isoformat()}
    page = client.get("/ui/runs", params={**params, "binding": "answer-present"})
    assert page.status_code == 200
    listed = re.findall(r'<tr data-row="([^"]+)">', page.text)
    expected = [r for r in rows if r.binding == "answer-present"]
    # The captures' runs outnumber a page's: the lowest RUNS_LIMIT are listed, the total counts all.
    assert len(listed) == min(len(expected), RUNS_LIMIT)
    by_id = {r.id: r for r in expected}
    ok = [by_id[i].score for i in listed if by_id[i].status == "ok"]
    assert ok == sorted(ok)
    statuses = [by_id[i].status for i in listed]
    assert statuses == sorted(statuses, key=lambda s: s != "ok")  # unscored ones after
    assert f'<dd id="runs-total">{len(expected)}</dd>' in page.text
    # Errors are listed too: they are part of what the bucket held.
    failing = client.get("/ui/runs", params={**params, "binding": "exploding"}).text
    assert failing.count('class="score status-error"') == min(
        sum(r.binding == "exploding" for r in rows), RUNS_LIMIT
    )
    # Filters are shown as text, never as markup; bad times are refused.
    hostile = client.get("/ui/runs", params={**params, "agent": HOSTILE_AGENT}).text
    assert "<svg onload" not in hostile and html.escape(HOSTILE_AGENT, quote=False) in hostile
    assert client.get("/ui/runs", params={"since": "yesterday"}).status_code == 422
    assert client.get("/ui/runs").status_code == 422


def test_alerts_page_bands_and_delivery_outcomes(store: Any, judge: JudgeServer) -> None:
    """A rule evaluated for real, notifying a webhook that is down: state, history, outcome."""
    from tests.support.server_process import free_port

    dead = f"http://127.0.0.1:{free_port()}/hook"
    rule = (
        "alerts:\n"
        "  rules:\n"
        "    - {name: few-answers, type: threshold, scorer: answer-present, below: 0.99,\n"
        "       window: 1h, segment_by: [agent], min_samples: 1}\n"
        f"  channels: [{{name: hook, type: webhook, url: '{dead}', timeout: 1}}]\n"
    )
    config_text = dashboard_config(judge.base_url) + rule
    config = parse_config(config_text)
    firing = _evaluate_once(store, config, "few-answers")
    assert firing
    client = TestClient(create_app(config, store))
    page = client.get("/ui/alerts")
    assert page.status_code == 200
    rule_card = re.search(
        r'<article class="card rule"[^>]*data-rule="few-answers">(.*?)</article>', page.text, re.S
    )
    assert rule_card
    rows = re.findall(r'<tr class="state-(firing|ok)"', rule_card.group(1))
    assert rows.count("firing") == len(firing)
    assert "pending after 1 attempt: hook:" in visible_text(rule_card.group(1))
    only = client.get("/ui/alerts", params={"rule": "few-answers"}).text
    history = re.search(r'<section class="card" id="history" data-live>(.*?)</section>', only, re.S)
    assert history and history.group(1).count('class="event-firing"') == len(firing)
    # The hostile agent is a segment: shown as text in the state table and the history.
    assert "<svg onload" not in page.text and html.escape(HOSTILE_AGENT, quote=False) in page.text
    assert 'href="/ui/runs?scorer=answer-present&amp;agent=' in page.text
    # The firing is a band on the charts of the bindings running that scorer, per segment.
    overview = client.get("/", params={"window": "1h", "split": "agent"}).text
    bands = re.findall(
        r'<g class="alert-band" data-rule="few-answers"', chart_card(overview, "answer-present")
    )
    assert len(bands) == len(firing)
    assert "alert-band" not in chart_card(overview, "tone")
    assert client.get("/ui/alerts", params={"rule": "nope"}).status_code == 200
    assert overview.count("UTC → now") >= len(firing)  # open periods reach the right edge

    # The same rule, now unable to fire: every segment recovers. The history lists the
    # recoveries, and the bands end when they did.
    recovering = parse_config(config_text.replace("below: 0.99", "below: 0.0"))
    assert _evaluate_once(store, recovering, "few-answers") == []
    client = TestClient(create_app(recovering, store))
    only = client.get("/ui/alerts", params={"rule": "few-answers"}).text
    assert only.count('class="state-firing"') == 0
    assert only.count('class="event-resolved"') == len(firing)
    overview = client.get("/", params={"window": "1h", "split": "agent"}).text
    card = chart_card(overview, "answer-present")
    assert card.count('<g class="alert-band" data-rule="few-answers"') == len(firing)
    assert "UTC → now" not in card and "status-error" not in card  # no "firing" chips

    # Firing again within the cooldown: no notification is written, and each firing row says
    # why its last notification is the recovery; the open firings are bands again.
    assert len(_evaluate_once(store, config, "few-answers")) == len(firing)
    client = TestClient(create_app(config, store))
    only = client.get("/ui/alerts", params={"rule": "few-answers"}).text
    assert only.count('class="state-firing"') == len(firing)
    assert only.count("held back by the cooldown") == len(firing)
    assert only.count('class="event-firing"') == len(firing)  # the first firings only
    overview = client.get("/", params={"window": "1h", "split": "agent"}).text
    assert chart_card(overview, "answer-present").count("UTC → now") >= len(firing)
