"""Alert rules and the evaluator's injected clock, for the alert and silence tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tracescore.monitor.config import AlertsConfig

T = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
"""Start of the simulated incident; evaluations are aligned to it."""
WINDOW = timedelta(minutes=10)


class Clock:
    """The evaluator's injected clock: tests move it instead of sleeping."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def regression_rule(**overrides: Any) -> dict[str, Any]:
    rule = {
        "name": "relevancy-regression",
        "type": "regression",
        "scorer": "answer-relevancy",
        "window": "10m",
        "baseline": "6h",
        "segment_by": ["agent"],
        "min_delta": 0.08,
        "alpha": 0.01,
        "min_samples": 30,
    }
    return rule | overrides


def alerts_config(url: str, *rules: dict[str, Any], **extra: Any) -> AlertsConfig:
    return AlertsConfig.model_validate(
        {
            "channels": [
                {"name": "hook", "type": "webhook", "url": url, "headers": {"X-Token": "t"}}
            ],
            "rules": list(rules),
            **extra,
        }
    )


def rule_name() -> str:
    return regression_rule()["name"]
