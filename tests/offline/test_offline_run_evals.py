"""``run_evals``: datasets of runs or of ``{input, ground_truth}`` items, with and without a target."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from tests.support.custom_scorers import answer_present
from tests.support.paths import FIXTURES
from tracescore import arun_evals, run_evals
from tracescore.offline.inputs import read_runs
from tracescore.scorers.code.completeness import create_completeness_scorer

MASTRA_RUNS = FIXTURES / "runs" / "mastra_runs.jsonl"


def _mastra_items() -> list[dict]:
    return [json.loads(line) for line in MASTRA_RUNS.read_text().splitlines()]


def test_mastra_runs_scored_like_the_scorers_score_them() -> None:
    items = _mastra_items()
    completeness = create_completeness_scorer()
    result = run_evals(items, [completeness, "tool-call-accuracy-code:expected_tool=weatherTool"])
    assert [r.index for r in result.items] == list(range(len(items)))
    expected = [completeness.run_sync(item).score for item in items]
    assert [r.scores["completeness-scorer"]["score"] for r in result.items] == expected
    assert result.scores["completeness-scorer"] == pytest.approx(sum(expected) / len(expected))
    tool_scores = [r.scores["tool-call-accuracy-code"]["score"] for r in result.items]
    called = ["weatherTool" in json.dumps(item["output"]) for item in items]
    assert tool_scores == [1.0 if c else 0.0 for c in called]


def test_extracted_runs_and_our_json_shape_are_accepted() -> None:
    runs = read_runs([FIXTURES / "captures" / "mastra"])
    dumped = [run.model_dump(mode="json", by_alias=True) for run in runs]
    from_runs = run_evals(runs, ["keyword-coverage"])
    from_dicts = run_evals(dumped, ["keyword-coverage"])
    assert len(from_runs.items) == len(runs) > 0
    assert [r.scores["keyword-coverage"]["score"] for r in from_runs.items] == [
        r.scores["keyword-coverage"]["score"] for r in from_dicts.items
    ]
    # Each item is scored even when it is not the run standing for its trace (an LLM run).
    assert all(r.scores for r in from_runs.items)


def test_sync_and_async_targets_and_item_callbacks() -> None:
    data = [
        {"input": "What is the weather in Paris?", "ground_truth": "sunny"},
        {"input": "What is the weather in Oslo?", "ground_truth": "snow"},
        "Is it raining in Tokyo?",
    ]
    seen: list[int] = []

    def agent(question: str) -> str:
        return f"Here is the weather: {question.removeprefix('What is the ')}".rstrip("?")

    async def async_agent(question: str) -> dict:
        await asyncio.sleep(0.01)
        return {"text": "I cannot say."}

    result = run_evals(
        data,
        ["completeness", answer_present],
        target=agent,
        on_item_complete=lambda item: seen.append(item.index),
    )
    assert sorted(seen) == [0, 1, 2]
    assert result.items[0].output == "Here is the weather: weather in Paris"
    assert result.items[0].run.ground_truth == "sunny"
    assert result.scores["answer-present"] == 1.0
    assert result.items[0].scores["completeness"]["score"] > 0.5

    async def collect(item) -> None:
        seen.append(-item.index)

    weak = asyncio.run(
        arun_evals(data, ["completeness"], target=async_agent, on_item_complete=collect)
    )
    assert weak.items[2].output == {"text": "I cannot say."}
    assert weak.scores["completeness"] < result.scores["completeness"]
    assert sorted(seen)[:3] == [-2, -1, 0]


def test_target_failures_are_reported_per_item() -> None:
    def flaky(question: str) -> str:
        if "Oslo" in question:
            raise TimeoutError("agent timed out")
        return "An answer about the weather."

    result = run_evals(
        [{"input": "Paris weather"}, {"input": "Oslo weather"}], ["completeness"], target=flaky
    )
    assert result.items[0].error is None and result.items[0].scores
    assert result.items[1].error == "TimeoutError: agent timed out" and result.items[1].scores == {}
    assert result.summaries[0].n == 1


def test_run_evals_works_inside_a_running_event_loop() -> None:
    async def inside() -> float | None:
        return run_evals(
            [{"input": "hello there", "output": "hello there"}], ["completeness"]
        ).scores["completeness"]

    assert asyncio.run(inside()) == 1.0


def test_import_tracescore_stays_light() -> None:
    """``run_evals`` is exported from ``tracescore`` but loads its stack on first use only."""
    code = (
        "import sys, tracescore; "
        "print(sorted(m for m in ('tracescore.offline.runner', 'sqlalchemy', 'pydantic') if m in sys.modules)); "
        "tracescore.run_evals; print('tracescore.offline.runner' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split("\n")[:2] == ["[]", "True"]
