"""REST API of feedback: record, list and delete verdicts; calibration; the review queue."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import ConfigDict, Field, model_validator

from tracescore.cursors import cursor_int, decode_cursor, encode_cursor
from tracescore.feedback.config import FeedbackSettings
from tracescore.feedback.report import Thresholds, calibration_report
from tracescore.feedback.review import ReviewQueue
from tracescore.monitor.names import BindingNames
from tracescore.pipeline.feedback_triggers import verdict_triggers
from tracescore.pipeline.learnt_thresholds import PassThreshold
from tracescore.restapi import (
    LEGACY,
    PROBLEM_RESPONSES,
    SPAN_ID_PATTERN,
    TRACE_ID_PATTERN,
    ApiVersion,
    Body,
    FeedbackId,
    Finite,
    Moment,
    TraceId,
    moment_query,
)
from tracescore.store import SpanStore
from tracescore.store.feedback import Feedback, FeedbackStore
from tracescore.store.score_reads import time_cursor, time_position
from tracescore.times import utc_text


class FeedbackIn(Body):
    """A verdict on a run: ``binding`` (or a free ``name``), and a ``value`` and/or ``label``."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "trace_id": "5c5f09670fb9455390ed367ef572e9f7",
                    "span_id": "5c5f09670fb90001",
                    "binding": "faithfulness",
                    "value": 0.1,
                    "label": "fail",
                    "comment": "the refund policy it quotes does not exist",
                    "author": "ana",
                }
            ]
        }
    )

    trace_id: str = Field(pattern=TRACE_ID_PATTERN)
    span_id: str | None = Field(None, pattern=SPAN_ID_PATTERN)
    """The judged run's span; omitted: the trace's run(s)."""
    binding: str | None = Field(None, max_length=100)
    name: str | None = Field(None, max_length=100)
    """An evaluation name no binding scores (``thumbs``); ``binding`` is checked, this is not."""
    value: Finite | None = Field(None, examples=[0.8])
    """On the binding's scale (0 to 1 for the prebuilt scorers, 0 to ``options.scale`` when
    the binding sets one); a value outside it is refused (422)."""
    label: str | None = Field(None, min_length=1, max_length=50)
    """``pass``/``fail`` (or ``good``/``bad``, ``thumbs_up``/``thumbs_down``...)."""
    comment: str | None = Field(None, max_length=20_000)
    author: str = Field("", max_length=200)
    """Who; one verdict per author and run: posting again replaces it."""

    @model_validator(mode="after")
    def _complete(self) -> FeedbackIn:
        if (self.binding is None) == (self.name is None):
            raise ValueError("give 'binding' (a scorers entry) or 'name', not both")
        if self.value is None and self.label is None:
            raise ValueError("give a 'value', a 'label' or both")
        return self

    def feedback(self, now: datetime) -> Feedback:
        return Feedback(
            trace_id=self.trace_id.lower(),
            span_id=self.span_id.lower() if self.span_id else None,
            name=self.binding or self.name or "",
            source="api",
            created_at=now,
            value=self.value,
            label=self.label,
            comment=self.comment,
            author=self.author,
        )


def scales(settings: FeedbackSettings) -> dict[str, float]:
    """The highest score of each binding whose scale is known: the prebuilt scorers score 0 to
    1, or to their ``scale`` option; a custom scorer's range is its own unless it says."""
    return {
        binding.name: float(binding.options.get("scale", 1.0))
        for binding in settings.scorers
        if ":" not in binding.scorer or "scale" in binding.options
    }


