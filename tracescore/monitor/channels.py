"""Where alert notifications go: a generic JSON webhook, a Slack-compatible webhook, the log.

A channel's ``send`` raises on failure; the evaluator keeps the notification in its outbox and
retries it at the next evaluation, so a receiver that is briefly down still gets it.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

import httpx

from tracescore.monitor.config import ChannelConfig, LogChannel, SlackChannel, WebhookChannel

logger = logging.getLogger("tracescore.alerts")


class Channel(Protocol):
    name: str

    def send(self, payload: dict[str, Any]) -> None:
        """Deliver one notification (the webhook JSON payload); raise if it was not accepted."""


def describe(payload: dict[str, Any]) -> str:
    """One line for humans: status, rule, segment and the rule's own summary."""
    segment = ", ".join(f"{k}={v}" for k, v in payload["segment"].items()) or "all"
    return f"[{payload['status'].upper()}] {payload['rule']} ({segment}): {payload['summary']}"


class WebhookSender:
    def __init__(self, config: WebhookChannel | SlackChannel, client: httpx.Client) -> None:
        self.name = config.name
        self._url = str(config.url)
        self._timeout = config.timeout
        self._headers = getattr(config, "headers", {})
        self._slack = isinstance(config, SlackChannel)
        self._client = client

    def send(self, payload: dict[str, Any]) -> None:
        body = {"text": _slack_text(payload)} if self._slack else payload
        response = self._client.post(
            self._url, json=body, headers=self._headers, timeout=self._timeout
        )
        response.raise_for_status()


def _slack_text(payload: dict[str, Any]) -> str:
    icon = ":rotating_light:" if payload["status"] == "firing" else ":white_check_mark:"
    return f"{icon} {describe(payload)}"


class LogSender:
    def __init__(self, config: LogChannel) -> None:
        self.name = config.name

    def send(self, payload: dict[str, Any]) -> None:
        level = logging.WARNING if payload["status"] == "firing" else logging.INFO
        logger.log(
            level, "%s %s", describe(payload), json.dumps(payload.get("details"), default=str)
        )


def build_channels(configs: list[ChannelConfig], client: httpx.Client) -> dict[str, Channel]:
    channels: dict[str, Channel] = {}
    for config in configs:
        if isinstance(config, LogChannel):
            channels[config.name] = LogSender(config)
        else:
            channels[config.name] = WebhookSender(config, client)
    return channels
