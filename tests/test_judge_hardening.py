"""Issue 32: the judge fed and read robustly — cache keys, tolerant JSON, failed calls' spend,
verdict-count repairs — against the scripted judge server over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from tests.judge_server import JudgeServer, Reply, error_reply, json_reply
from tracescore import metrics
from tracescore.judge import JudgeConfig, LiteLLMJudge, VerdictCache
from tracescore.judge.protocol import JudgeRequest
from tracescore.scorers import create_toxicity_scorer
from tracescore.scorers.llm.answer_relevancy import RelevancyResults
from tracescore.scorers.llm.answer_similarity import SimilarityAnalysis
from tracescore.scorers.llm.context_relevance import RelevanceEvaluations
from tracescore.scorers.llm.noise_sensitivity import NoiseAnalysis
from tracescore.scorers.utils import make_agent_run, make_test_message


class Claims(BaseModel):
    claims: list[str]


def request(prompt: str = "Extract the claims.") -> JudgeRequest:
    return JudgeRequest(prompt=prompt, instructions="You extract claims.", schema=Claims,
                        scorer_id="test-scorer", scorer_version="1", step="preprocess")


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


@pytest.mark.parametrize("change", [
    {"temperature": 0.7},
    {"extra": {"top_p": 0.5}},
    {"extra": {"seed": 7}},
    {"max_tokens": 50},
    {"response_format": "json_object"},
    {"api_base": "other"},
])
async def test_every_setting_that_changes_the_answer_changes_the_cache_key(
    server: JudgeServer, change: dict[str, object]
) -> None:
    """Issue 32 (6): temperature, api_base and extra were not in the key, so changing them kept
    serving the old verdicts."""
    server.script("Claims", json_reply({"claims": ["a"]}))
    cache = VerdictCache()
    base = JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, timeout=5)
    await LiteLLMJudge(base, cache=cache).complete(request())
    if change.get("api_base") == "other":  # the same scripted judge under another address
        change = {"api_base": server.base_url.replace("127.0.0.1", "localhost")}
    changed = LiteLLMJudge(base.model_copy(update=change), cache=cache)
    answer = await changed.complete(request())
    assert not answer.cached and server.count == 2
    # Settings that cannot change the answer keep serving it.
    paced = LiteLLMJudge(base.model_copy(update={"timeout": 9.0, "max_retries": 1}), cache=cache)
    assert (await paced.complete(request())).cached and server.count == 2


# --- 5: tolerant reading ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [
    '{"claims": ["a"]} (I could also add {more} claims.)',
    'Sure! Here it is: {"claims": ["a"]}\n\nAnd a second try: {"claims": ["b"]}',
    '```json\n{"claims": ["a"]}\n```\nLet me know if {anything} is missing.',
])
async def test_the_first_complete_json_object_is_read_without_a_repair(
    server: JudgeServer, answer: str
) -> None:
    """Issue 32 (5): the object was cut from the first "{" to the last "}", so prose with braces
    after it cost a repair call (and an error when the repair had it too)."""
    server.script("Claims", Reply(content=answer))
    judge = LiteLLMJudge(JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url,
                                     timeout=5, cache=False))
    response = await judge.complete(request())
    assert response.output == Claims(claims=["a"])
    assert server.count == 1 and response.repairs == 0


async def test_null_optional_strings_and_enum_case_are_read(server: JudgeServer) -> None:
    """Issue 32 (5): ``"reason": null`` and ``"relevanceLevel": "High"`` each cost a repair."""
    server.script("RelevanceEvaluations", json_reply({
        "evaluations": [{"context_index": 0, "contextPiece": None, "relevanceLevel": " High",
                         "wasUsed": True, "reasoning": None}],
        "missingContext": None, "overallAssessment": None}))
    server.script("NoiseAnalysis", json_reply({
        "dimensions": [{"dimension": "accuracy", "impactLevel": "MINIMAL", "specificChanges": None,
                        "noiseInfluence": None}],
        "overallAssessment": None, "majorIssues": None, "robustnessScore": 0.9}))
    server.script("SimilarityAnalysis", json_reply({
        "outputUnits": ["a"], "groundTruthUnits": ["a"],
        "matches": [{"groundTruthUnit": "a", "outputUnit": None, "matchType": "Exact",
                     "explanation": None}],
        "contradictions": [], "extraInOutput": [], "missingFromOutput": []}))
    server.script("RelevancyResults", json_reply({"results": [{"result": "yes", "reason": None}]}))
    judge = LiteLLMJudge(JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url,
                                     timeout=5, cache=False))
    for schema in (RelevanceEvaluations, NoiseAnalysis, SimilarityAnalysis, RelevancyResults):
        asked = JudgeRequest(prompt=f"Judge ({schema.__name__}).", instructions=None, schema=schema,
                             scorer_id="s", scorer_version="1", step="analyze")
        response = await judge.complete(asked)
        assert response.repairs == 0, schema.__name__
    assert server.count == 4
    assert response.output.results[0].reason == ""


async def test_repairs_are_counted_in_the_row_and_the_metric(server: JudgeServer) -> None:
    server.script("Claims", Reply(content='{"claims": ["a",'), json_reply({"claims": ["a"]}))
    judge = LiteLLMJudge(JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url,
                                     timeout=5, cache=False))
    response = await judge.complete(request())
    assert response.repairs == 1 and server.count == 2
    before = metrics.REGISTRY.get_sample_value("tracescore_judge_repairs_total",
                                               {"model": "repair-test"}) or 0
    metrics.judge_call("repair-test", 1, 1, 0.0, 0.1, repairs=response.repairs)
    assert metrics.REGISTRY.get_sample_value("tracescore_judge_repairs_total",
                                             {"model": "repair-test"}) == before + 1


# --- 4: a failed reason keeps the score; failed calls are paid for ----------------------------

async def test_a_failed_reason_step_keeps_the_finished_score(server: JudgeServer) -> None:
    """Issue 32 (4): toxicity computed its score, the reason call failed, and the result was
    ``status=error, score=None``."""
    server.script("ToxicityVerdicts", json_reply({"verdicts": [{"verdict": "yes", "reason": "rude"}]}))
    server.default = error_reply(500, message="reason model down")
    judge = LiteLLMJudge(JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url,
                                     timeout=5, cache=False, max_retries=0))
    result = await create_toxicity_scorer(model=judge).run(RUDE_RUN)
    assert result.status == "ok" and result.score == 1.0 and result.error is None
    assert result.reason is not None
    assert result.reason.startswith("the reason could not be generated: judge openai/gpt-4o-mini")
    reason_step = result.steps[-1]
    assert reason_step.name == "generate_reason" and "reason model down" in (reason_step.error or "")
    assert [call.step for call in result.judge_calls] == ["analyze", "generate_reason"]
    assert result.judge_calls[-1].error is not None


async def test_a_failed_judge_call_counts_its_tokens_and_cost(server: JudgeServer) -> None:
    """Issue 32 (4): a call whose answer stayed invalid after its repair had paid for two
    answers; its tokens and cost were dropped from the row (and so from the caps)."""
    server.script("ToxicityVerdicts", Reply(content="I think it is fine.", usage=(1000, 100)))
    judge = LiteLLMJudge(JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url,
                                     timeout=5, cache=False))
    result = await create_toxicity_scorer(model=judge).run(RUDE_RUN)
    assert result.status == "error" and server.count == 2
    (call,) = result.judge_calls
    assert call.error is not None and call.repairs == 1 and call.attempts == 2
    assert (result.input_tokens, result.output_tokens) == (2000, 200)
    assert result.cost_usd == pytest.approx(2 * (1000 * 0.15e-6 + 100 * 0.6e-6))


RUDE_RUN = make_agent_run(
    input_messages=[make_test_message("Can you help me?", "user", id="u1")],
    output=[make_test_message("Figure it out yourself, idiot.", "assistant", id="a1")],
)
