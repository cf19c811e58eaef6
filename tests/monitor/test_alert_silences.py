"""Silencing and acknowledging alerts: the REST API behind the key on both databases, and the
evaluator keeping silenced notifications from the channels (but not from the history) until
the silence expires. The evaluation clock is injected, as in tests/monitor/test_alerts.py."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import httpx
from sqlalchemy import select

from tests.support.alert_rules import WINDOW, Clock, T, alerts_config, regression_rule, rule_name
from tests.support.live_app import serve_app
from tests.support.score_streams import Drop, insert_rows, stream
from tests.support.webhook_receiver import webhook_receiver
from tracescore.config import parse_config
from tracescore.monitor.alerts import AlertEvaluator
from tracescore.monitor.silences import SilenceIn, add_silence
from tracescore.service import create_app
from tracescore.store import open_store
from tracescore.store.alerts import ALERT_EVENTS
from tracescore.times import utc_text
from tracescore.web.alerting import delivery

KEY = "silence-test-key"


def test_silences_api_behind_the_key(db_url: str) -> None:
    store = open_store(db_url)
    try:
        config = (
            f"server:\n  api_keys: [{KEY}]\nscorers: [{{name: q, scorer: consistency}}]\n"
            "alerts: {rules: [{name: r, type: error_rate, binding: q, above: 0.5}]}\n"
        )
        app = create_app(parse_config(config), store)
        with serve_app(app) as base_url:
            client = httpx.Client(base_url=base_url, timeout=30)
            path = "/api/v1/alerts/silences"
            auth = {"Authorization": f"Bearer {KEY}"}
            asked = {
                "rule": "r",
                "segment": {"agent": "weather-bot"},
                "duration": "4h",
                "note": "deploy in progress",
                "author": "ana",
            }
            assert client.post(path, json=asked).status_code == 401
            assert client.get(path).status_code == 401
            made = client.post(path, json=asked, headers=auth)
            assert made.status_code == 201, made.text
            silence = made.json()
            assert silence["kind"] == "silence" and silence["segment"] == {"agent": "weather-bot"}
            assert silence["note"] == "deploy in progress" and silence["author"] == "ana"
            lasts = datetime.fromisoformat(silence["expires_at"]) - datetime.fromisoformat(
                silence["created_at"]
            )
            assert lasts == timedelta(hours=4)
            ack = client.post(
                path, json={"rule": "r", "kind": "ack", "duration": 3600}, headers=auth
            )
            assert ack.status_code == 201 and ack.json()["segment"] is None
            for bad in (
                {**asked, "duration": "31d"},
                {**asked, "duration": "soon"},
                {**asked, "kind": "mute"},
                {**asked, "rule": ""},
                {**asked, "rule": "typo"},
            ):
                refused = client.post(path, json=bad, headers=auth)
                assert refused.status_code == 422, bad
                assert refused.headers["content-type"] == "application/problem+json"
                assert refused.json()["status"] == 422 and refused.json()["errors"], bad
            page = client.get(path, headers=auth).json()
            assert page["next_cursor"] is None
            listed = page["items"]
            assert [item["id"] for item in listed] == [silence["id"], ack.json()["id"]]
            unknown = client.get(path, params={"rule": "other"}, headers=auth)
            assert unknown.status_code == 404 and "'other'" in unknown.json()["detail"]
            assert client.delete(f"{path}/{silence['id']}").status_code == 401
            assert client.delete(f"{path}/{silence['id']}", headers=auth).status_code == 204
            gone = client.delete(f"{path}/{silence['id']}", headers=auth)
            assert gone.status_code == 404
            assert gone.json()["detail"] == f"no silence {silence['id']}"
            assert [item["kind"] for item in client.get(path, headers=auth).json()["items"]] == [
                "ack"
            ]
            legacy = client.get("/api/alerts/silences", headers=auth)
            assert legacy.status_code == 200, legacy.text
            assert [item["id"] for item in legacy.json()["items"]] == [ack.json()["id"]]
    finally:
        store.close()


def test_silenced_notifications_stay_in_history_and_resume_after_expiry(db_url: str) -> None:
    """Two dips of one agent's scores, no cooldown. The first fires and resolves under a 30 min
    silence of that agent's segment: both events are in the history, no channel receives them.
    The second dips after the silence expired: it is notified as usual."""
    store = open_store(db_url)
    dips = [Drop(T, 0.3, T + WINDOW), Drop(T + 4 * WINDOW, 0.3, T + 5 * WINDOW)]
    rows = stream(
        random.Random(3),
        T - timedelta(hours=6),
        T + 7 * WINDOW,
        per_minute=4,
        agents=["support", "sales"],
        drops={"sales": dips},
    )
    try:
        insert_rows(store.engine, rows)
        with webhook_receiver() as hook:
            clock = Clock(T)
            evaluator = AlertEvaluator(
                store.engine, alerts_config(hook.url, regression_rule(cooldown="1s")), clock=clock
            )
            asked = SilenceIn(
                rule=rule_name(),
                segment={"agent": "sales"},
                duration="30m",
                note="known dip",
                author="ana",
            )
            add_silence(store.engine, asked, T.timestamp())
            firing = []
            for step in range(1, 7):
                clock.now = T + step * WINDOW
                verdicts = evaluator.run_once().verdicts[rule_name()]
                firing.append([v.segment["agent"] for v in verdicts if v.firing])
            evaluator.close()
            received = [(b["status"], b["at"]) for b in hook.received()]
        with store.engine.connect() as connection:
            history = connection.execute(select(ALERT_EVENTS).order_by(ALERT_EVENTS.c.id)).all()
    finally:
        store.close()
    assert firing == [["sales"], [], [], [], ["sales"], []]
    # Under the silence (T .. T+30m): recorded, sent nowhere, saying which silence held it.
    assert [(e.status, e.at) for e in history] == [
        ("firing", (T + WINDOW).timestamp()),
        ("resolved", (T + 2 * WINDOW).timestamp()),
        ("firing", (T + 5 * WINDOW).timestamp()),
        ("resolved", (T + 6 * WINDOW).timestamp()),
    ]
    for event in history[:2]:
        assert not event.pending and event.pending_channels == [] and event.attempts == 0
        assert event.payload["silenced"]["note"] == "known dip"
        assert event.payload["silenced"]["until"] == utc_text(T + 3 * WINDOW)
        assert delivery(dict(event._mapping)) == ("silenced", "silenced until 2026-05-04 12:30 UTC")
    # After it expired: notified.
    assert received == [
        ("firing", utc_text(T + 5 * WINDOW)),
        ("resolved", utc_text(T + 6 * WINDOW)),
    ]
    assert all("silenced" not in event.payload for event in history[2:])


def test_an_acknowledgement_does_not_silence_and_a_silence_covers_only_its_segment(
    sqlite_url: str,
) -> None:
    store = open_store(sqlite_url)
    rows = stream(
        random.Random(1),
        T - timedelta(hours=6),
        T + 2 * WINDOW,
        per_minute=4,
        agents=["support", "sales"],
        drops={"sales": [Drop(T, 0.3, T + 2 * WINDOW)], "support": [Drop(T, 0.3, T + 2 * WINDOW)]},
    )
    try:
        insert_rows(store.engine, rows)
        with webhook_receiver() as hook:
            clock = Clock(T + WINDOW)
            evaluator = AlertEvaluator(
                store.engine, alerts_config(hook.url, regression_rule()), clock=clock
            )
            for asked in (
                SilenceIn(rule=rule_name(), segment={"agent": "sales"}, duration="1h"),
                SilenceIn(rule=rule_name(), kind="ack", duration="1h"),
                SilenceIn(rule="another-rule", duration="1h"),
            ):
                add_silence(store.engine, asked, T.timestamp())
            evaluator.run_once()
            evaluator.close()
            notified = [(b["status"], b["segment"]) for b in hook.received()]
    finally:
        store.close()
    assert notified == [("firing", {"agent": "support"})]
