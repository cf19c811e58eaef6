"""A conversation's turns sent to a running service, and waiting for its scorings."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

import httpx

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.server_process import ONE_USE_CONNECTIONS, wait_for

CITIES = ["Paris", "Lyon", "Oslo", "Rome", "Lima", "Kyiv", "Pune"]


def send_turns(
    base_url: str,
    conversation: str,
    first: int,
    last: int,
    headers: Mapping[str, str] | None = None,
) -> None:
    """Turns ``first`` to ``last`` (1-based) of ``conversation``, a trace each, in order: the
    user of turn n asks for the weather in ``CITIES[n - 1]``."""
    rng = random.Random(f"{conversation}-{first}")
    with httpx.Client(
        base_url=base_url, timeout=10, limits=ONE_USE_CONNECTIONS
    ) as client:  # one SSL context, not one a turn
        for turn in range(first, last + 1):
            trace = agent_trace(rng, CITIES[turn - 1], conversation=conversation)
            response = client.post(
                "/v1/traces",
                content=export_request(trace.spans),
                headers={**(headers or {}), "Content-Type": "application/x-protobuf"},
            )
            assert response.status_code == 200, response.text
            time.sleep(0.01)  # turns start in order


def wait_for_scorings(
    base_url: str,
    conversation: str,
    turns: list[int],
    headers: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """The conversation's API document once its scores cover exactly ``turns`` (in any order)."""
    document: dict[str, Any] = {}

    def scored() -> bool:
        response = client.get(f"/api/conversations/{conversation}", headers=headers)
        if response.status_code != 200:
            return False
        document.clear()
        document.update(response.json())
        return sorted(s["conversation_turns"] for s in document["scores"]) == sorted(turns)

    with httpx.Client(
        base_url=base_url, timeout=10, limits=ONE_USE_CONNECTIONS
    ) as client:  # one for all the looks
        wait_for(scored, timeout, lambda: f"{conversation} scored at {turns} turns ({document})")
    return document
