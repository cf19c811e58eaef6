"""One word for one state on the conversation pages (issue 50): a conversation no
conversation binding covers is "not covered", never "scored" with no score, and the list, a
page's header and its card all take the word from :meth:`Covering.status`."""

from __future__ import annotations

from typing import Any

from tracescore.config import parse_config
from tracescore.web.conversations import STATUS_MEANS, Covering

COVERING = Covering.of(
    parse_config(
        "scorers:\n  - {name: chat, scorer: keyword-coverage, target: conversation, "
        "filter: {agent: [concierge]}}\n  - {name: tone, scorer: tone}\n"
    ).scorers
)


def _conversation(agent: str, state: str, scores: list[Any] | None = None) -> dict[str, Any]:
    return {"agent": agent, "service": "app", "state": state, "scores": scores or []}


def test_an_agent_no_conversation_binding_takes_is_not_covered() -> None:
    # the pipeline marks it scored (it processed it); the page must not say so
    assert COVERING.status(_conversation("weather-bot", "scored")) == "not covered"
    assert COVERING.status(_conversation("weather-bot", "pending")) == "not covered"


def test_a_covered_conversation_is_waiting_scored_or_not_chosen() -> None:
    assert COVERING.status(_conversation("concierge", "pending")) == "waiting"
    assert COVERING.status(_conversation("concierge", "scored", [{"score": 1}])) == "scored"
    assert COVERING.status(_conversation("concierge", "scored")) == "not chosen"


def test_every_status_is_explained() -> None:
    assert set(STATUS_MEANS) == {"scored", "waiting", "not chosen", "not covered"}
