"""The review pages: the queue of runs worth a person's look, and one run with its scores and
a form that records a verdict.

The form is a plain HTML form posted to the server (no script), behind the dashboard's login
cookie like every page; the cookie is ``SameSite=Strict`` and the Content-Security-Policy allows
forms to post only here, so another site cannot post verdicts in a signed-in reviewer's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from tracescore.extract import extract_runs
from tracescore.extract.base import Convention
from tracescore.extract.declared import claim_order
from tracescore.extract.registry import CONVENTIONS
from tracescore.feedback.api import FeedbackIn
from tracescore.feedback.report import Thresholds
from tracescore.feedback.review import ReviewQueue
from tracescore.pipeline.feedback_triggers import verdict_triggers
from tracescore.pipeline.recomputed_steps import StepsRecompute
from tracescore.restapi import TRACE_ID_PATTERN
from tracescore.store import SpanStore
from tracescore.store.feedback import FeedbackStore
from tracescore.store.feedback_triggers import trace_triggers
from tracescore.store.score_reads import trace_scores
from tracescore.store.scores import StoredScore

if TYPE_CHECKING:
    from tracescore.config import Config

Page = Callable[..., HTMLResponse]
"""Renders a template as a page with the dashboard's headers: ``page(template, status, **context)``."""
QUEUE_LENGTH = 50


def run_review(
    store: SpanStore,
    trace_id: str,
    span_id: str | None,
    conventions: list[Convention] = CONVENTIONS,
    recompute: StepsRecompute | None = None,
) -> dict[str, Any] | None:
    """The run(s) to judge (the span's, else the trace's primary runs, read with
    ``conventions``), their scores (code scores' steps filled in by ``recompute``) and the
    feedback the trace has, each verdict with what the judges said of its run
    (:func:`judge_beside`); None if nothing of the trace is stored."""
    trace = store.load_trace(trace_id)
    with store.engine.connect() as connection:
        scores = trace_scores(connection, trace_id)
        triggers = trace_triggers(connection, trace_id)
    if trace is None and not scores:
        return None
    runs = extract_runs(trace, conventions) if trace is not None else []
    if recompute is not None:
        by_id = {run.span_id: run for run in runs}
        recompute.fill(scores, lambda _trace, _spans: by_id if trace is not None else None)
    chosen = [run for run in runs if run.span_id == span_id] if span_id else []
    chosen = chosen or [run for run in runs if run.primary]
    shown = {run.span_id for run in chosen}
    feedback = FeedbackStore(store).find(trace_id=trace_id)
    return {
        "trace_id": trace_id,
        "runs": chosen,
        "scores": [row for row in scores if row["span_id"] in shown or not shown],
        "feedback": [{**item, "judge": judge_beside(item, triggers, scores)} for item in feedback],
    }


def judge_beside(
    verdict: dict[str, Any], triggers: list[dict[str, Any]], scores: list[StoredScore]
) -> list[dict[str, Any]]:
    """What the judges said of the run a verdict is on, to show beside it: each binding the
    verdict's run triggered (``on_feedback``) with its state and reason, or, where none was,
    the scores of the binding the verdict names. Each entry carries the binding's scores of
    the run (``scores``)."""
    span = verdict["span_id"]

    def of_run(binding: str, on: str | None) -> list[StoredScore]:
        return [
            row
            for row in scores
            if row["binding"] == binding and (on is None or row["span_id"] == on)
        ]

    found = [
        {**trigger, "scores": of_run(trigger["binding"], trigger["span_id"])}
        for trigger in triggers
        if trigger["span_id"] == span
    ]
    if not found and (named := of_run(verdict["name"], span)):
        found.append(
            {
                "binding": verdict["name"],
                "state": None,
                "outcome": None,
                "reason": None,
                "scores": named,
            }
        )
    return found


def form_fields(body: bytes) -> dict[str, str]:
    """A posted form (``application/x-www-form-urlencoded``): the first value of each field."""
    return {key: values[0] for key, values in parse_qs(body.decode("utf-8", "replace")).items()}


def _verdict(form: dict[str, str], trace_id: str) -> FeedbackIn:
    """The posted form as a verdict; raises ValidationError (a bad value, nothing given)."""
    value = form.get("value", "").strip()
    return FeedbackIn.model_validate(
        {
            "trace_id": trace_id,
            "span_id": form.get("span_id") or None,
            "binding": form.get("binding") or None,
            "value": value or None,
            "label": form.get("label") or None,
            "comment": form.get("comment") or None,
            "author": form.get("author", "").strip(),
        }
    )


def review_router(config: Config, store: SpanStore, page: Page) -> APIRouter:
    """Routes of the review pages; the caller guards them with the dashboard's login."""
    router = APIRouter(include_in_schema=False)
    bindings = [binding.name for binding in config.scorers]
    conventions = claim_order(config.conventions)
    thresholds = Thresholds.of(config, store.engine)
    queue = ReviewQueue.of(config, store.engine)
    feedback = FeedbackStore(store, verdict_triggers(config.scorers))
    recompute = StepsRecompute(config)

    @router.get("/ui/review")
    def review_queue(binding: str | None = None, recorded: str | None = None) -> HTMLResponse:
        proposals = queue.propose(datetime.now(UTC), binding=binding or None, limit=QUEUE_LENGTH)
        return page(
            "review.html",
            proposals=[p.to_dict() for p in proposals],
            bindings=bindings,
            binding=binding or "",
            recorded=recorded,
        )

    def run_page(
        trace_id: str,
        span: str | None,
        binding: str | None,
        status: int = 200,
        error: str | None = None,
    ) -> HTMLResponse:
        if not re.fullmatch(TRACE_ID_PATTERN, trace_id):
            raise HTTPException(400, "trace id must be 32 hex characters")
        data = run_review(store, trace_id.lower(), span, conventions, recompute)
        if data is None:
            return page("missing.html", 404, trace_id=trace_id.lower())
        scored = list(dict.fromkeys(row["binding"] for row in data["scores"]))
        return page(
            "review_run.html",
            status,
            **data,
            bindings=scored + [b for b in bindings if b not in scored],
            binding=binding or (scored[0] if scored else ""),
            span_id=span or "",
            error=error,
            thresholds={name: thresholds.of_binding(name) for name in bindings + scored},
        )

    @router.get("/ui/review/{trace_id}")
    def review_run(
        trace_id: str, span: str | None = None, binding: str | None = None
    ) -> HTMLResponse:
        return run_page(trace_id, span or None, binding or None)

    @router.post("/ui/review/{trace_id}")
    async def record_verdict(trace_id: str, request: Request) -> Response:
        form = form_fields(await request.body())
        try:
            verdict = _verdict(form, trace_id)
            if verdict.binding not in bindings:
                raise ValueError(f"no binding named {verdict.binding!r} in scorers")
        except (ValidationError, ValueError) as exc:
            message = (
                "; ".join(e["msg"] for e in exc.errors())
                if isinstance(exc, ValidationError)
                else str(exc)
            )
            return await run_in_threadpool(
                run_page, trace_id, form.get("span_id") or None, form.get("binding"), 422, message
            )
        await run_in_threadpool(feedback.record, [verdict.feedback(datetime.now(UTC))])
        return RedirectResponse(f"/ui/review?recorded={quote(verdict.trace_id)}", 303)

    return router
