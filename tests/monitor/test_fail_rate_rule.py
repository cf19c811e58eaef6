"""``fail_rate`` rules (issue 50): alerts on the share of runs that fail their binding's pass
threshold, read from the labels the scores were given (a threshold's ``fail``, a scorer's own
names for what failed), with no bound of their own; the summary answers the same share. Real
rows on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from tests.support.alert_rules import Clock, T
from tests.support.score_streams import insert_rows, score_row
from tracescore.config import ConfigError, parse_config
from tracescore.monitor.alerts import AlertEvaluator
from tracescore.monitor.config import AlertsConfig
from tracescore.service import create_app
from tracescore.store import SpanStore, open_store


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    store = open_store(db_url)
    yield store
    store.close()


def _rows(store: SpanStore) -> None:
    """An hour of ``quality`` scores: support fails 1 run in 10, sales 4 in 10 (two by a
    threshold's ``fail``, two by a scorer's own failed-check label); a run without a label
    (a scorer without a threshold) never counts as failed."""
    rows = []
    for i in range(100):
        at = T - timedelta(seconds=30 * (i + 1))
        rows.append(score_row(at, 0.9 if i % 10 else 0.1, label="pass" if i % 10 else "fail"))
        label = {0: "fail", 1: "fail", 2: "grounding", 3: "grounding+language"}.get(i % 10, "ok")
        rows.append(score_row(at, 0.5, agent="sales", label=label))
        rows.append(score_row(at, 0.0, agent="other", binding="unlabelled"))
    insert_rows(store.engine, rows)


def test_a_fail_rate_rule_fires_on_the_segment_that_fails_its_threshold(store: SpanStore) -> None:
    _rows(store)
    config = AlertsConfig.model_validate(
        {
            "rules": [
                {
                    "name": "failing",
                    "type": "fail_rate",
                    "binding": "quality",
                    "above": 0.2,
                    "segment_by": ["agent"],
                    "window": "1h",
                },
                {"name": "none", "type": "fail_rate", "binding": "unlabelled", "above": 0.0},
            ],
            "channels": [{"type": "log"}],
        }
    )
    evaluator = AlertEvaluator(store.engine, config, clock=Clock(T))
    report = evaluator.run_once()
    evaluator.close()
    verdicts = {v.segment["agent"]: v for v in report.verdicts["failing"]}
    assert verdicts["sales"].firing and verdicts["sales"].value == pytest.approx(0.4)
    assert not verdicts["support"].firing and verdicts["support"].value == pytest.approx(0.1)
    assert verdicts["sales"].summary == (
        "quality fail rate 40.0% over the last 1h is above 20.0% "
        "(40 of 100 scored runs failed their pass threshold)"
    )
    assert verdicts["sales"].details == {"failed": 40, "scored": 100, "above": 0.2}
    (unlabelled,) = report.verdicts["none"]
    assert not unlabelled.firing and unlabelled.value == 0.0


def test_the_summary_answers_the_share_that_failed(store: SpanStore) -> None:
    _rows(store)
    config = parse_config("scorers:\n  - {name: quality, scorer: consistency}\n")
    with TestClient(create_app(config, store)) as client:
        body = client.get(
            "/api/v1/scores/summary",
            params={
                "binding": "quality",
                "group_by": "agent",
                "since": (T - timedelta(hours=1)).isoformat(),
                "until": T.isoformat(),
                "bucket": "1h",
            },
        ).json()
    shares = {}
    for row in body["items"]:
        failed, count = shares.get(row["agent"], (0, 0))
        shares[row["agent"]] = (failed + row["failed"], count + row["count"])
    assert shares == {"sales": (40, 100), "support": (10, 100)}
    assert all(row["fail_rate"] == row["failed"] / row["count"] for row in body["items"])


def test_a_fail_rate_rule_needs_a_binding_with_a_pass_threshold() -> None:
    rule = "    - {name: r, type: fail_rate, binding: k, above: 0.2}\n"
    with pytest.raises(
        ConfigError,
        match=r"alerts\.rules\.0\.binding \(line 5\): binding 'k' has no pass threshold",
    ):
        parse_config(
            "scorers:\n  - {name: k, scorer: keyword-coverage}\nalerts:\n  rules:\n" + rule
        )
    for threshold in ("0.3", "learn"):
        parse_config(
            f"scorers:\n  - {{name: k, scorer: keyword-coverage, threshold: {threshold}}}\n"
            "alerts:\n  rules:\n" + rule
        )
    with pytest.raises(
        ConfigError, match=r"alerts\.rules\.0\.above \(line 5\): Input should be less than 1"
    ):
        parse_config(
            "scorers:\n  - {name: k, scorer: consistency}\nalerts:\n  rules:\n"
            "    - {name: r, type: fail_rate, binding: k, above: 1.5}\n"
        )
