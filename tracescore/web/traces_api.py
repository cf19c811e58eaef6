"""Read API over the store: trace summaries and whole traces as JSON.

Ids are lowercase hex as everywhere in tracescore. Attribute values are JSON as stored
(:mod:`tracescore.store.codec`): bytes appear as ``{"$b": "<base64>"}`` and non-finite doubles
as ``{"$f": "nan"}``, so nothing is lost or guessed on the way out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, HTTPException, Path, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from tracescore.cursors import cursor_float, cursor_hex, decode_cursor, encode_cursor
from tracescore.restapi import LEGACY, ApiVersion, Moment, TraceId, moment_query
from tracescore.store import SpanStore, TraceState
from tracescore.times import with_utc_text
from tracescore.web.trace_json import SEEN, RunsPage

if TYPE_CHECKING:  # the routes are handed the reader processes the service starts
    from tracescore.web.readers import ReadProcesses

RUNS_PAGE = 100
"""Runs in a page of ``/api/v1/traces/{id}/runs`` unless ``limit`` says otherwise."""
RunKind = Literal["agent", "llm", "tool"]
"""A run's kind (``extract.RUN_KINDS``), a type so a bogus one is a 422 like any parameter."""


def _position(cursor: str) -> tuple[float, str]:
    last_seen, trace_id = decode_cursor(cursor, 2)
    return cursor_float(last_seen), cursor_hex(trace_id)


def runs_page(
    limit: int = Query(RUNS_PAGE, ge=1, le=1000, description="runs in the page"),
    cursor: Annotated[str | None, Query(description="the previous page's next_cursor")] = None,
) -> RunsPage:
    return RunsPage(limit, cursor)


def every_run() -> None:
    """The deprecated path's runs: one array, no pages."""


def _json(document: Any) -> Response:
    return Response(orjson.dumps(document), media_type="application/json")


def traces_router(
    store: SpanStore, reads: ReadProcesses, version: ApiVersion = LEGACY
) -> APIRouter:
    """The trace read routes under ``version``'s prefix. Whole traces and their runs are built
    by ``reads`` (reader processes: a huge trace never stalls the acknowledgement of ingest),
    with the service's ``conversations.id_attributes`` and declared conventions, so the runs
    are the runs that were scored, under the conversation id they were scored under."""
    router = version.router("/traces", "traces")

    @router.get(
        "", summary="Stored trace summaries, newest activity first", responses=version.listing
    )
    async def list_traces(
        limit: int = Query(50, ge=1, le=1000),
        service: str | None = None,
        since: Annotated[Moment | None, moment_query("last activity at or after")] = None,
        cursor: Annotated[str | None, Query(description="the previous page's next_cursor")] = None,
    ) -> Response:
        """Pass ``next_cursor`` back as ``cursor`` for the next page (keyset on last activity
        and trace id: a trace active again since moves to the front, not into a later page)."""
        start = since.timestamp() if since else None
        try:
            after = _position(cursor) if cursor else None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        summaries = await run_in_threadpool(store.list_traces, limit + 1, service, start, after)
        next_cursor = None
        if len(summaries) > limit:
            summaries = summaries[:limit]
            next_cursor = encode_cursor(repr(summaries[-1].last_seen), summaries[-1].trace_id)
        rows = [s.to_dict() for s in summaries]
        if not version.legacy:  # the alias keeps its epoch seconds
            rows = [with_utc_text(row, *SEEN) for row in rows]
        return _json(version.page(rows, "traces", next_cursor))

    async def stored(trace_id: str, document: bytes | None) -> Response:
        """The document read for a trace, or the answer for an id that has none: 410 pruned by
        retention (saying where its scores are), 404 unknown."""
        if document is not None:
            return Response(document, media_type="application/json")
        summary = await run_in_threadpool(store.trace_summary, trace_id)
        if summary is not None and summary.state == TraceState.PRUNED:
            raise HTTPException(
                410,
                f"trace {trace_id.lower()}'s spans were removed by retention (retention.spans); "
                f"its scores are kept: {version.prefix}/scores?trace_id={trace_id.lower()}",
            )
        raise HTTPException(404, f"trace {trace_id.lower()} not found")

    @router.get("/{trace_id}", summary="One trace as stored: summary, spans and log records")
    async def get_trace(trace_id: Annotated[TraceId, Path()]) -> Response:
        """A malformed id is a 422 problem naming ``trace_id``, as every bad parameter."""
        return await stored(trace_id, await reads.trace_json(trace_id))

    @router.get(
        "/{trace_id}/runs", summary="The runs rebuilt from a trace", responses=version.listing
    )
    async def get_trace_runs(
        trace_id: Annotated[TraceId, Path()],
        primary: bool = Query(False, description="only the runs that stand for the agent"),
        kind: list[RunKind] = Query([], description="agent, llm or tool; repeatable"),
        page: RunsPage | None = Depends(every_run if version.legacy else runs_page),
    ) -> Response:
        """The runs rebuilt from the trace, as ``tracescore extract --config`` prints them with
        the same configuration: what the scorers judged, for a script or another tool (the
        HTML trace page shows the same). In pages (``limit``, ``cursor``: agents, then LLM
        calls, then tools, each by start time); the deprecated ``/api`` path answers every
        run in one array, as it always did."""
        try:
            document = await reads.runs_json(trace_id, primary, kind, page)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return await stored(trace_id, document)

    return router
