"""``GET /api/compare``: the compare page's figures for two scorer versions of a binding (by
default a changed scorer's re-score: old against new), and the runs they disagree on most,
paged."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from tracescore.cursors import cursor_int, decode_cursor, encode_cursor
from tracescore.restapi import LEGACY, ApiVersion, Finite
from tracescore.store import Database, connect
from tracescore.store.score_reads import Disagreement
from tracescore.web.compare import agreement_of, choose, disagreeing

MAX_PAGE = 500


def _item(row: Disagreement) -> dict[str, Any]:
    """A paired run as the API lists it, with its difference and its trace's page."""
    return {
        **row,
        "difference": row["score_b"] - row["score_a"],
        "url": f"/ui/traces/{row['trace_id']}#score-{row['id_b']}",
    }


def compare_router(engine: Database, version: ApiVersion = LEGACY) -> APIRouter:
    router = version.router("/compare", "scores")

    @router.get(
        "",
        summary="Two scorer versions of a binding, paired on the runs both scored",
        responses={
            **version.listing,
            404: {"description": "no binding has scores to compare, or not the one named"},
        },
    )
    def compare(
        binding: str | None = None,
        a: str | None = None,
        b: str | None = None,
        threshold: Finite | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 25,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Version ``a`` against version ``b`` of ``binding``'s scorer on the runs both scored
        ``ok``: how many are paired, each side's mean, the mean difference (B − A), Pearson's r
        and the share given the same pass/fail label (the stored labels, or ``score >=
        threshold``). ``items`` are the paired runs, the largest disagreement first, each with
        both scores and reasons and its trace page's ``url``.

        Without versions, a binding whose scorer changed and re-scored a sample of its runs
        (``rescore_on_change``) is compared old (A) against new (B), and ``rescore`` holds
        that re-score's state (runs sampled, done, re-scored, skipped for budget or rate,
        gone from the span store, the cost estimate); otherwise the binding's two most recently
        scored versions. Without ``binding``, the first binding with a re-score."""
        try:
            offset = cursor_int(decode_cursor(cursor, 1)[0]) if cursor else 0
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        with connect(engine) as connection:
            chosen = choose(connection, binding, a, b)
            if chosen.binding is None or (binding and binding not in chosen.versions):
                raise HTTPException(
                    404,
                    f"no scores of binding {binding!r} to compare"
                    if binding
                    else "no scores to compare",
                )
            rows = disagreeing(connection, chosen, limit + 1, offset)
        agreement = agreement_of(engine, chosen, threshold)
        more = len(rows) > limit
        figures = asdict(agreement) if agreement is not None else None
        return version.page(
            [_item(row) for row in rows[:limit]],
            "items",
            encode_cursor(str(offset + limit)) if more else None,
            binding=chosen.binding,
            version_a=chosen.version_a,
            version_b=chosen.version_b,
            threshold=threshold,
            agreement=figures,
            rescore=chosen.rescore.summary() if chosen.rescore is not None else None,
        )

    return router
