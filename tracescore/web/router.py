"""The dashboard: HTML pages served by the collector at ``/`` and under ``/ui/``.

Pages are rendered on the server (Jinja2 with autoescaping: trace content is untrusted and
is only ever shown as text) and kept live by a small script of our own that polls
``/ui/live`` and re-fetches the page when a score arrives. Responses carry a strict
Content-Security-Policy, so even markup that slipped through could neither run inline
script nor load anything from elsewhere.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib import resources
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from tracescore.config import Config
from tracescore.insights.task import PassRequests
from tracescore.pipeline.recomputed_steps import StepsRecompute
from tracescore.store import SpanStore, score_reads
from tracescore.store.score_reads import ScoreFilter
from tracescore.web import alerting
from tracescore.web.auth import DashboardKeys
from tracescore.web.compare import compare_page
from tracescore.web.conversations import Covering, conversation_pages
from tracescore.web.insights import insights_pages
from tracescore.web.live import LIVE_POLL_MS, TRACE_ID, LiveVersions
from tracescore.web.overview_render import VIEW_PARAMETERS
from tracescore.web.overview_render import moment_param as _moment
from tracescore.web.readers import ReadProcesses
from tracescore.web.rendering import render
from tracescore.web.review import review_router
from tracescore.web.runs import chart_around, runs_page
from tracescore.web.shared import SharedValues
from tracescore.web.signin import page_guard, sign_in_router
from tracescore.web.silencing import DURATIONS, silence_forms
from tracescore.web.sources import source_rows

STATIC_FILES = {"style.css": "text/css", "live.js": "text/javascript"}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("current", template)  # the navigation marks the page it is on
    return HTMLResponse(render(template, **context), status_code=status, headers=SECURITY_HEADERS)


OVERVIEW_TTL = 2.0
"""Seconds a rendered overview is shared by the viewers asking for it at the same live version."""


def _runs_filter(
    since: str,
    until: str | None,
    binding: str | None,
    scorer: str | None,
    version: str | None,
    agent: str | None,
    model: str | None,
    service: str | None,
) -> ScoreFilter:
    """The runs page's query as a score filter: empty fields (as forms send them) match any."""
    return ScoreFilter(
        binding=binding or None,
        scorer=scorer or None,
        scorer_version=version or None,
        agent=agent or None,
        model=model or None,
        service=service or None,
        since=_moment(since, "since"),
        until=_moment(until, "until") if until else datetime.now(UTC),
    )


def web_router(
    config: Config,
    store: SpanStore,
    keys: DashboardKeys,
    reads: ReadProcesses,
    versions: LiveVersions,
    insight_requests: PassRequests | None,
) -> APIRouter:
    """The pages; ``reads`` builds the overview and trace pages in reader processes, off the
    ingest path; ``versions`` is what ``/ui/live`` answers (:mod:`tracescore.web.live`);
    ``insight_requests`` starts insights passes on demand (None: passes are off)."""
    router = APIRouter(include_in_schema=False)
    rules = list(config.alerts.rules)
    overviews = SharedValues(OVERVIEW_TTL)

    signed_in_page = page_guard(keys)

    common = {"auth": keys.enabled, "poll_ms": LIVE_POLL_MS}

    @router.get("/", dependencies=[Depends(signed_in_page)])
    async def overview(request: Request) -> HTMLResponse:
        """Open tabs re-fetch the overview whenever the live version moves: each version of
        each view (the shared one of :data:`~tracescore.web.live.VERSION_TTL`) is rendered once and shared, for at
        most :data:`OVERVIEW_TTL` seconds (the alerts on it are read per render)."""
        version = await versions.get(None)
        view = {
            name: request.query_params[name]
            for name in VIEW_PARAMETERS
            if name in request.query_params
        }
        status, shown = await overviews.get(
            (tuple(sorted(view.items())), version), lambda: reads.overview(view, common)
        )
        if status != 200:
            raise HTTPException(status, shown)
        return HTMLResponse(shown, headers=SECURITY_HEADERS)

    def alerts_page(rule: str | None, status: int = 200, error: str | None = None) -> HTMLResponse:
        with store.engine.connect() as connection:
            version = score_reads.live_version(connection)
            data = alerting.alerts_page(connection, rules, datetime.now(UTC), rule)
        return _page(
            "alerts.html",
            status,
            **common,
            **data,
            version=version,
            error=error,
            durations=DURATIONS,
        )

    @router.get("/ui/alerts", dependencies=[Depends(signed_in_page)])
    def alerts(rule: str | None = None) -> HTMLResponse:
        return alerts_page(rule or None)

    router.include_router(
        silence_forms(store.engine, lambda status, error: alerts_page(None, status, error)),
        dependencies=[Depends(signed_in_page)],
    )

    @router.get("/ui/sources", dependencies=[Depends(signed_in_page)])
    def sources() -> HTMLResponse:
        return _page("sources.html", **common, sources=source_rows(store.engine))

    @router.get("/ui/runs", dependencies=[Depends(signed_in_page)])
    def runs(
        since: str,
        until: str | None = None,
        binding: str | None = None,
        scorer: str | None = None,
        version: str | None = None,
        agent: str | None = None,
        model: str | None = None,
        service: str | None = None,
    ) -> HTMLResponse:
        where = _runs_filter(since, until, binding, scorer, version, agent, model, service)
        data = runs_page(store.engine, where)
        return _page(
            "runs.html",
            **common,
            **data,
            where=where,
            chart_url=chart_around(where, datetime.now(UTC)),
        )

    @router.get("/ui/compare", dependencies=[Depends(signed_in_page)])
    def compare(
        binding: str | None = None,
        a: str | None = None,
        b: str | None = None,
        threshold: str | None = None,
    ) -> HTMLResponse:
        """``threshold`` is text: the form sends it empty when the stored labels are meant."""
        try:
            cut = float(threshold) if threshold else None
        except ValueError:
            raise HTTPException(422, "threshold: a number") from None
        data = compare_page(store.engine, binding or None, a or None, b or None, cut)
        return _page("compare.html", **common, **data)

    @router.get("/ui/traces/{trace_id}", dependencies=[Depends(signed_in_page)])
    async def trace(trace_id: str) -> HTMLResponse:
        if not TRACE_ID.match(trace_id):
            raise HTTPException(400, "trace id must be 32 hex characters")
        shown = await reads.trace_page(trace_id.lower(), common)
        if shown is None:
            return _page("missing.html", 404, **common, trace_id=trace_id.lower())
        return HTMLResponse(shown, headers=SECURITY_HEADERS)

    router.include_router(sign_in_router(keys, _page, common))
    router.include_router(
        conversation_pages(
            store,
            lambda template, status=200, **data: _page(template, status, **common, **data),
            StepsRecompute(config),
            Covering.of(config.scorers),
        ),
        dependencies=[Depends(signed_in_page)],
    )
    router.include_router(
        insights_pages(
            store.engine,
            lambda template, status=200, **data: _page(template, status, **common, **data),
            config.insights,
            config.scorers,
            insight_requests,
        ),
        dependencies=[Depends(signed_in_page)],
    )
    router.include_router(
        review_router(
            config,
            store,
            lambda template, status=200, **data: _page(template, status, **common, **data),
        ),
        dependencies=[Depends(signed_in_page)],
    )

    @router.get("/ui/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC_FILES:
            raise HTTPException(404)
        body = resources.files("tracescore.web").joinpath("static", name).read_bytes()
        return Response(
            body,
            media_type=STATIC_FILES[name],
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    return router
