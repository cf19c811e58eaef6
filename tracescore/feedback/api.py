"""REST API of feedback: record, list and delete verdicts; calibration; the review queue."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field, model_validator

from tracescore.feedback.report import Thresholds, calibration_report, since_moment
from tracescore.feedback.review import ReviewQueue
from tracescore.store import SpanStore
from tracescore.store.feedback import Feedback, FeedbackStore

if TYPE_CHECKING:
    from tracescore.config import Config

TRACE_ID = r"^[0-9a-fA-F]{32}$"
SPAN_ID = r"^[0-9a-fA-F]{16}$"


class FeedbackIn(BaseModel):
    """A verdict on a run: ``binding`` (or a free ``name``), and a ``value`` and/or ``label``."""

    trace_id: str = Field(pattern=TRACE_ID)
    span_id: str | None = Field(None, pattern=SPAN_ID)
    """The judged run's span; omitted: the trace's run(s)."""
    binding: str | None = Field(None, max_length=100)
    name: str | None = Field(None, max_length=100)
    """An evaluation name no binding scores (``thumbs``); ``binding`` is checked, this is not."""
    value: float | None = None
    """On the binding's scale (0 to 1 for the prebuilt scorers)."""
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
        if self.value is not None and not math.isfinite(self.value):
            raise ValueError("value must be a finite number")
        return self

    def feedback(self, now: datetime) -> Feedback:
        return Feedback(
            trace_id=self.trace_id.lower(), span_id=self.span_id.lower() if self.span_id else None,
            name=self.binding or self.name or "", source="api", created_at=now, value=self.value,
            label=self.label, comment=self.comment, author=self.author,
        )  # fmt: skip


def _since(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return since_moment(text, datetime.now(UTC))
    except ValueError as exc:
        raise HTTPException(422, f"since: {exc}") from None


def feedback_router(settings: Config, store: SpanStore) -> APIRouter:
    config = settings.feedback
    thresholds = Thresholds.of(settings)
    bindings = [binding.name for binding in settings.scorers]
    router = APIRouter(prefix="/api", tags=["feedback"])
    feedback = FeedbackStore(store)
    queue = ReviewQueue.of(settings, store.engine)

    @router.post("/feedback", status_code=201)
    async def record_feedback(item: FeedbackIn) -> dict[str, str]:
        """Record a verdict; a second one by the same author on the same run replaces it."""
        if item.binding is not None and item.binding not in bindings:
            raise HTTPException(422, f"binding: no binding named {item.binding!r} in scorers")
        (item_id,) = await run_in_threadpool(feedback.record, [item.feedback(datetime.now(UTC))])
        return {"id": item_id}

    @router.get("/feedback")
    async def list_feedback(
        trace_id: str | None = Query(None, pattern=TRACE_ID),
        binding: str | None = Query(None, description="a binding or free evaluation name"),
        since: str | None = Query(None, description="a duration back from now (7d) or an ISO time"),
        limit: int = Query(100, ge=1, le=1000),
    ) -> dict[str, Any]:
        """Newest first, from the API and OTLP alike (``source``)."""
        found = await run_in_threadpool(
            feedback.find, trace_id=trace_id.lower() if trace_id else None, name=binding,
            since=_since(since), limit=limit,
        )  # fmt: skip
        return {"feedback": found}

    @router.delete("/feedback/{item_id}", status_code=204)
    async def delete_feedback(item_id: str) -> None:
        if not await run_in_threadpool(feedback.delete, item_id):
            raise HTTPException(404, f"feedback {item_id} not found")

    @router.get("/calibration")
    async def calibration(
        binding: str,
        scorer_version: str | None = None,
        since: str | None = Query(None, description="feedback recorded since: 7d or an ISO time"),
        threshold: float | None = Query(None, description="pass/fail cut; default the binding's"),
    ) -> dict[str, Any]:
        """How the binding's scores agree with feedback on the same runs: n, MAE, Spearman,
        Cohen's kappa and the confusion matrix, overall and per scorer version and judge model."""
        cut = threshold if threshold is not None else thresholds.cut(binding)
        start = _since(since)

        def report() -> dict[str, Any]:
            with store.engine.connect() as connection:
                return calibration_report(
                    connection, binding, cut, config, since=start, scorer_version=scorer_version
                )

        return await run_in_threadpool(report)

    @router.get("/review-queue")
    async def review_queue(
        binding: str | None = None, limit: int = Query(20, ge=1, le=500)
    ) -> dict[str, Any]:
        """Unreviewed runs worth a look, each with ``why`` it is proposed (see the docs)."""
        proposals = await run_in_threadpool(
            queue.propose, datetime.now(UTC), binding=binding, limit=limit
        )
        return {"runs": [proposal.to_dict() for proposal in proposals]}

    return router
