"""``GET /api/conversations`` (filtered, paged) and ``GET /api/conversations/{id}``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from tracescore.conversations.reads import (
    ConversationFilter,
    conversation_document,
    list_conversations,
)
from tracescore.restapi import LEGACY, ApiVersion, Moment, moment_query
from tracescore.store import Database, connect

MAX_PAGE = 500


def conversations_router(engine: Database, version: ApiVersion = LEGACY) -> APIRouter:
    router = version.router("/conversations", "conversations")

    @router.get("", summary="Conversations, latest turn first", responses=version.listing)
    def conversations(
        agent: str | None = None,
        service: str | None = None,
        since: Annotated[Moment | None, moment_query("a turn started at or after")] = None,
        until: Annotated[Moment | None, moment_query("a turn started before")] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Conversations whose turns fall in the range, latest turn first, with their own
        scores; pass ``next_cursor`` back as ``cursor`` for the next page."""
        if since is not None and until is not None and since >= until:
            raise HTTPException(422, "since must be before until")
        where = ConversationFilter(agent=agent, service=service, since=since, until=until)
        try:
            with connect(engine) as connection:
                items, next_cursor = list_conversations(connection, where, limit, cursor)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return version.page(items, "items", next_cursor)

    @router.get("/{conversation_id:path}", summary="One conversation: its turns and scores")
    def conversation(conversation_id: str) -> dict[str, Any]:
        """One conversation: its turns in order (trace id, user message, answer, run scores)
        and its own scores."""
        with connect(engine) as connection:
            document = conversation_document(connection, conversation_id)
        if document is None:
            raise HTTPException(404, f"conversation {conversation_id!r} not found")
        return document

    return router
