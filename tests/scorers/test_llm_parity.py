"""The judge scorers give Mastra's own scores on the same judge answers.

``tests/fixtures/parity/llm_judge.jsonl`` holds 24 random cases per LLM scorer, plus the
worked examples of SCORERS.md §8 (marked with their documented result ``doc``): a run, the
answer a judge gives to each prompt step in Mastra's shape (canonical spellings, booleans where
Mastra's schema has them), and the score Mastra's ``@mastra/evals`` 1.10.2 scorer gave with a
mock model answering exactly that (recorded by ``tests/support/record_llm_parity.py``). Here the same
answers come from the scripted judge over real HTTP, so each answer goes through litellm,
tracescore's schema validation and its formula.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.judge_server import JudgeServer, json_reply
from tests.support.paths import FIXTURES
from tests.support.scorer_names import judge_scorer_names
from tracescore.judge import JudgeConfig, LiteLLMJudge
from tracescore.scorers import registry

FIXTURE = FIXTURES / "parity" / "llm_judge.jsonl"
CASES = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]

# The schema (its title is in every request) of each prompt step, in the order Mastra asks them.
STEP_SCHEMAS: dict[str, tuple[str, ...]] = {
    "answer-relevancy": ("AnswerStatements", "RelevancyResults"),
    "answer-similarity": ("SemanticUnits", "SimilarityAnalysis"),
    "bias": ("BiasOpinions", "BiasResults"),
    "context-precision": ("PrecisionVerdicts",),
    "context-relevance": ("RelevanceEvaluations",),
    "faithfulness": ("FaithfulnessClaims", "FaithfulnessVerdicts"),
    "hallucination": ("HallucinationClaims", "HallucinationVerdicts"),
    "noise-sensitivity": ("NoiseAnalysis",),
    "prompt-alignment": ("AlignmentAnalysis",),
    "tool-call-accuracy-llm": ("ToolEvaluations",),
    "toxicity": ("ToxicityVerdicts",),
}


@pytest.fixture(scope="module")
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


def schemas_of(case: dict[str, Any]) -> tuple[str, ...]:
    if case["scorer"] == "prompt-alignment" and case["options"]["evaluationMode"] == "both":
        return (
            "BothAlignmentAnalysis",
        )  # tracescore's both-mode schema, answered in Mastra's shape
    return STEP_SCHEMAS[case["scorer"]]


def test_the_fixture_covers_every_llm_scorer_and_mastra_used_every_answer() -> None:
    assert {case["scorer"] for case in CASES} == set(STEP_SCHEMAS)
    assert sum("doc" in case for case in CASES) == 9
    assert set(judge_scorer_names()) == set(STEP_SCHEMAS)
    for case in CASES:
        assert "error" not in case["mastra"], case["id"]
        assert case["mastra"]["calls"] == len(case["answers"]) + 1, case["id"]  # + the reason


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES])
async def test_same_answers_same_score_as_mastra(server: JudgeServer, case: dict[str, Any]) -> None:
    schemas = schemas_of(case)
    for title, answer in zip(schemas, case["answers"], strict=True):
        server.script(title, json_reply(answer))
    judge = LiteLLMJudge(
        JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, cache=False)
    )
    scorer = registry.get(case["scorer"]).factory(model=judge, **case.get("options", {}))
    before = server.count
    result = await scorer.run(case)
    assert result.status == "ok", (result.error, result.reason)
    assert result.score == pytest.approx(case["mastra"]["score"], abs=1e-9)
    if "doc" in case:  # a worked example of SCORERS.md §8: the documented result too
        assert result.score == case["doc"] == case["mastra"]["score"]
    assert (
        server.count - before == len(schemas) + 1
    )  # every recorded answer asked for, and a reason
