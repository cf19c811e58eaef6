"""The monitoring REST API and the Prometheus endpoint, as a router the collector app includes.

Handlers are plain (sync) functions: FastAPI runs them in its thread pool, so the blocking
database reads never stall the event loop that serves OTLP ingest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, HTTPException, Path, Query, Response
from fastapi.exceptions import RequestValidationError

from tracescore import metrics
from tracescore.monitor.config import MonitorConfig, SegmentColumn
from tracescore.monitor.names import BindingNames
from tracescore.monitor.silences import (
    Silence,
    SilenceIn,
    active_silences,
    add_silence,
    remove_silence,
)
from tracescore.restapi import (
    LEGACY,
    PROBLEM_RESPONSES,
    ApiVersion,
    DurationParam,
    Moment,
    RowId,
    TraceId,
    WindowParam,
    moment_query,
)
from tracescore.store import Database
from tracescore.store.alerts import states_and_events
from tracescore.store.score_aggregates import aggregate_scores, coverage
from tracescore.store.score_reads import ScoreFilter, list_scores
from tracescore.store.scores import ScoreStatus, StoredScore
from tracescore.times import utc_text

FillSteps = Callable[[Iterable[StoredScore]], None]
"""Fills in the steps of the score rows stored without them (code scores': see
:mod:`tracescore.pipeline.recomputed_steps`, a part above this one that the service hands in)."""

SUMMARY_QUANTILES = (0.1, 0.5, 0.9)
MAX_SUMMARY_BUCKETS = 10_000
"""Buckets a summary may span, so one request cannot ask for millions of groups."""


def _none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else value


def _range(since: datetime | None, until: datetime | None) -> tuple[datetime, datetime]:
    """The asked range, defaulting to the last 24 hours."""
    end = until or datetime.now(UTC)
    start = since or end - timedelta(days=1)
    if start >= end:
        raise HTTPException(422, "since must be before until")
    return start, end


def silence_out(silence: Silence) -> dict[str, Any]:
    return {
        "id": silence.id,
        "rule": silence.rule,
        "segment": silence.segment,
        "kind": silence.kind,
        "author": silence.author,
        "note": silence.note,
        "created_at": utc_text(silence.created_at),
        "expires_at": utc_text(silence.expires_at),
    }


Since = Annotated[Moment | None, moment_query("from (inclusive; default 24 hours before until)")]
Until = Annotated[Moment | None, moment_query("to (exclusive; default now)")]


def create_monitor_router(
    engine: Database,
    config: MonitorConfig | None = None,
    version: ApiVersion = LEGACY,
    fill_steps: FillSteps | None = None,
    bindings: Collection[str] | None = None,
    rules: Collection[str] | None = None,
) -> APIRouter:
    """The monitoring routes under ``version``'s prefix (``/metrics`` with the unversioned ones);
    ``/scores?steps=true`` fills in code scores' steps with ``fill_steps``. ``bindings``: the
    names the configuration binds (None: any name is taken); ``rules``: likewise the alert
    rules' names (a ``rule`` neither configured nor in stored rows is a 404).

    Under ``/api/v1`` the summary's series are labelled by ``binding`` (what the configuration
    names); the deprecated ``/api`` alias keeps labelling them by ``scorer`` id."""
    config = config or MonitorConfig()
    router = version.router("", "monitoring")
    outer = APIRouter()

    known = BindingNames(engine, bindings).require
    configured_rules = frozenset(rules) if rules is not None else None

    def rule_known(rule: str | None, stored: bool) -> None:
        """A rule named but neither configured nor in any row the answer read is a typo: a
        removed rule's stored states and silences stay readable."""
        if rule is None or stored or configured_rules is None or rule in configured_rules:
            return
        raise HTTPException(404, f"no alert rule named {rule!r} in alerts.rules or stored states")

    @router.get("/scores", summary="Score rows, newest first", responses=version.listing)
    def scores(
        scorer: str | None = None,
        scorer_version: str | None = None,
        binding: str | None = None,
        agent: str | None = None,
        service: str | None = None,
        model: str | None = None,
        status: ScoreStatus | None = None,
        trace_id: Annotated[TraceId | None, Query(description="one trace's scores")] = None,
        since: Since = None,
        until: Until = None,
        limit: Annotated[int, Query(ge=1)] = 100,
        cursor: str | None = None,
        steps: bool = False,
    ) -> dict[str, Any]:
        """Score rows, newest first; pass ``next_cursor`` back as ``cursor`` for the next page.
        A ``binding`` neither configured nor carried by stored scores is a 404; ``agent``,
        ``service``, ``model`` and ``scorer`` filter on what runs reported and may match
        nothing."""
        known(binding)
        if limit > config.max_page_size:
            raise HTTPException(422, f"limit is at most {config.max_page_size}")
        where = ScoreFilter(
            scorer=scorer,
            scorer_version=scorer_version,
            binding=binding,
            agent=agent,
            service=service,
            model=model,
            status=status,
            since=since,
            until=until,
            trace_id=trace_id.lower() if trace_id else None,
        )
        try:
            with engine.connect() as connection:
                items, next_cursor = list_scores(connection, where, limit, cursor, with_steps=steps)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        if steps and fill_steps is not None:
            fill_steps(cast(list[StoredScore], items))  # with_steps: whole rows
        return version.page(items, "items", next_cursor)

    @router.get(
        "/scores/summary",
        summary="Score statistics per binding and time bucket",
        responses=version.listing,
    )
    def summary(
        page: WindowParam,
        scorer: str | None = None,
        binding: str | None = None,
        agent: str | None = None,
        service: str | None = None,
        model: str | None = None,
        since: Since = None,
        until: Until = None,
        bucket: Annotated[DurationParam | None, Query(description="a duration; 1h if none")] = None,
        group_by: Annotated[list[SegmentColumn], Query()] = [],  # noqa: B006 (FastAPI copies it)
    ) -> dict[str, Any]:
        """Per binding (``scorer`` id on the deprecated alias) × time bucket (× ``group_by``
        columns): count, mean, p10/p50/p90, error rate, and ``failed``/``fail_rate``: the scored
        runs that failed their binding's pass threshold (labelled so when scored). An unknown
        ``binding`` is a 404."""
        known(binding)
        bucket_seconds = int(bucket or 3600)
        start, end = _range(since, until)
        if (
            bucket_seconds < 1
            or (end - start).total_seconds() / bucket_seconds > MAX_SUMMARY_BUCKETS
        ):
            raise HTTPException(
                422, f"bucket must be ≥ 1s and span at most {MAX_SUMMARY_BUCKETS} buckets"
            )
        where = ScoreFilter(
            scorer=scorer,
            binding=binding,
            agent=agent,
            service=service,
            model=model,
            since=start,
            until=end,
        )
        label = "scorer_id" if version.legacy else "binding"
        columns = [label, *(c for c in dict.fromkeys(group_by) if c != label)]
        with engine.connect() as connection:
            groups = aggregate_scores(
                connection,
                where,
                columns,
                bucket_seconds=bucket_seconds,
                quantiles=SUMMARY_QUANTILES,
            )
        series = []
        for group in groups:
            labels = dict(zip(columns, group.group, strict=True))
            series.append(
                {
                    ("scorer" if version.legacy else "binding"): labels.pop(label),
                    **labels,
                    "bucket": utc_text(group.bucket),
                    "count": group.moments.n,
                    "mean": _none_if_nan(group.moments.mean),
                    **{f"p{round(q * 100)}": _none_if_nan(v) for q, v in group.quantiles.items()},
                    "attempted": group.attempted,
                    "errors": group.errors,
                    "failed_runs": group.failed_runs,
                    "error_rate": group.error_rate,
                    "failed": group.failed,
                    "fail_rate": group.fail_rate,
                }
            )
        series.sort(
            key=lambda row: tuple(
                str(row[c])
                for c in ("scorer" if version.legacy else "binding", "bucket", *columns[1:])
            )
        )
        items, next_cursor = page.cut(series)
        return version.page(
            items,
            "series",
            next_cursor,
            since=utc_text(start),
            until=utc_text(end),
            bucket_seconds=bucket_seconds,
            group_by=columns[1:],
        )

    @router.get(
        "/coverage",
        summary="Runs eligible, sampled and scored per binding",
        responses=version.listing,
    )
    def coverage_view(
        page: WindowParam,
        since: Since = None,
        until: Until = None,
        binding: str | None = None,
    ) -> dict[str, Any]:
        """Per binding: runs eligible (passed the filter), sampled, and scored. A ``binding``
        the configuration does not name is a 404, not a row of zeros."""
        known(binding)
        start, end = _range(since, until)
        with engine.connect() as connection:
            found = coverage(connection, start, end, binding)
        items, next_cursor = page.cut([entry.to_dict() for entry in found])
        return version.page(
            items, "bindings", next_cursor, since=utc_text(start), until=utc_text(end)
        )

    @router.get(
        "/alerts",
        summary="Alert rule states and the latest notifications",
        responses=version.listing,
    )
    def alerts(
        page: WindowParam,
        state: Literal["ok", "firing"] | None = None,
        rule: str | None = None,
        events: Annotated[int, Query(ge=0, le=1000)] = 50,
    ) -> dict[str, Any]:
        """Current state of every rule × segment evaluated so far, and the latest notifications."""
        state_rows, event_rows = states_and_events(engine, state=state, rule=rule, events=events)
        rule_known(rule, bool(state_rows or event_rows))
        states = [
            {
                "rule": row["rule"],
                "segment": row["segment"],
                "state": row["state"],
                "since": utc_text(row["since"]),
                "evaluated_at": utc_text(row["evaluated_at"]),
                "value": row["value"],
                "summary": row["summary"],
                "details": row["details"],
                "notified": row["notified"],
            }
            for row in state_rows
        ]
        events_listed = [
            {
                "id": row["id"],
                "rule": row["rule"],
                "segment": row["segment"],
                "status": row["status"],
                "at": utc_text(row["at"]),
                "summary": row["payload"].get("summary"),
                "pending": row["pending"],
                "attempts": row["attempts"],
                "last_error": row["last_error"],
            }
            for row in event_rows
        ]
        items, next_cursor = page.cut(states)
        return version.page(
            items,
            "states",
            next_cursor,
            firing=sum(row["state"] == "firing" for row in state_rows),
            events=events_listed,
        )

    @router.post(
        "/alerts/silences",
        status_code=201,
        summary="Silence or acknowledge an alert for a while",
        responses={201: {"description": "the stored silence, with its id and expiry"}},
    )
    def silence(body: SilenceIn) -> dict[str, Any]:
        """Silence or acknowledge a rule's alert (or one segment's) for ``duration``. A
        ``rule`` that ``alerts.rules`` does not name is refused (422), as a verdict's unknown
        binding is: a typo would silence nothing."""
        if configured_rules is not None and body.rule not in configured_rules:
            where, why = ("body", "rule"), f"no alert rule named {body.rule!r} in alerts.rules"
            raise RequestValidationError([{"loc": where, "msg": why, "type": "value_error"}])
        return silence_out(add_silence(engine, body, datetime.now(UTC).timestamp()))

    @router.get(
        "/alerts/silences",
        summary="Silences and acknowledgements in force",
        responses=version.listing,
    )
    def silences(
        page: WindowParam,
        rule: Annotated[str | None, Query(description="only this rule's")] = None,
    ) -> dict[str, Any]:
        """Silences and acknowledgements that have not expired, oldest first."""
        with engine.connect() as connection:
            found = active_silences(connection, datetime.now(UTC).timestamp(), rule)
        rule_known(rule, bool(found))
        items, next_cursor = page.cut([silence_out(item) for item in found])
        return version.page(items, "items", next_cursor)

    @router.delete(
        "/alerts/silences/{silence_id}",
        status_code=204,
        summary="End a silence or acknowledgement",
        responses={
            204: {"description": "ended"},
            404: {**PROBLEM_RESPONSES[404], "description": "no silence in force with this id"},
        },
    )
    def unsilence(silence_id: Annotated[RowId, Path()]) -> None:
        """End a silence or acknowledgement before it expires."""
        if not remove_silence(engine, silence_id):
            raise HTTPException(404, f"no silence {silence_id}")

    outer.include_router(router)
    if version.legacy:

        @outer.get("/metrics", include_in_schema=False)
        def prometheus() -> Response:
            body, content_type = metrics.exposition()
            return Response(body, media_type=content_type)

    return outer
