"""The ``agreement`` alert rule end to end: scores and human feedback in a real database, the real
evaluator with an injected clock, notifications to a real webhook receiver.

The judge agrees with people for two hours, then its provider swaps the model behind the name
and it passes every run people fail, for two hours, then it is fixed. The rule watches kappa
over the runs scored in the last hour.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from tests.support.score_streams import insert_rows, score_row
from tests.support.webhook_receiver import WebhookReceiver, webhook_receiver
from tracescore.config import parse_config
from tracescore.monitor.alerts import AlertEvaluator
from tracescore.monitor.config import MonitorConfig
from tracescore.service import create_app
from tracescore.store import SpanStore, open_store
from tracescore.store.feedback import Feedback, FeedbackStore
from tracescore.times import utc_text

T = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
"""The judge drifts from T to T + 2h."""
RULE = "judge-drift"


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def hook() -> Iterator[WebhookReceiver]:
    with webhook_receiver() as receiver:
        yield receiver


def _runs(store: SpanStore, rng: random.Random) -> None:
    """Six scored runs a minute from T - 2h to T + 4h, a third of them reviewed by a person."""
    scores, verdicts = [], []
    moment = T - timedelta(hours=2)
    while moment < T + timedelta(hours=4):
        for _ in range(6):
            human_pass = rng.random() < 0.6
            drifting = T <= moment < T + timedelta(hours=2)
            judged = 0.9 if (human_pass or drifting) else 0.2
            row = score_row(moment, judged, binding="quality", trace_id=uuid.uuid4().hex)
            scores.append(row)
            if rng.random() < 1 / 3:
                verdicts.append(
                    Feedback(
                        trace_id=row["trace_id"],
                        span_id=row["span_id"],
                        name="quality",
                        source="api",
                        created_at=moment + timedelta(hours=1),
                        label="pass" if human_pass else "fail",
                        author="reviewer",
                    )
                )
        moment += timedelta(minutes=1)
    insert_rows(store.engine, scores)
    FeedbackStore(store).record(verdicts)


def test_agreement_rule_fires_when_the_judge_drifts_and_recovers(
    db_url: str, hook: WebhookReceiver
) -> None:
    config = parse_config(f"""
scorers: [{{name: quality, scorer: completeness, threshold: 0.5}}]
alerts:
  channels: [{{name: hook, type: webhook, url: "{hook.url}"}}]
  rules: [{{name: {RULE}, type: agreement, binding: quality, metric: kappa, below: 0.4,
           threshold: 0.5, window: 1h, min_samples: 30}}]
""")
    store = open_store(db_url)
    try:
        _runs(store, random.Random(24))
        clock = Clock(T)
        evaluator = AlertEvaluator(store.engine, config.alerts, MonitorConfig(), clock=clock)
        kappas: list[float] = []
        firing: list[bool] = []
        for step in range(9):  # every 30 minutes from T to T + 4h
            clock.now = T + timedelta(minutes=30 * step)
            report = evaluator.run_once()
            assert report.leader and not report.failed_rules
            (verdict,) = report.verdicts[RULE]
            assert verdict.value is not None
            kappas.append(verdict.value)
            firing.append(verdict.firing)
        evaluator.close()
        # The dashboard's alerts page shows the rule's firing period like any rule's.
        page = TestClient(create_app(config, store)).get("/ui/alerts")
        assert page.status_code == 200 and RULE in page.text
        assert "quality kappa against human feedback" in page.text
    finally:
        store.close()

    # Half an hour of drift in the hour keeps kappa about 0.55 (a judge passing every run in
    # that half, and people failing 40 % of them); a whole hour of it brings kappa to 0: a judge
    # passing everything knows nothing. Fires at T + 1h, resolves at T + 2h30.
    assert firing == [False, False, True, True, True, False, False, False, False]
    assert kappas[0] == pytest.approx(1.0) and kappas[-1] == pytest.approx(1.0)
    assert 0.45 < kappas[1] < 0.65 and 0.45 < kappas[5] < 0.65
    assert kappas[2:5] == pytest.approx([0.0, 0.0, 0.0])
    fired, resolved = hook.received()
    assert (fired["status"], resolved["status"]) == ("firing", "resolved")
    assert fired["at"] == utc_text(T + timedelta(hours=1))  # the API's one time format
    assert resolved["at"] == utc_text(T + timedelta(minutes=150))
    assert "quality kappa against human feedback" in fired["summary"]
    details = fired["details"]
    assert details["metric"] == "kappa" and details["below"] == 0.4 and details["n"] >= 30
    assert details["agreement"]["confusion"]["judge_pass_human_fail"] > 0


def test_an_agreement_rule_must_name_a_configured_binding_and_one_bound() -> None:
    with pytest.raises(ValueError, match="no binding named 'other'"):
        parse_config("""
scorers: [{name: quality, scorer: completeness}]
alerts: {rules: [{name: r, type: agreement, binding: other, below: 0.4}]}
""")
    with pytest.raises(ValueError, match="exactly one of 'below' or 'above'"):
        parse_config("""
scorers: [{name: quality, scorer: completeness}]
alerts: {rules: [{name: r, type: agreement, binding: quality, metric: mae}]}
""")
