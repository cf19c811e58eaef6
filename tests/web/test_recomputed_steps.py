"""A code score's steps are stored as a marker and computed again when shown (#49), on SQLite
and PostgreSQL: the trace page and ``/api/v1/scores?steps=true`` show the same steps the scorer
gives on the run, saying they were computed again; a judge's steps are stored as they were; once
the trace's spans are gone the page and the API say why the steps cannot be shown.
"""

from __future__ import annotations

import html
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text

from tests.support.judge_server import JudgeServer
from tests.support.paths import CAPTURES
from tests.support.scored_dashboard import dashboard_config, seed_scored_store, stored_scores
from tracescore.config import parse_config
from tracescore.extract import extract_runs
from tracescore.ingest.files import load_traces
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.recomputed_steps import SPANS_GONE
from tracescore.pipeline.score_rows import RECOMPUTE, RECOMPUTE_BEFORE, steps_json
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.service import create_app
from tracescore.store.column_types import pack_json

TRACE = CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"


def timeless(steps: dict[str, Any]) -> dict[str, Any]:
    """Steps without their durations, which differ from one run of a scorer to the next."""
    return {
        **steps,
        "steps": [{k: v for k, v in step.items() if k != "duration_ms"} for step in steps["steps"]],
    }


def test_code_steps_are_computed_when_shown_and_judge_steps_kept(
    db_url: str, judge: JudgeServer
) -> None:
    store = seed_scored_store(db_url, judge, [TRACE])
    try:
        config = parse_config(dashboard_config(judge.base_url))
        client = TestClient(create_app(config, store))
        (trace,) = load_traces([TRACE])
        rows = {row.binding: row for row in stored_scores(store) if row.trace_id == trace.trace_id}
        assert rows["tone"].status == "ok" and rows["tone"].steps == {RECOMPUTE: 1}
        assert rows["answer-present"].steps == {RECOMPUTE: 1}
        judged = rows["faithfulness"].steps
        assert judged and judged["steps"] and judged["steps"][0]["judge_calls"]
        assert rows["exploding"].status == "error" and rows["exploding"].steps  # kept

        tone = next(
            b
            for b in compile_bindings(config.scorers, dict(config.judges), None)
            if b.name == "tone"
        )
        run = next(r for r in extract_runs(trace) if r.span_id == rows["tone"].span_id)
        expected = steps_json(tone.scorer.run_sync(ScorerRun.of(run)))
        assert expected["steps"]

        def api_steps() -> dict[str, Any]:
            items = client.get(
                "/api/v1/scores", params={"trace_id": trace.trace_id, "steps": "true"}
            ).json()["items"]
            return {item["binding"]: item["steps"] for item in items}

        shown = api_steps()
        assert shown["tone"]["recomputed"].startswith("computed again from the trace's spans")
        assert timeless({k: v for k, v in shown["tone"].items() if k != "recomputed"}) == (
            timeless(expected)
        )
        assert shown["faithfulness"] == judged
        page = html.unescape(client.get(f"/ui/traces/{trace.trace_id}").text)
        card = page.split(f'id="score-{rows["tone"].id}"', 1)[1].split("</article>", 1)[0]
        assert f"Step details ({len(expected['steps'])})" in card
        assert "computed again from the trace's spans" in card

        # A row stored before the marker was one letter holds it spelled out: read alike (an
        # unmarked value in its place is shown as stored).
        def store_steps(steps: dict[str, Any]) -> None:
            with store.engine.begin() as connection:
                connection.execute(
                    text("UPDATE scores SET steps = :steps WHERE id = :id"),
                    {"steps": pack_json(steps), "id": bytes.fromhex(rows["tone"].id)},
                )

        store_steps({"unmarked": True})
        assert api_steps()["tone"] == {"unmarked": True}
        store_steps({RECOMPUTE_BEFORE: True})
        assert timeless(api_steps()["tone"] | {"recomputed": ""}) == timeless(
            shown["tone"] | {"recomputed": ""}
        )

        with store.engine.begin() as connection:
            connection.execute(
                text("DELETE FROM spans WHERE trace_id = :t"), {"t": bytes.fromhex(trace.trace_id)}
            )
        gone = api_steps()
        assert gone["tone"] == {"steps": [], "unavailable": SPANS_GONE}
        assert gone["faithfulness"] == judged
        page = html.unescape(client.get(f"/ui/traces/{trace.trace_id}").text)
        assert f"Step details unavailable: {SPANS_GONE}." in page
    finally:
        store.close()
