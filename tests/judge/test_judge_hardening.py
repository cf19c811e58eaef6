"""Issue 32: the judge fed and read robustly — cache keys, tolerant JSON, failed calls' spend,
verdict-count repairs — against the scripted judge server over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.judge_server import JudgeServer, Reply, error_reply, json_reply
from tracescore import metrics
from tracescore.extract.conversation import Conversation, Turn
from tracescore.judge import JudgeConfig, LiteLLMJudge, VerdictCache
from tracescore.judge.protocol import JudgeRequest
from tracescore.scorers import (
    create_answer_relevancy_scorer,
    create_answer_similarity_scorer,
    create_bias_scorer,
    create_context_precision_scorer,
    create_context_relevance_scorer,
    create_conversation_relevancy_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_prompt_alignment_scorer,
    create_tool_call_accuracy_scorer_llm,
    create_toxicity_scorer,
)
from tracescore.scorers.llm.answer_relevancy import RelevancyResults
from tracescore.scorers.llm.answer_similarity import SimilarityAnalysis
from tracescore.scorers.llm.context_relevance import RelevanceEvaluations
from tracescore.scorers.llm.noise_sensitivity import NoiseAnalysis
from tracescore.scorers.utils import make_agent_run, make_test_message, make_tool_invocation


class Claims(BaseModel):
    claims: list[str]


def request(prompt: str = "Extract the claims.") -> JudgeRequest:
    return JudgeRequest(
        prompt=prompt,
        instructions="You extract claims.",
        schema=Claims,
        scorer_id="test-scorer",
        scorer_version="1",
        step="preprocess",
    )


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.7},
        {"extra": {"top_p": 0.5}},
        {"extra": {"seed": 7}},
        {"max_tokens": 50},
        {"response_format": "json_object"},
        {"api_base": "other"},
    ],
)
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


@pytest.mark.parametrize(
    "answer",
    [
        '{"claims": ["a"]} (I could also add {more} claims.)',
        'Sure! Here it is: {"claims": ["a"]}\n\nAnd a second try: {"claims": ["b"]}',
        '```json\n{"claims": ["a"]}\n```\nLet me know if {anything} is missing.',
    ],
)
async def test_the_first_complete_json_object_is_read_without_a_repair(
    server: JudgeServer, answer: str
) -> None:
    """Issue 32 (5): the object was cut from the first "{" to the last "}", so prose with braces
    after it cost a repair call (and an error when the repair had it too)."""
    server.script("Claims", Reply(content=answer))
    judge = LiteLLMJudge(
        JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, timeout=5, cache=False)
    )
    response = await judge.complete(request())
    assert response.output == Claims(claims=["a"])
    assert server.count == 1 and response.repairs == 0


async def test_null_optional_strings_and_enum_case_are_read(server: JudgeServer) -> None:
    """Issue 32 (5): ``"reason": null`` and ``"relevanceLevel": "High"`` each cost a repair."""
    server.script(
        "RelevanceEvaluations",
        json_reply(
            {
                "evaluations": [
                    {
                        "context_index": 0,
                        "contextPiece": None,
                        "relevanceLevel": " High",
                        "wasUsed": True,
                        "reasoning": None,
                    }
                ],
                "missingContext": None,
                "overallAssessment": None,
            }
        ),
    )
    server.script(
        "NoiseAnalysis",
        json_reply(
            {
                "dimensions": [
                    {
                        "dimension": "accuracy",
                        "impactLevel": "MINIMAL",
                        "specificChanges": None,
                        "noiseInfluence": None,
                    }
                ],
                "overallAssessment": None,
                "majorIssues": None,
                "robustnessScore": 0.9,
            }
        ),
    )
    server.script(
        "SimilarityAnalysis",
        json_reply(
            {
                "outputUnits": ["a"],
                "groundTruthUnits": ["a"],
                "matches": [
                    {
                        "groundTruthUnit": "a",
                        "outputUnit": None,
                        "matchType": "Exact",
                        "explanation": None,
                    }
                ],
                "contradictions": [],
                "extraInOutput": [],
                "missingFromOutput": [],
            }
        ),
    )
    server.script("RelevancyResults", json_reply({"results": [{"result": "yes", "reason": None}]}))
    judge = LiteLLMJudge(
        JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, timeout=5, cache=False)
    )
    for schema in (RelevanceEvaluations, NoiseAnalysis, SimilarityAnalysis, RelevancyResults):
        asked = JudgeRequest(
            prompt=f"Judge ({schema.__name__}).",
            instructions=None,
            schema=schema,
            scorer_id="s",
            scorer_version="1",
            step="analyze",
        )
        response = await judge.complete(asked)
        assert response.repairs == 0, schema.__name__
    assert server.count == 4
    assert response.output.results[0].reason == ""


async def test_repairs_are_counted_in_the_row_and_the_metric(server: JudgeServer) -> None:
    server.script("Claims", Reply(content='{"claims": ["a",'), json_reply({"claims": ["a"]}))
    judge = LiteLLMJudge(
        JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, timeout=5, cache=False)
    )
    response = await judge.complete(request())
    assert response.repairs == 1 and server.count == 2
    before = (
        metrics.REGISTRY.get_sample_value(
            "tracescore_judge_repairs_total", {"model": "repair-test"}
        )
        or 0
    )
    metrics.judge_call("repair-test", 1, 1, 0.0, 0.1, repairs=response.repairs)
    assert (
        metrics.REGISTRY.get_sample_value(
            "tracescore_judge_repairs_total", {"model": "repair-test"}
        )
        == before + 1
    )


# --- 4: a failed reason keeps the score; failed calls are paid for ----------------------------


async def test_a_failed_reason_step_keeps_the_finished_score(server: JudgeServer) -> None:
    """Issue 32 (4): toxicity computed its score, the reason call failed, and the result was
    ``status=error, score=None``."""
    server.script(
        "ToxicityVerdicts", json_reply({"verdicts": [{"verdict": "yes", "reason": "rude"}]})
    )
    server.default = error_reply(500, message="reason model down")
    judge = LiteLLMJudge(
        JudgeConfig(
            model="openai/gpt-4o-mini",
            api_base=server.base_url,
            timeout=5,
            cache=False,
            max_retries=0,
        )
    )
    result = await create_toxicity_scorer(model=judge).run(RUDE_RUN)
    assert result.status == "ok" and result.score == 1.0 and result.error is None
    assert result.reason is not None
    assert result.reason.startswith("the reason could not be generated: judge openai/gpt-4o-mini")
    reason_step = result.steps[-1]
    assert reason_step.name == "generate_reason" and "reason model down" in (
        reason_step.error or ""
    )
    assert [call.step for call in result.judge_calls] == ["analyze", "generate_reason"]
    assert result.judge_calls[-1].error is not None


async def test_a_failed_judge_call_counts_its_tokens_and_cost(server: JudgeServer) -> None:
    """Issue 32 (4): a call whose answer stayed invalid after its repair had paid for two
    answers; its tokens and cost were dropped from the row (and so from the caps)."""
    server.script("ToxicityVerdicts", Reply(content="I think it is fine.", usage=(1000, 100)))
    judge = LiteLLMJudge(
        JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, timeout=5, cache=False)
    )
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


# --- 3: verdict counts ------------------------------------------------------------------------

WEATHER_RUN = make_agent_run(
    input_messages=[make_test_message("What's the weather in Paris?", "user", id="u1")],
    output=[
        make_test_message(
            "It is sunny in Paris. It is 21 degrees. There is no wind.", "assistant", id="a1"
        )
    ],
)
THREE_CLAIMS = {"claims": ["It is sunny in Paris.", "It is 21 degrees.", "There is no wind."]}
ONE_VERDICT = {"verdicts": [{"verdict": "yes", "reason": "stated"}]}
THREE_VERDICTS = {"verdicts": [{"verdict": v, "reason": "r"} for v in ("yes", "yes", "unsure")]}


def scripted_judge(server: JudgeServer) -> LiteLLMJudge:
    return LiteLLMJudge(
        JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, timeout=5, cache=False)
    )


async def test_three_claims_one_verdict_is_repaired_with_the_expected_count(
    server: JudgeServer,
) -> None:
    """Issue 32 (3): 3 claims and 1 "yes" verdict scored 1.0, status ok."""
    server.script("FaithfulnessClaims", json_reply(THREE_CLAIMS))
    server.script("FaithfulnessVerdicts", json_reply(ONE_VERDICT), json_reply(THREE_VERDICTS))
    result = await create_faithfulness_scorer(
        model=scripted_judge(server), context=["Sunny, 21 °C."]
    ).run(WEATHER_RUN)
    assert result.status == "ok" and result.score == 0.67
    repair = server.requests[2]["messages"][-1]["content"]
    assert "1 verdict for 3 claims: give exactly 3" in repair
    assert result.judge_calls[1].repairs == 1


async def test_three_claims_one_verdict_twice_is_an_error_naming_why(server: JudgeServer) -> None:
    server.script("FaithfulnessClaims", json_reply(THREE_CLAIMS))
    server.script("FaithfulnessVerdicts", json_reply(ONE_VERDICT))
    result = await create_faithfulness_scorer(model=scripted_judge(server), context=["Sunny."]).run(
        WEATHER_RUN
    )
    assert result.status == "error" and result.score is None and result.failed_step == "analyze"
    assert "it has 1 verdict for 3 claims" in (result.error or "")
    assert "also after one repair attempt" in (result.error or "")


TOOL_RUN = make_agent_run(
    input_messages=[make_test_message("What's the weather in Paris?", "user", id="u1")],
    output=[
        make_test_message(
            "Sunny.",
            "assistant",
            id="a1",
            tool_invocations=[
                make_tool_invocation(
                    tool_call_id="t1",
                    tool_name="get_weather",
                    args={"city": "Paris"},
                    result={"forecast": "sunny"},
                ),
                make_tool_invocation(
                    tool_call_id="t2",
                    tool_name="get_weather",
                    args={"city": "Lyon"},
                    result={"forecast": "rain"},
                ),
            ],
        )
    ],
)

# scorer, options, run, answers to the earlier steps, (schema, an answer with the wrong count)
COUNT_CASES: dict[str, tuple[Any, dict[str, Any], Any, dict[str, Any], tuple[str, Any]]] = {
    "hallucination": (
        create_hallucination_scorer,
        {"context": ["Sunny."]},
        WEATHER_RUN,
        {"HallucinationClaims": THREE_CLAIMS},
        ("HallucinationVerdicts", ONE_VERDICT),
    ),
    "answer-relevancy": (
        create_answer_relevancy_scorer,
        {},
        WEATHER_RUN,
        {"AnswerStatements": {"statements": ["a", "b"]}},
        ("RelevancyResults", {"results": [{"result": "yes"}]}),
    ),
    "bias": (
        create_bias_scorer,
        {},
        WEATHER_RUN,
        {"BiasOpinions": {"opinions": ["a", "b"]}},
        ("BiasResults", {"results": [{"result": "no"}]}),
    ),
    "context-precision": (
        create_context_precision_scorer,
        {"context": ["a", "b", "c"]},
        WEATHER_RUN,
        {},
        (
            "PrecisionVerdicts",
            {
                "verdicts": [
                    {"context_index": 0, "verdict": "yes"},
                    {"context_index": 0, "verdict": "yes"},
                    {"context_index": 1, "verdict": "no"},
                ]
            },
        ),
    ),
    "context-relevance": (
        create_context_relevance_scorer,
        {"context": ["a", "b"]},
        WEATHER_RUN,
        {},
        (
            "RelevanceEvaluations",
            {"evaluations": [{"context_index": 0, "relevanceLevel": "high", "wasUsed": True}]},
        ),
    ),
    "tool-call-accuracy": (
        create_tool_call_accuracy_scorer_llm,
        {},
        TOOL_RUN,
        {},
        (
            "ToolEvaluations",
            {"evaluations": [{"toolCalled": "get_weather", "wasAppropriate": True}]},
        ),
    ),
    "answer-similarity": (
        create_answer_similarity_scorer,
        {},
        {**WEATHER_RUN, "groundTruth": "x"},
        {"SemanticUnits": {"outputUnits": ["a"], "groundTruthUnits": ["a", "b"]}},
        ("SimilarityAnalysis", {"matches": [{"groundTruthUnit": "a", "matchType": "exact"}]}),
    ),
    "prompt-alignment": (
        create_prompt_alignment_scorer,
        {"instructions": ["Be brief.", "Be kind."]},
        WEATHER_RUN,
        {},
        ("InstructionVerdicts", {"verdicts": [{"verdict": "yes"}]}),
    ),
}


@pytest.mark.parametrize("name", COUNT_CASES)
async def test_every_scorer_refuses_a_wrong_verdict_count_after_one_repair(
    server: JudgeServer, name: str
) -> None:
    factory, options, run, earlier, (schema, wrong) = COUNT_CASES[name]
    for title, answer in earlier.items():
        server.script(title, json_reply(answer))
    server.script(schema, json_reply(wrong))
    result = await factory(model=scripted_judge(server), **options).run(run)
    assert result.status == "error", (name, result.score)
    assert "also after one repair attempt" in (result.error or "")
    asked = [r for r in server.requests if schema in str(r)]
    assert len(asked) == 2 and "not valid: it " in asked[1]["messages"][-1]["content"]


async def test_conversation_scorers_ask_for_the_missing_turn_once(server: JudgeServer) -> None:
    conversation = Conversation(
        id="c",
        turns=[
            Turn(
                trace_id=f"t{n}",
                span_id=f"s{n}",
                user=f"question {n}",
                answer=f"answer {n}",
                start_time=datetime(2026, 1, 1, 9, n, tzinfo=UTC),
            )
            for n in (1, 2)
        ],
    )
    server.script(
        "TurnRelevancyVerdicts",
        json_reply({"verdicts": [{"turn": 1, "verdict": "yes"}]}),
        json_reply({"verdicts": [{"turn": 1, "verdict": "yes"}, {"turn": 2, "verdict": "no"}]}),
    )
    result = await create_conversation_relevancy_scorer(model=scripted_judge(server)).run(
        conversation
    )
    assert result.status == "ok" and result.score == 0.5
    assert "no verdict for turn 2" in server.requests[1]["messages"][-1]["content"]
