"""Alert rules end to end: synthetic score streams in a real database, a real webhook receiver.

The evaluation clock is injected, so days of windows are replayed without sleeping.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.support.alert_rules import WINDOW, Clock, T, alerts_config, regression_rule, rule_name
from tests.support.live_app import serve_app
from tests.support.score_streams import Drop, insert_rows, score_row, stream
from tests.support.webhook_receiver import WebhookReceiver, webhook_receiver
from tracescore import metrics
from tracescore.config import ConfigError, parse_config
from tracescore.monitor.alerts import LEASE_NAME, AlertEvaluator
from tracescore.monitor.api import create_monitor_router
from tracescore.monitor.config import AlertsConfig, MonitorConfig, RegressionRule
from tracescore.monitor.rules import BaselineCache, evaluate_rule
from tracescore.store import SpanStore, open_store
from tracescore.store.leases import acquire_lease
from tracescore.times import utc_text


@pytest.fixture
def store(sqlite_url: str) -> Iterator[SpanStore]:
    store = open_store(sqlite_url)
    yield store
    store.close()


@pytest.fixture
def hook() -> Iterator[WebhookReceiver]:
    with webhook_receiver() as receiver:
        yield receiver


def _incident_stream(seed: int = 1) -> Iterator[dict[str, Any]]:
    """Six hours of stable scores for two agents; ``sales`` drops by 0.15 for three windows from T."""
    return stream(
        random.Random(seed),
        T - timedelta(hours=6),
        T + timedelta(hours=1),
        per_minute=4,
        agents=["support", "sales"],
        drops={"sales": [Drop(T, 0.15, T + 3 * WINDOW)]},
    )


def test_drop_fires_within_one_interval_names_segment_and_resolves(
    db_url: str, hook: WebhookReceiver
) -> None:
    store = open_store(db_url)
    try:
        insert_rows(store.engine, _incident_stream())
        clock = Clock(T)
        evaluator = AlertEvaluator(
            store.engine,
            alerts_config(hook.url, regression_rule()),
            MonitorConfig(evaluation_interval=WINDOW.total_seconds()),
            clock=clock,
        )
        firing_at = {}
        for step in range(6):  # T, T+15m, ..., T+75m: one evaluation per interval
            clock.now = T + step * WINDOW
            report = evaluator.run_once()
            assert report.leader and not report.failed_rules
            firing_at[step] = sorted(
                v.segment["agent"] for v in report.verdicts[rule_name()] if v.firing
            )
        evaluator.close()
    finally:
        store.close()

    # Fires at the first evaluation after the drop (one interval), only for the degraded agent,
    # keeps firing while the window is degraded, and resolves once it has recovered.
    assert firing_at == {0: [], 1: ["sales"], 2: ["sales"], 3: ["sales"], 4: [], 5: []}
    fired, resolved = hook.received()
    assert fired["status"] == "firing" and resolved["status"] == "resolved"
    assert fired["segment"] == {"agent": "sales"} and resolved["segment"] == {"agent": "sales"}
    assert fired["at"] == utc_text(T + WINDOW) and resolved["at"] == utc_text(T + 4 * WINDOW)
    assert resolved["since"] == fired["at"]
    details = fired["details"]
    assert details["test"] == "welch_t" and details["alternative"] == "less"
    assert details["p_value"] < 1e-6 and f"p={details['p_value']:.2g}" in fired["summary"]
    assert -0.2 < details["delta"] < -0.1
    assert details["current"]["n"] == 40 and details["baseline"]["n"] == 6 * 60 * 4
    assert "agent=sales" in f"{fired['segment']}".replace("{'agent': '", "agent=").replace("'}", "")
    assert hook.headers[0]["X-Token"] == "t"


def test_stable_stream_false_positive_rate(store: SpanStore) -> None:
    """1,000 windows of a stable noisy stream: the rule fires in ≤ 1 % of them.

    Also checks the t-test is calibrated: p < alpha alone (without the delta gate) should happen
    in about alpha of the windows, not far more.
    """
    windows = 1000
    start = T - timedelta(hours=6)
    insert_rows(store.engine, stream(random.Random(2), start, T + windows * WINDOW, per_minute=4))
    rule = RegressionRule.model_validate(regression_rule())
    cache = BaselineCache(rule)
    fired = significant = verdicts = 0
    with store.engine.connect() as connection:
        for index in range(1, windows + 1):
            found = evaluate_rule(connection, rule, T + index * WINDOW, cache=cache)
            verdicts += len(found)
            fired += sum(v.firing for v in found)
            significant += sum(v.details["p_value"] < rule.alpha for v in found)
    assert verdicts == windows
    rate = fired / verdicts
    print(
        f"false positives: {fired}/{verdicts} = {rate:.3%}; p<alpha alone: {significant / verdicts:.3%}"
    )
    assert rate <= 0.01
    assert significant / verdicts < 3 * rule.alpha


def test_baseline_cache_gives_the_uncached_aggregates(store: SpanStore) -> None:
    """Cached baseline parts plus queried edges equal one query over the whole baseline."""
    insert_rows(store.engine, _incident_stream())
    rule = RegressionRule.model_validate(regression_rule(baseline="3h", min_samples=2))
    cache = BaselineCache(rule)
    rng = random.Random(5)
    with store.engine.connect() as connection:
        for _ in range(25):  # unaligned times, moving forwards and backwards
            now = T + timedelta(seconds=rng.uniform(-7200, 3600))
            cached = evaluate_rule(connection, rule, now, cache=cache)
            direct = evaluate_rule(connection, rule, now)
            assert [v.segment for v in cached] == [v.segment for v in direct]
            for one, other in zip(cached, direct, strict=True):
                assert one.details["baseline"]["n"] == other.details["baseline"]["n"]
                assert one.details["baseline"]["mean"] == pytest.approx(
                    other.details["baseline"]["mean"]
                )
                assert one.details["p_value"] == pytest.approx(
                    other.details["p_value"], rel=1e-6, abs=1e-300
                )
    assert cache.parts, "complete parts were cached"


def test_restart_does_not_refire_and_lease_passes_on(db_url: str, hook: WebhookReceiver) -> None:
    """The first verdict of a segment already fires (no prior state), then instances change."""
    store = open_store(db_url)
    insert_rows(store.engine, _incident_stream())
    clock = Clock(T + WINDOW)
    config = alerts_config(hook.url, regression_rule())
    monitor = MonitorConfig(evaluation_interval=60, leader_lease=120)
    first = AlertEvaluator(store.engine, config, monitor, clock=clock)
    assert first.run_once().leader
    assert [b["status"] for b in hook.received()] == ["firing"]

    # A crashed leader never releases its lease: a restarted instance waits for it to expire.
    second = AlertEvaluator(store.engine, config, monitor, clock=clock)
    clock.now += timedelta(seconds=60)
    assert not second.run_once().leader
    assert first.run_once().leader  # the live leader renews
    clock.now += timedelta(seconds=121)
    report = second.run_once()
    sales = [v.firing for v in report.verdicts[rule_name()] if v.segment == {"agent": "sales"}]
    assert report.leader and sales == [True]
    assert [b["status"] for b in hook.received()] == ["firing"], "the restart must not re-fire"
    assert not first.run_once().leader

    # A graceful stop hands over at once.
    second.release()
    assert first.run_once().leader
    for evaluator in (first, second):
        evaluator.close()
    store.close()


def test_lease_is_exclusive_under_contention(db_url: str) -> None:
    """Eight instances race for the lease at once: exactly one gets it, until it expires."""
    store = open_store(db_url)
    barrier = threading.Barrier(8)
    won: dict[str, bool] = {}

    def contend(owner: str, now: float) -> None:
        barrier.wait()
        with store.engine.begin() as connection:
            won[owner] = acquire_lease(connection, owner, now, 60.0, LEASE_NAME)

    def race(now: float) -> list[str]:
        won.clear()
        threads = [threading.Thread(target=contend, args=(f"i{n}", now)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(won) == 8
        return [owner for owner, ok in won.items() if ok]

    try:
        (holder,) = race(1000.0)
        assert race(1030.0) == [holder], "only the holder renews an unexpired lease"
        assert len(race(1091.0)) == 1, "once expired (1030 + 60), exactly one takes it"
    finally:
        store.close()


def test_cooldown_holds_back_flapping_and_notifies_once_it_is_over(
    store: SpanStore, hook: WebhookReceiver
) -> None:
    """Cooldown 1 h, windows of 10 min: three dips of the one agent's scores.

    A fires and resolves; B fires 20 min after A's firing (held back, and so is its
    resolution); C starts firing 50 min after A's firing (held back) and is notified 10 min
    later, once the hour is over, then resolved.
    """
    dips = [
        Drop(T, 0.3, T + WINDOW),
        Drop(T + 2 * WINDOW, 0.3, T + 3 * WINDOW),
        Drop(T + 5 * WINDOW, 0.3, T + 12 * WINDOW),
    ]
    rows = stream(
        random.Random(3),
        T - timedelta(hours=6),
        T + 13 * WINDOW,
        per_minute=4,
        drops={"support": dips},
    )
    insert_rows(store.engine, rows)
    clock = Clock(T)
    evaluator = AlertEvaluator(
        store.engine, alerts_config(hook.url, regression_rule(cooldown="1h")), clock=clock
    )
    firing = []
    for step in range(1, 14):
        clock.now = T + step * WINDOW
        (verdict,) = evaluator.run_once().verdicts[rule_name()]
        firing.append(verdict.firing)
    evaluator.close()
    assert firing == [True, False, True, False, False] + [True] * 7 + [False]
    at = [(b["status"], b["at"], b["since"]) for b in hook.received()]
    assert at == [
        ("firing", utc_text(T + WINDOW), utc_text(T + WINDOW)),
        ("resolved", utc_text(T + 2 * WINDOW), utc_text(T + WINDOW)),
        ("firing", utc_text(T + 7 * WINDOW), utc_text(T + 6 * WINDOW)),
        ("resolved", utc_text(T + 13 * WINDOW), utc_text(T + 6 * WINDOW)),
    ]


def test_failed_delivery_is_retried_next_round(store: SpanStore, hook: WebhookReceiver) -> None:
    insert_rows(store.engine, _incident_stream())
    hook.fail_next = 1
    clock = Clock(T + WINDOW)
    floor = {
        "name": "sales-floor",
        "type": "threshold",
        "scorer": "answer-relevancy",
        "agent": "sales",
        "below": 0.7,
        "window": "10m",
    }
    evaluator = AlertEvaluator(
        store.engine, alerts_config(hook.url, regression_rule(), floor), clock=clock
    )
    failed_before = (
        metrics.REGISTRY.get_sample_value(
            "tracescore_alert_notifications_total", {"channel": "hook", "outcome": "failed"}
        )
        or 0.0
    )
    assert len(evaluator.run_once().notifications) == 2
    assert hook.received() == [] and hook.requests == 1, "a failed channel is tried once per round"
    assert (
        metrics.REGISTRY.get_sample_value(
            "tracescore_alert_notifications_total", {"channel": "hook", "outcome": "failed"}
        )
        == failed_before + 1
    )
    clock.now += timedelta(minutes=1)
    evaluator.run_once()
    assert sorted(b["rule"] for b in hook.received()) == ["relevancy-regression", "sales-floor"]
    clock.now += timedelta(minutes=1)
    evaluator.run_once()
    assert len(hook.received()) == 2, "delivered notifications are not sent again"

    app = FastAPI()
    app.include_router(create_monitor_router(store.engine))
    with serve_app(app) as base_url:
        body = httpx.get(f"{base_url}/api/alerts", params={"rule": rule_name()}).json()
        firing_only = httpx.get(f"{base_url}/api/alerts", params={"state": "firing"}).json()
    evaluator.close()
    assert body["firing"] == 1
    by_agent = {s["segment"]["agent"]: s for s in body["states"]}
    assert by_agent["sales"]["state"] == "firing" and by_agent["support"]["state"] == "ok"
    assert (
        "Welch" in by_agent["sales"]["summary"] and by_agent["sales"]["details"]["p_value"] < 0.01
    )
    (event,) = body["events"]
    assert event["status"] == "firing" and event["attempts"] == 2 and not event["pending"]
    assert sorted(s["rule"] for s in firing_only["states"]) == [
        "relevancy-regression",
        "sales-floor",
    ]
    assert metrics.REGISTRY.get_sample_value("tracescore_alerts_firing", {"rule": rule_name()}) == 1


def test_threshold_percentile_and_error_rate_rules(store: SpanStore, hook: WebhookReceiver) -> None:
    now = T + timedelta(hours=1)
    rows = [
        score_row(T + timedelta(seconds=30 * i), 0.2 if i % 5 == 0 else 0.9) for i in range(100)
    ]
    judged = {"binding": "judged"}
    rows += [
        score_row(T + timedelta(seconds=30 * i), None, status="error", **judged) for i in range(30)
    ]
    rows += [score_row(T + timedelta(seconds=30 * i), 0.5, **judged) for i in range(70)]
    rows += [
        score_row(T + timedelta(seconds=i), None, status="skipped_budget", **judged)
        for i in range(500)
    ]
    insert_rows(store.engine, rows)
    config = alerts_config(
        hook.url,
        {
            "name": "p10-floor",
            "type": "threshold",
            "scorer": "answer-relevancy",
            "binding": "quality",
            "stat": "p10",
            "below": 0.5,
            "window": "1h",
        },
        {
            "name": "mean-floor",
            "type": "threshold",
            "scorer": "answer-relevancy",
            "binding": "quality",
            "below": 0.5,
            "window": "1h",
        },
        {
            "name": "judge-errors",
            "type": "error_rate",
            "binding": "judged",
            "above": 0.25,
            "window": "1h",
        },
    )
    evaluator = AlertEvaluator(store.engine, config, clock=Clock(now))
    report = evaluator.run_once()
    evaluator.close()
    (p10,) = report.verdicts["p10-floor"]
    (mean,) = report.verdicts["mean-floor"]
    (errors,) = report.verdicts["judge-errors"]
    assert p10.firing and p10.value == pytest.approx(0.2)
    assert not mean.firing and mean.value == pytest.approx(0.76)
    assert errors.firing and errors.value == pytest.approx(0.3)  # skipped rows are not attempts
    assert sorted(b["rule"] for b in hook.received()) == ["judge-errors", "p10-floor"]


def test_slack_and_log_channels(
    store: SpanStore, hook: WebhookReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    insert_rows(store.engine, _incident_stream())
    config = AlertsConfig.model_validate(
        {
            "channels": [{"name": "slack", "type": "slack", "url": hook.url}, {"type": "log"}],
            "rules": [regression_rule()],
        }
    )
    evaluator = AlertEvaluator(store.engine, config, clock=Clock(T + WINDOW))
    with caplog.at_level(logging.INFO, logger="tracescore.alerts"):
        evaluator.run_once()
    evaluator.close()
    (message,) = hook.received()
    assert set(message) == {"text"}
    assert message["text"].startswith(
        ":rotating_light: [FIRING] relevancy-regression (agent=sales)"
    )
    (record,) = [r for r in caplog.records if r.name == "tracescore.alerts"]
    assert record.levelno == logging.WARNING and "(agent=sales)" in record.getMessage()


def test_alert_config_errors_name_the_key() -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config(
            "alerts:\n"
            "  rules:\n"
            "    - name: bad\n"
            "      type: threshold\n"
            "      scorer: x\n"
            "      below: 0.2\n"
            "      above: 0.9\n"
        )
    # The path is the document's: pydantic's union tag (``threshold``) is not a key of it.
    assert "alerts.rules.0 (line 3): Value error, give exactly one of 'below' or 'above'" in str(
        excinfo.value
    )
    rule = "alerts:\n  rules:\n    - {name: r, type: error_rate, binding: b, above: 0.1, %s}\n"
    with pytest.raises(ConfigError, match="unknown channels"):
        parse_config(rule % "channels: [pager]")
    with pytest.raises(ConfigError, match="window"):
        parse_config(rule % "window: soon")
    with pytest.raises(
        ConfigError, match=r"alerts\.rules\.0\.binding \(line 3\): no binding named 'b'"
    ):
        parse_config(rule % "window: 1h")
    with pytest.raises(ConfigError, match="give 'binding'"):
        parse_config("alerts:\n  rules:\n    - {name: r, type: regression}\n")