def feedback_router(
    settings: FeedbackSettings, store: SpanStore, version: ApiVersion = LEGACY
) -> APIRouter:
    """The feedback routes. Under ``/api/v1`` a verdict on a trace the store does not hold is
    refused (404) and listed verdicts carry ``binding``; the deprecated ``/api`` alias still
    takes verdicts ahead of their trace's spans and lists the evaluation ``name`` only."""
    config = settings.feedback
    thresholds = Thresholds.of(settings, store.engine)
    bindings = [binding.name for binding in settings.scorers]
    highest = scales(settings)
    router = version.router("", "feedback")
    feedback = FeedbackStore(store, verdict_triggers(settings.scorers))
    queue = ReviewQueue.of(settings, store.engine)
    known = BindingNames(store.engine, bindings).require

    @router.post(
        "/feedback",
        status_code=201,
        summary="Record a verdict on a run",
        responses={
            404: {
                **PROBLEM_RESPONSES[404],
                "description": "no trace with this id is stored (/api/v1 only)",
            },
            422: {
                **PROBLEM_RESPONSES[422],
                "description": "an invalid field, an unknown binding or a value outside the binding's scale",
            },
        },
    )
    async def record_feedback(item: FeedbackIn) -> dict[str, str]:
        """Record a verdict; a second one by the same author on the same run replaces it."""
        if item.binding is not None and item.binding not in bindings:
            raise HTTPException(422, f"binding: no binding named {item.binding!r} in scorers")
        top = highest.get(item.binding or "")
        if top is not None and item.value is not None and not 0 <= item.value <= top:
            raise HTTPException(
                422, f"value: {item.binding!r} scores from 0 to {top:g}, not {item.value:g}"
            )
        if (
            not version.legacy
            and await run_in_threadpool(store.trace_summary, item.trace_id) is None
        ):
            raise HTTPException(404, f"trace {item.trace_id.lower()} not found")
        (item_id,) = await run_in_threadpool(feedback.record, [item.feedback(datetime.now(UTC))])
        return {"id": item_id}

    @router.get("/feedback", summary="Recorded verdicts, newest first", responses=version.listing)
    async def list_feedback(
        trace_id: TraceId | None = None,
        binding: str | None = Query(None, description="a binding or free evaluation name"),
        since: Annotated[Moment | None, moment_query("recorded at or after")] = None,
        limit: int = Query(100, ge=1, le=1000),
        cursor: Annotated[str | None, Query(description="the previous page's next_cursor")] = None,
    ) -> dict[str, Any]:
        """Newest first, from the API and OTLP alike (``source``). Each verdict's ``binding``
        is its evaluation ``name`` when that is a binding (null for a free name)."""
        try:
            after = time_position(cursor) if cursor else None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        found = await run_in_threadpool(
            feedback.find,
            trace_id=trace_id.lower() if trace_id else None,
            name=binding,
            since=since,
            limit=limit + 1,
            after=after,
        )
        next_cursor = None
        if len(found) > limit:
            found = found[:limit]
            last = found[-1]
            next_cursor = time_cursor(datetime.fromisoformat(last["created_at"]), last["id"])
        if not version.legacy:
            found = [
                {
                    "binding": item["name"] if item["name"] in bindings else None,
                    **item,
                    "created_at": utc_text(datetime.fromisoformat(item["created_at"])),
                }
                for item in found
            ]
        return version.page(found, "feedback", next_cursor)

    @router.delete("/feedback/{item_id}", status_code=204, summary="Delete a verdict")
    async def delete_feedback(item_id: Annotated[FeedbackId, Path()]) -> None:
        if not await run_in_threadpool(feedback.delete, item_id):
            raise HTTPException(404, f"feedback {item_id} not found")

    @router.get("/calibration", summary="How a binding's scores agree with feedback")
    async def calibration(
        binding: str,
        scorer_version: str | None = None,
        since: Annotated[Moment | None, moment_query("feedback recorded at or after")] = None,
        threshold: Finite | None = Query(None, description="pass/fail cut; default the binding's"),
    ) -> dict[str, Any]:
        """How the binding's scores agree with feedback on the same runs: n, MAE, Spearman,
        Cohen's kappa and the confusion matrix, overall and per scorer version and judge model.
        ``threshold`` is the cut and ``threshold_source`` where it came from (``binding``,
        ``learnt from 34 verdicts``, ``scorer default``, ``feedback default``, ``asked``). A
        binding neither configured nor stored is a 404, not a report of zeros."""
        known(binding)

        def report() -> dict[str, Any]:
            cut = (
                PassThreshold(threshold, "asked")
                if threshold is not None
                else thresholds.of_binding(binding)
            )
            with store.engine.connect() as connection:
                return calibration_report(
                    connection, binding, cut, config, since=since, scorer_version=scorer_version
                )

        return await run_in_threadpool(report)

    @router.get("/review-queue", summary="Unreviewed runs worth a look", responses=version.listing)
    async def review_queue(
        binding: str | None = None,
        limit: int = Query(20, ge=1, le=500),
        cursor: Annotated[str | None, Query(description="the previous page's next_cursor")] = None,
    ) -> dict[str, Any]:
        """Unreviewed runs worth a look, each with ``why`` it is proposed (see the docs). Each
        page is a queue of its own among the runs earlier pages did not propose."""
        known(binding)
        try:
            seed, number = (
                (cursor_int(part) for part in decode_cursor(cursor, 2))
                if cursor
                else (random.randrange(2**31), 0)
            )
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        proposals = await run_in_threadpool(
            queue.pages, datetime.now(UTC), binding=binding, limit=limit, seed=seed, page=number
        )
        full = len(proposals) == limit
        next_cursor = encode_cursor(str(seed), str(number + 1)) if full else None
        return version.page([p.to_dict() for p in proposals], "runs", next_cursor)

    return router
