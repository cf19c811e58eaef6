"""The conversation pages: recent conversations, and one conversation's turns in order, each
with its run scores and a link to its trace, beside the conversation's own scores: the latest
of each binding, and the history of every scoring (one per turn count it covered)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import HTMLResponse

from tracescore.conversations.reads import (
    ConversationFilter,
    conversation_document,
    list_conversations,
)
from tracescore.pipeline.config import ScorerBinding
from tracescore.pipeline.recomputed_steps import StepsRecompute
from tracescore.pipeline.routing import RunFilter
from tracescore.store import SpanStore, TraceState

Page = Callable[..., HTMLResponse]
"""Renders a template as a page with the dashboard's headers: ``page(template, status, **context)``."""
PAGE_SIZE = 50


def latest_scores(scores: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each binding's latest score of a conversation (its scores come latest first)."""
    latest: dict[str, dict[str, Any]] = {}
    for score in scores:
        latest.setdefault(score["binding"], score)
    return list(latest.values())


@dataclass
class Scoring:
    """One scoring of a conversation: the turns it covered and each binding's score."""

    turns: int | None
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)


def score_history(scores: Sequence[dict[str, Any]]) -> tuple[list[str], list[Scoring]]:
    """The bindings (columns) and the scorings (rows, latest first) of a conversation's score
    history table."""
    bindings = sorted({score["binding"] for score in scores})
    scorings: dict[int | None, Scoring] = {}
    for score in scores:
        turns = score.get("conversation_turns")
        scoring = scorings.setdefault(turns, Scoring(turns))
        scoring.scores.setdefault(score["binding"], score)
    return bindings, list(scorings.values())


@dataclass(frozen=True)
class Covering:
    """The filters of the bindings with ``target: conversation``: whether one may score a
    conversation, so the pages call "scored" only what a binding covers."""

    filters: list[RunFilter]

    @classmethod
    def of(cls, bindings: Sequence[ScorerBinding]) -> Covering:
        return cls([RunFilter(b.filter) for b in bindings if b.target == "conversation"])

    @property
    def any(self) -> bool:
        return bool(self.filters)

    def status(self, conversation: Mapping[str, Any]) -> str:
        """One word for one state, the same in the list, the page's header and its card:
        ``scored`` (it has scores), ``waiting`` (a binding covers it and it is not scored
        yet: a conversation is scored once no turn came for the idle timeout), ``not
        chosen`` (a binding covers it but did not score it: its ``when:``, sampling or a
        run filter left it out) or ``not covered`` (no conversation binding's agent and
        service filters take it)."""
        if conversation.get("scores"):
            return "scored"
        if not any(
            f.may_match(conversation["service"], conversation["agent"]) for f in self.filters
        ):
            return "not covered"
        return "not chosen" if conversation["state"] == TraceState.SCORED else "waiting"


STATUS_MEANS = {
    "scored": "scored by the conversation bindings",
    "waiting": "a conversation is scored once no turn arrived for the idle timeout",
    "not chosen": "a conversation binding covers it but did not score it (its when:, sampling or "
    "filter left it out)",
    "not covered": "no conversation binding's agent and service filters take it",
}
"""What each status says, in full, where a page has room for it."""


def conversation_pages(
    store: SpanStore, page: Page, recompute: StepsRecompute, covering: Covering
) -> APIRouter:
    """Routes of the conversation pages; the caller guards them with the dashboard's login.
    A turn's code scores get their steps from ``recompute``. ``covering``: the conversation
    bindings, which say what each conversation's status is; without any, the pages say how to
    get one."""
    router = APIRouter(include_in_schema=False)
    fill_steps = recompute.fill_from(store)

    @router.get("/ui/conversations")
    def conversations(
        agent: str | None = None, service: str | None = None, cursor: str | None = None
    ) -> HTMLResponse:
        where = ConversationFilter(agent=agent or None, service=service or None)
        try:
            with store.engine.connect() as connection:
                items, next_cursor = list_conversations(
                    connection, where, PAGE_SIZE, cursor or None
                )
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        for item in items:
            item["scores"] = latest_scores(item["scores"])
            item["status"] = covering.status(item)
        return page(
            "conversations.html",
            conversations=items,
            next_cursor=next_cursor,
            agent=agent or "",
            service=service or "",
            scored=covering.any,
            means=STATUS_MEANS,
        )

    @router.get("/ui/conversations/{conversation_id:path}")
    def conversation(conversation_id: str) -> HTMLResponse:
        with store.engine.connect() as connection:
            document = conversation_document(connection, conversation_id, with_steps=True)
        if document is None:
            return page(
                "conversation.html",
                404,
                conversation=None,
                conversation_id=conversation_id,
                scored=covering.any,
            )
        fill_steps(score for turn in document["turns"] for score in turn["scores"])
        bindings, history = score_history(document["scores"])
        return page(
            "conversation.html",
            conversation=document,
            conversation_id=conversation_id,
            scored=covering.any,
            conversation_status=covering.status(document),
            means=STATUS_MEANS,
            latest=latest_scores(document["scores"]),
            history_bindings=bindings,
            history=history,
        )

    return router
