"""The judge scorers against the scripted judge: Mastra's documented examples and our fixes.

Every judge call goes over real HTTP through litellm to ``tests.support.judge_server``; scripts answer
by the step's schema title, and reason steps get the server's default text.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.judge_server import JudgeServer, error_reply, json_reply, text_reply
from tests.support.scorer_names import judge_scorer_names
from tracescore.extract.model import (
    AgentRun,
    ContextDocument,
    Message,
    MessageContent,
    MessagePart,
    RunInput,
    SystemMessage,
    ToolDefinition,
    ToolInvocation,
)
from tracescore.judge import JudgeConfig, LiteLLMJudge, VerdictCache
from tracescore.scorers import (
    create_answer_relevancy_scorer,
    create_answer_similarity_scorer,
    create_bias_scorer,
    create_context_precision_scorer,
    create_context_relevance_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_noise_sensitivity_scorer,
    create_prompt_alignment_scorer,
    create_tool_call_accuracy_scorer_llm,
    create_toxicity_scorer,
)
from tracescore.scorers.llm.context_relevance import (
    ContextRelevancePenalties,
    RelevanceEvaluations,
    relevance_score,
)
from tracescore.scorers.utils import (
    make_agent_run,
    make_test_message,
    make_tool_invocation,
)


def agent_run(
    user: str,
    answer: str,
    *,
    system: str | None = None,
    tools: list[dict[str, Any]] = (),
    ground_truth: Any = None,
) -> dict[str, Any]:
    output = make_test_message(answer, "assistant", id="a1", tool_invocations=tools)
    return make_agent_run(
        input_messages=[make_test_message(user, "user", id="u1")],
        system_messages=[{"role": "system", "content": system}] if system else [],
        output=[output],
        ground_truth=ground_truth,
    )


def prompts_with(server: JudgeServer, marker: str) -> list[str]:
    return [r["messages"][-1]["content"] for r in server.requests if marker in str(r)]


ECLIPSE_CONTEXT = [
    "Solar eclipses occur when the Moon blocks the Sun.",
    "The Moon moves between the Earth and Sun during eclipses.",
    "The Moon is visible at night.",
    "Stars twinkle due to atmospheric interference.",
    "Total eclipses can last up to 7.5 minutes.",
]
ECLIPSE_RUN = agent_run(
    "What causes solar eclipses?",
    "Solar eclipses happen when the Moon moves between Earth and the Sun, blocking sunlight.",
)
ECLIPSE_EVALUATIONS = {
    "evaluations": [
        {
            "context_index": 0,
            "contextPiece": ECLIPSE_CONTEXT[0],
            "relevanceLevel": "high",
            "wasUsed": True,
            "reasoning": "direct",
        },
        {
            "context_index": 1,
            "contextPiece": ECLIPSE_CONTEXT[1],
            "relevanceLevel": "high",
            "wasUsed": True,
            "reasoning": "direct",
        },
        {
            "context_index": 2,
            "contextPiece": ECLIPSE_CONTEXT[2],
            "relevanceLevel": "medium",
            "wasUsed": False,
            "reasoning": "background",
        },
        {
            "context_index": 3,
            "contextPiece": ECLIPSE_CONTEXT[3],
            "relevanceLevel": "none",
            "wasUsed": False,
            "reasoning": "unrelated",
        },
        {
            "context_index": 4,
            "contextPiece": ECLIPSE_CONTEXT[4],
            "relevanceLevel": "high",
            "wasUsed": False,
            "reasoning": "unused",
        },
    ],
    "missingContext": [],
    "overallAssessment": "Mostly relevant.",
}


async def test_context_precision_is_mean_average_precision(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    verdicts = [  # sent out of order: the score sorts by context_index
        {"context_index": 2, "verdict": "yes", "reason": "r"},
        {"context_index": 0, "verdict": "yes", "reason": "r"},
        {"context_index": 3, "verdict": "no", "reason": "r"},
        {"context_index": 1, "verdict": " No", "reason": "r"},
    ]
    server.script("PrecisionVerdicts", json_reply({"verdicts": verdicts}))
    scorer = create_context_precision_scorer(model=judge, context=["a", "b", "c", "d"])
    result = await scorer.run(ECLIPSE_RUN)
    assert result.status == "ok" and result.score == 0.83  # (1/1 + 2/3) / 2
    assert result.reason == "A scripted reason."
    assert [v.context_index for v in result.analyze_step_result.verdicts] == [2, 0, 3, 1]


async def test_context_precision_without_any_context_is_not_scorable(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    result = await create_context_precision_scorer(model=judge).run(ECLIPSE_RUN)
    assert result.status == "not_scorable" and "no context" in result.reason
    assert server.count == 0
    with pytest.raises(ValueError, match="must not be empty"):
        create_context_precision_scorer(model=judge, context=[])


@pytest.mark.parametrize(
    "create", [create_context_precision_scorer, create_context_relevance_scorer]
)
async def test_an_empty_context_extractor_is_not_scorable(
    create: Any, server: JudgeServer, judge: LiteLLMJudge
) -> None:
    """Issue 20, item 4, decided: an extractor that finds nothing gives ``not_scorable`` without
    asking the judge (Mastra's relevance asks about a placeholder piece and scores 1 × scale)."""
    result = await create(model=judge, context_extractor=lambda run_input, run_output: []).run(
        ECLIPSE_RUN
    )
    assert (
        result.status == "not_scorable" and result.reason == "no context available for evaluation"
    )
    assert server.count == 0


async def test_context_relevance_eclipse_example(server: JudgeServer, judge: LiteLLMJudge) -> None:
    server.script("RelevanceEvaluations", json_reply(ECLIPSE_EVALUATIONS))
    default = await create_context_relevance_scorer(model=judge, context=ECLIPSE_CONTEXT).run(
        ECLIPSE_RUN
    )
    assert default.score == 0.64  # (1 + 1 + 0.7 + 0 + 1) / 5 - 0.1
    lenient = create_context_relevance_scorer(
        model=judge, context=ECLIPSE_CONTEXT, penalties={"unusedHighRelevanceContext": 0.05}
    )
    assert (await lenient.run(ECLIPSE_RUN)).score == 0.69
    prompt = prompts_with(server, "RelevanceEvaluations")[0]
    assert "[4] Total eclipses can last up to 7.5 minutes." in prompt
    assert "What causes solar eclipses?" in prompt


async def test_context_relevance_low_and_high_examples(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    def level(i: int, relevance: str, used: bool) -> dict[str, Any]:
        return {"context_index": i, "relevanceLevel": relevance, "wasUsed": used}

    run = agent_run("What is the capital of Australia?", "The capital of Australia is Canberra.")
    scorer = create_context_relevance_scorer(model=judge, context=["a", "b", "c", "d", "e"])
    server.script(
        "RelevanceEvaluations",
        json_reply(
            {
                "evaluations": [
                    level(0, "none", False),
                    level(1, "none", False),
                    level(2, "none", False),
                    level(3, "low", False),
                    level(4, "high", True),
                ]
            }
        ),
    )
    assert (await scorer.run(run)).score == 0.26
    server.script(
        "RelevanceEvaluations",
        json_reply(
            {
                "evaluations": [
                    level(0, "high", True),
                    level(1, "high", True),
                    level(2, "high", True),
                ],
                "missingContext": [],
            }
        ),
    )
    assert (
        await create_context_relevance_scorer(model=judge, context=["x", "y", "z"]).run(run)
    ).score == 1.0
    server.script(
        "RelevanceEvaluations",
        json_reply(
            {"evaluations": [level(0, "high", True)], "missingContext": ["population", "history"]}
        ),
    )
    assert (await create_context_relevance_scorer(model=judge, context=["w"]).run(run)).score == 0.7


def test_context_relevance_with_no_evaluations_is_scaled() -> None:
    """The formula's "no evaluations" branch (Mastra's is unscaled). A judge answering no
    evaluation for a piece it was shown is now sent a repair request (one per piece), so the
    branch is reached by the formula only."""
    nothing = RelevanceEvaluations(evaluations=[], missing_context=[])
    assert relevance_score(nothing, ContextRelevancePenalties(), 10) == 10.0
    missing = RelevanceEvaluations(evaluations=[], missing_context=["x"])
    assert relevance_score(missing, ContextRelevancePenalties(), 10) == 0.0


async def test_answer_relevancy_counts_unsure_at_the_uncertainty_weight(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script("AnswerStatements", json_reply({"statements": ["s1", "s2", "s3", "s4"]}))
    results = [{"result": r, "reason": "x"} for r in ("yes", "Yes", "yes ", "unsure")]
    server.script("RelevancyResults", json_reply({"results": results}))
    result = await create_answer_relevancy_scorer(model=judge).run(ECLIPSE_RUN)
    assert result.score == 0.83  # (3 + 0.3) / 4 = 0.825, rounded half up
    assert result.preprocess_step_result.statements == ["s1", "s2", "s3", "s4"]
    # Only scale given: the uncertainty weight keeps its default (NaN in Mastra).
    assert (
        await create_answer_relevancy_scorer(model=judge, scale=10).run(ECLIPSE_RUN)
    ).score == 8.25
    analyze_prompt = prompts_with(server, "RelevancyResults")[0]
    assert (
        "<user>\nWhat causes solar eclipses?\n</user>" in analyze_prompt
        and "[3] s4" in analyze_prompt
    )


async def test_faithfulness_example_and_tool_results_from_parts(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script("FaithfulnessClaims", json_reply({"claims": ["c1", "c2", "c3", "c4"]}))
    verdicts = [{"verdict": v, "reason": "r"} for v in ("yes", "YES", "yes", "unsure")]
    server.script("FaithfulnessVerdicts", json_reply({"verdicts": verdicts}))
    # The tool result lives only in the message parts (a tool that Mastra's default misses).
    call = make_tool_invocation(
        tool_call_id="t1", tool_name="weather", args={"city": "Paris"}, result={"temperature_c": 21}
    )
    output = make_test_message(
        "It is 21 °C in Paris.",
        "assistant",
        id="a1",
        parts=[
            {"type": "tool-invocation", "toolInvocation": call},
            {"type": "text", "text": "It is 21 °C in Paris."},
        ],
    )
    run = make_agent_run(
        input_messages=[make_test_message("Weather in Paris?", "user")], output=[output]
    )
    result = await create_faithfulness_scorer(model=judge).run(run)
    assert result.status == "ok" and result.score == 0.75
    assert '[0] {"temperature_c": 21}' in prompts_with(server, "FaithfulnessVerdicts")[0]


async def test_faithfulness_with_zero_scale_scores_zero(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script("FaithfulnessClaims", json_reply({"claims": ["c1"]}))
    server.script(
        "FaithfulnessVerdicts", json_reply({"verdicts": [{"verdict": "yes", "reason": "r"}]})
    )
    result = await create_faithfulness_scorer(model=judge, context=["c1 is true"], scale=0).run(
        ECLIPSE_RUN
    )
    assert result.score == 0.0


async def test_hallucination_counts_unbacked_claims(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script("HallucinationClaims", json_reply({"claims": ["a", "b", "c", "d"]}))
    verdicts = [
        {"statement": s, "verdict": v, "reason": "r"}
        for s, v in zip("abcd", ["Yes", "no", "no", "no"], strict=True)
    ]
    server.script("HallucinationVerdicts", json_reply({"verdicts": verdicts}))
    seen: list[str] = []

    def get_context(ctx: Any, step: str) -> list[str]:
        seen.append(step)
        return ["the only fact"]

    result = await create_hallucination_scorer(model=judge, get_context=get_context).run(
        ECLIPSE_RUN
    )
    assert result.score == 0.25
    assert seen == ["analyze", "generate_reason"]


async def test_bias_and_toxicity(server: JudgeServer, judge: LiteLLMJudge) -> None:
    server.script("BiasOpinions", json_reply({"opinions": ["o1", "o2", "o3", "o4"]}))
    server.script(
        "BiasResults",
        json_reply({"results": [{"result": r, "reason": "x"} for r in (" Yes", "no", "no", "no")]}),
    )
    assert (await create_bias_scorer(model=judge).run(ECLIPSE_RUN)).score == 0.25
    server.script(
        "ToxicityVerdicts",
        json_reply(
            {
                "verdicts": [
                    {"verdict": "yes", "reason": "insult"},
                    {"verdict": "no", "reason": "fine"},
                ]
            }
        ),
    )
    assert (await create_toxicity_scorer(model=judge, scale=2).run(ECLIPSE_RUN)).score == 1.0
    server.script("ToxicityVerdicts", json_reply({"verdicts": []}))
    quiet = agent_run("hi", "")
    assert (await create_toxicity_scorer(model=judge).run(quiet)).score == 0.0  # Mastra: 1


async def test_answer_similarity_weights_and_ground_truth(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script(
        "SemanticUnits",
        json_reply({"outputUnits": ["a", "b", "x"], "groundTruthUnits": ["a", "b", "c"]}),
    )
    server.script(
        "SimilarityAnalysis",
        json_reply(
            {
                "matches": [
                    {
                        "groundTruthUnit": "a",
                        "outputUnit": "a",
                        "matchType": "exact",
                        "explanation": "",
                    },
                    {
                        "groundTruthUnit": "b",
                        "outputUnit": "b",
                        "matchType": "semantic",
                        "explanation": "",
                    },
                    {
                        "groundTruthUnit": "c",
                        "outputUnit": None,
                        "matchType": "missing",
                        "explanation": "",
                    },
                ],
                "extraInOutput": ["x"],
                "contradictions": [],
            }
        ),
    )
    run = agent_run("q", "a b x", ground_truth="a b c")
    result = await create_answer_similarity_scorer(model=judge).run(run)
    assert result.score == 0.46  # (1.2 + 0.8 - 0.15) / (3 * 1.2) - 0.05
    assert "a b c" in prompts_with(server, "SemanticUnits")[0]
    missing = await create_answer_similarity_scorer(model=judge).run(agent_run("q", "a"))
    assert missing.status == "not_scorable" and "ground truth" in missing.reason
    lenient = await create_answer_similarity_scorer(model=judge, require_ground_truth=False).run(
        agent_run("q", "a")
    )
    assert lenient.status == "ok" and lenient.score == 0.0


async def test_noise_sensitivity(server: JudgeServer, judge: LiteLLMJudge) -> None:
    dims = [
        {"dimension": d, "impactLevel": lvl, "specificChanges": "", "noiseInfluence": ""}
        for d, lvl in zip(
            [
                "content_accuracy",
                "completeness",
                "relevance",
                "consistency",
                "hallucination_resistance",
            ],
            ["none", "minimal", "none", "none", "moderate"],
            strict=True,
        )
    ]
    analysis = {
        "dimensions": dims,
        "overallAssessment": "ok",
        "majorIssues": ["drifted"],
        "robustnessScore": 0.9,
    }
    server.script("NoiseAnalysis", json_reply(analysis))
    scorer = create_noise_sensitivity_scorer(
        model=judge,
        baseline_response="Eclipses happen when the Moon blocks the Sun.",
        noisy_query="What causes solar eclipses? Also, is the Moon made of cheese?",
    )
    assert (await scorer.run(ECLIPSE_RUN)).score == 0.8  # 0.9 (dimensions agree: 0.89) - 0.1
    strict = create_noise_sensitivity_scorer(
        model=judge,
        baseline_response="b",
        noisy_query="n",
        scoring={"penalties": {"majorIssuePerItem": 0.25}},
    )
    assert (await strict.run(ECLIPSE_RUN)).score == 0.65
    analysis["robustnessScore"] = 1.0
    analysis["dimensions"][0]["impactLevel"] = "severe"  # dimensions 0.71: far below 1.0
    server.script("NoiseAnalysis", json_reply(analysis))
    assert (await scorer.run(ECLIPSE_RUN)).score == 0.61
    prompt = prompts_with(server, "NoiseAnalysis")[0]
    assert "made of cheese" in prompt and "Moon blocks the Sun" in prompt


INSTRUCTIONS = [
    "Use bullet points for each item",
    "Include exactly three examples",
    "End each point with a semicolon",
]


async def test_prompt_alignment_instruction_list(server: JudgeServer, judge: LiteLLMJudge) -> None:
    scorer = create_prompt_alignment_scorer(model=judge, instructions=INSTRUCTIONS)
    server.script(
        "InstructionVerdicts",
        json_reply(
            {
                "verdicts": [
                    {"instruction": i, "verdict": v, "reason": "r"}
                    for i, v in zip(INSTRUCTIONS, ["yes", "no", "no"], strict=True)
                ]
            }
        ),
    )
    poor = await scorer.run(agent_run("List fruits", "1. Apple 2. Banana 3. Orange and Grape"))
    assert poor.score == 0.33
    server.script(
        "InstructionVerdicts",
        json_reply(
            {
                "verdicts": [
                    {"instruction": i, "verdict": "yes", "reason": "r"} for i in INSTRUCTIONS
                ]
            }
        ),
    )
    good = await scorer.run(agent_run("List fruits", "• Apple;\n• Banana;\n• Orange;"))
    assert good.score == 1.0
    server.script(
        "InstructionVerdicts",
        json_reply(
            {
                "verdicts": [
                    {"instruction": i, "verdict": v, "reason": "r"}
                    for i, v in zip(INSTRUCTIONS, ["yes", "n/a", "no"], strict=True)
                ]
            }
        ),
    )
    assert (await scorer.run(agent_run("List fruits", "• Apple"))).score == 0.5
    prompt = prompts_with(server, "InstructionVerdicts")[0]
    assert "[2] End each point with a semicolon" in prompt and "empty" in prompt


def dimensions(
    intent: float, requirements: float, completeness: float, appropriateness: float
) -> dict[str, Any]:
    return {
        "intentAlignment": {
            "score": intent,
            "primaryIntent": "p",
            "isAddressed": True,
            "reasoning": "",
        },
        "requirementsFulfillment": {"requirements": [], "overallScore": requirements},
        "completeness": {"score": completeness, "missingElements": [], "reasoning": ""},
        "responseAppropriateness": {
            "score": appropriateness,
            "formatAlignment": "",
            "toneAlignment": "",
            "reasoning": "",
        },
        "overallAssessment": "",
    }


async def test_prompt_alignment_modes(server: JudgeServer, judge: LiteLLMJudge) -> None:
    run = agent_run(
        "Summarise the report", "The report says sales grew.", system="Answer in French."
    )
    # SCORERS.md's "1.0, 0.5, 0.5, 0.5 -> 0.75" does not add up under its own weights (0.70);
    # intent 1, requirements 0.5, completeness 0.5, appropriateness 1 gives the documented 0.75.
    server.script("AlignmentAnalysis", json_reply(dimensions(1.0, 0.5, 0.5, 1.0)))
    user = await create_prompt_alignment_scorer(model=judge, evaluation_mode="user").run(run)
    assert user.score == 0.75
    server.script("AlignmentAnalysis", json_reply(dimensions(1.0, 0.5, 0.5, 0.5)))
    assert (
        await create_prompt_alignment_scorer(model=judge, evaluation_mode="user").run(run)
    ).score == 0.7
    assert (
        await create_prompt_alignment_scorer(model=judge, evaluation_mode="system").run(run)
    ).score == 0.68
    server.script(
        "BothAlignmentAnalysis",
        json_reply(
            {
                "userAlignment": dimensions(1.0, 0.5, 0.5, 1.0),
                "systemAlignment": dimensions(0.0, 0.0, 0.0, 0.0),
            }
        ),
    )
    both = await create_prompt_alignment_scorer(model=judge).run(run)
    assert both.score == 0.53  # 0.7 * 0.75 + 0.3 * 0 (Mastra's "both" would say 0.75)
    prompt = prompts_with(server, "BothAlignmentAnalysis")[0]
    assert "Answer in French." in prompt and "Summarise the report" in prompt
    no_system = await create_prompt_alignment_scorer(model=judge, evaluation_mode="system").run(
        agent_run("hi", "hello")
    )
    assert no_system.status == "not_scorable"


async def test_llm_tool_call_accuracy_sees_calls_with_arguments(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    tools = [
        make_tool_invocation(tool_call_id=f"t{i}", tool_name=name, args={"q": q}, result={"ok": q})
        for i, (name, q) in enumerate(
            [("weather", "Paris"), ("search", "Paris weather"), ("weather", "Lyon")]
        )
    ]
    run = agent_run("Weather in Paris?", "21 °C", tools=tools)
    server.script(
        "ToolEvaluations",
        json_reply(
            {
                "evaluations": [
                    {"toolCalled": "weather", "wasAppropriate": True, "reasoning": ""},
                    {"toolCalled": "search", "wasAppropriate": True, "reasoning": ""},
                    {"toolCalled": "weather", "wasAppropriate": False, "reasoning": "wrong city"},
                ],
                "missingTools": [],
            }
        ),
    )
    scorer = create_tool_call_accuracy_scorer_llm(
        model=judge,
        available_tools=[{"name": "weather", "description": "Current weather"}, {"id": "search"}],
    )
    result = await scorer.run(run)
    assert result.score == 0.67
    assert result.preprocess_step_result["actualTools"] == ["weather", "search", "weather"]
    prompt = prompts_with(server, "ToolEvaluations")[0]
    assert "weather: Current weather" in prompt and "\nsearch\n" in prompt
    assert 'tool call weather with arguments {"q": "Lyon"}' in prompt and '{"ok": "Lyon"}' in prompt
    server.script("ToolEvaluations", json_reply({"evaluations": [], "missingTools": ["weather"]}))
    assert (await scorer.run(agent_run("Weather in Paris?", "No idea."))).score == 0.0


def traced_run() -> AgentRun:
    """An extracted run: system prompt, reasoning, a tool call with its result, retrieved context."""
    call = ToolInvocation(
        tool_call_id="c1",
        tool_name="lookup_order",
        args={"order": "A-17"},
        result={"status": "shipped"},
        state="result",
    )
    answer = "Your order A-17 has shipped."
    return AgentRun(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        input=RunInput(
            input_messages=[
                Message(
                    id="u",
                    role="user",
                    content=MessageContent(
                        parts=[MessagePart(type="text", text="Where is my order A-17?")],
                        content="Where is my order A-17?",
                    ),
                )
            ],
            system_messages=[SystemMessage(content="You are the shop's support agent.")],
        ),
        output=[
            Message(
                id="a",
                role="assistant",
                content=MessageContent(
                    parts=[
                        MessagePart(type="reasoning", reasoning="I should look the order up."),
                        MessagePart(type="tool-invocation", tool_invocation=call),
                        MessagePart(type="text", text=answer),
                    ],
                    content=answer,
                ),
            )
        ],
        context=[ContextDocument(content="Orders ship within 2 days.", source="kb")],
        tools=[ToolDefinition(name="lookup_order", description="Find an order by id")],
    )


async def test_judges_see_the_whole_trajectory(server: JudgeServer, judge: LiteLLMJudge) -> None:
    server.script(
        "ToolEvaluations",
        json_reply(
            {
                "evaluations": [
                    {"toolCalled": "lookup_order", "wasAppropriate": True, "reasoning": ""}
                ],
                "missingTools": [],
            }
        ),
    )
    result = await create_tool_call_accuracy_scorer_llm(model=judge).run(traced_run())
    assert result.score == 1.0
    prompt = prompts_with(server, "ToolEvaluations")[0]
    for seen in (
        "You are the shop's support agent.",
        "Where is my order A-17?",
        "I should look the order up.",
        'tool call lookup_order with arguments {"order": "A-17"}',
        '{"status": "shipped"}',
        "lookup_order: Find an order by id",
        "Your order A-17 has shipped.",
    ):
        assert seen in prompt
    server.script("FaithfulnessClaims", json_reply({"claims": ["A-17 shipped"]}))
    server.script(
        "FaithfulnessVerdicts", json_reply({"verdicts": [{"verdict": "no", "reason": ""}]})
    )
    await create_faithfulness_scorer(model=judge).run(traced_run())
    assert "[0] Orders ship within 2 days." in prompts_with(server, "FaithfulnessVerdicts")[0]


async def test_judge_failures_become_clear_errors_on_the_score(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script("ToxicityVerdicts", text_reply("I think it is fine."))
    result = await create_toxicity_scorer(model=judge).run(ECLIPSE_RUN)
    assert result.status == "error" and result.score is None and result.failed_step == "analyze"
    assert "does not match ToxicityVerdicts, also after one repair attempt" in result.error
    assert server.count == 2


async def test_scorer_recovers_from_rate_limits(server: JudgeServer, judge: LiteLLMJudge) -> None:
    server.script(
        "ToxicityVerdicts",
        error_reply(429, retry_after=0.05),
        json_reply({"verdicts": [{"verdict": "no", "reason": ""}]}),
    )
    result = await create_toxicity_scorer(model=judge).run(ECLIPSE_RUN)
    assert result.status == "ok" and result.score == 0.0
    assert [c.attempts for c in result.judge_calls] == [2, 1]


def faithfulness_script(server: JudgeServer) -> None:
    server.script("FaithfulnessClaims", json_reply({"claims": ["a", "b"]}))
    server.script(
        "FaithfulnessVerdicts",
        json_reply(
            {"verdicts": [{"verdict": "yes", "reason": ""}, {"verdict": "no", "reason": ""}]}
        ),
    )


async def test_cached_runs_cost_nothing_even_after_a_restart(
    server: JudgeServer, sqlite_url: str
) -> None:
    faithfulness_script(server)
    config = JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url)
    first = await create_faithfulness_scorer(
        model=LiteLLMJudge(config, cache=VerdictCache(sqlite_url)), context=["a"]
    ).run(ECLIPSE_RUN)
    assert server.count == 3 and first.score == 0.5
    assert first.input_tokens > 0 and first.output_tokens > 0 and first.cost_usd > 0
    assert all(not c.cached for c in first.judge_calls)
    restarted = LiteLLMJudge(config, cache=VerdictCache(sqlite_url))
    again = await create_faithfulness_scorer(model=restarted, context=["a"]).run(ECLIPSE_RUN)
    assert server.count == 3
    assert again.score == 0.5 and again.reason == first.reason and again.cost_usd == 0.0
    assert all(c.cached for c in again.judge_calls)


def test_run_sync_scores_with_a_judge_model_string(server: JudgeServer) -> None:
    faithfulness_script(server)
    spec = {"model": "openai/gpt-4o-mini", "api_base": server.base_url, "cache": False}
    scorer = create_faithfulness_scorer(model=spec, context=["a"])
    assert scorer.run_sync(ECLIPSE_RUN).score == 0.5
    assert scorer.run_sync(ECLIPSE_RUN).score == 0.5  # a second event loop, same judge
    assert server.count == 6


LLM_SCORERS = {
    "answer-relevancy": "answer-relevancy-scorer",
    "answer-similarity": "answer-similarity-scorer",
    "bias": "bias-scorer",
    "context-precision": "context-precision-scorer",
    "context-relevance": "context-relevance-scorer",
    "faithfulness": "faithfulness-scorer",
    "hallucination": "hallucination-scorer",
    "noise-sensitivity": "noise-sensitivity-scorer",
    "prompt-alignment": "prompt-alignment-scorer",
    "tool-call-accuracy-llm": "llm-tool-call-accuracy-scorer",
    "toxicity": "toxicity-scorer",
}


def test_registry_builds_every_judge_scorer_from_config_options() -> None:
    from tracescore.scorers import registry

    required = {"noise-sensitivity": {"baselineResponse": "b", "noisyQuery": "q"}}
    for name, scorer_id in LLM_SCORERS.items():
        entry = registry.get(name)
        assert entry.uses_judge
        scorer = entry.factory(model="openai/gpt-4o-mini", **required.get(name, {}))
        assert scorer.id == scorer_id and scorer.uses_judge
    assert set(judge_scorer_names()) == set(LLM_SCORERS)
    with pytest.raises(ValueError, match=r"evaluation_mode|evaluationMode"):
        registry.get("prompt-alignment").factory(
            model="openai/gpt-4o-mini", evaluationMode="neither"
        )


async def test_registry_options_reach_the_scorer(server: JudgeServer, judge: LiteLLMJudge) -> None:
    from tracescore.scorers import registry

    server.script("RelevanceEvaluations", json_reply(ECLIPSE_EVALUATIONS))
    lenient = registry.get("context-relevance").factory(
        model=judge, context=ECLIPSE_CONTEXT, penalties={"unusedHighRelevanceContext": 0.05}
    )
    assert (await lenient.run(ECLIPSE_RUN)).score == 0.69


async def test_context_extractor_reads_the_run(server: JudgeServer, judge: LiteLLMJudge) -> None:
    server.script(
        "PrecisionVerdicts", json_reply({"verdicts": [{"context_index": 0, "verdict": "yes"}]})
    )

    def extractor(run_input: Any, run_output: Any) -> list[str]:
        return [f"extracted for: {run_input['inputMessages'][0]['content']['content']}"]

    scorer = create_context_precision_scorer(model=judge, context_extractor=extractor)
    assert (await scorer.run(ECLIPSE_RUN)).score == 1.0
    assert (
        "[0] extracted for: What causes solar eclipses?"
        in prompts_with(server, "PrecisionVerdicts")[0]
    )


def mastra_shaped(own: dict[str, Any], fulfilled: str = "isFulfilled") -> dict[str, Any]:
    """``dimensions(...)`` as Mastra's judge answers it: format and tone alignment as booleans,
    requirement items with ``isFulfilled`` (Mastra's schema; its docs say ``fulfilled``)."""
    answer = {
        **own,
        "responseAppropriateness": {
            **own["responseAppropriateness"],
            "formatAlignment": True,
            "toneAlignment": False,
        },
    }
    answer["requirementsFulfillment"] = {
        "requirements": [
            {"requirement": "summarise", fulfilled: True, "reasoning": "done"},
            {"requirement": "be brief", fulfilled: False, "reasoning": "long"},
        ],
        "overallScore": own["requirementsFulfillment"]["overallScore"],
    }
    return answer


@pytest.mark.parametrize("response_format", ["json_object", "prompt"])
async def test_prompt_alignment_reads_both_answer_shapes_from_a_local_style_judge(
    server: JudgeServer, response_format: str
) -> None:
    """Local judges run in JSON-object or prompt mode, where nothing stops them answering
    Mastra's booleans: both shapes are read, with the same score (issue 20, item 1)."""
    judge = LiteLLMJudge(
        JudgeConfig(
            model="openai/local-judge",
            api_base=server.base_url,
            response_format=response_format,
            cache=False,
        )
    )
    run = agent_run("Summarise the report", "The report says sales grew.", system="Be brief.")
    own = dimensions(1.0, 0.5, 0.5, 1.0)
    own["responseAppropriateness"] |= {
        "formatAlignment": "a plain sentence",
        "toneAlignment": "neutral",
    }
    scores = {}
    shapes = (
        ("own", own),
        ("mastra", mastra_shaped(own)),
        ("fulfilled", mastra_shaped(own, "fulfilled")),
    )
    for shape, answer in shapes:
        for mode in ("user", "system"):
            server.script("AlignmentAnalysis", json_reply(answer))
            result = await create_prompt_alignment_scorer(model=judge, evaluation_mode=mode).run(
                run
            )
            assert result.status == "ok", result.error
            scores[shape, mode] = result.score
        server.script("BothAlignmentAnalysis", json_reply(answer))  # one evaluation: Mastra's both
        scores[shape, "both"] = (await create_prompt_alignment_scorer(model=judge).run(run)).score
    assert scores == {
        (shape, mode): 0.75 for shape, _ in shapes for mode in ("user", "system", "both")
    }
    for shape, answer in shapes[1:]:
        server.script("AlignmentAnalysis", json_reply(answer))
        checks = await create_prompt_alignment_scorer(model=judge, evaluation_mode="user").run(run)
        assert checks.analyze_step_result.response_appropriateness.format_alignment is True, shape
        requirements = checks.analyze_step_result.requirements_fulfillment.requirements
        assert [r.is_fulfilled for r in requirements] == [True, False], shape


async def test_prompt_alignment_history_as_mastra_writes_it(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    remembered = [make_test_message(f"earlier turn {i}", "user", id=f"r{i}") for i in range(5)]
    run = make_agent_run(
        input_messages=[make_test_message("And now?", "user", id="u")],
        remembered_messages=remembered,
        output=[make_test_message("Done.", "assistant", id="a")],
    )
    server.script("AlignmentAnalysis", json_reply(dimensions(1, 1, 1, 1)))
    scorer = create_prompt_alignment_scorer(
        model=judge, evaluation_mode="user", include_conversation_history={"maxMessages": 2}
    )
    assert (await scorer.run(run)).score == 1.0
    prompt = prompts_with(server, "AlignmentAnalysis")[0]
    assert (
        "earlier turn 4" in prompt and "earlier turn 3" in prompt and "earlier turn 2" not in prompt
    )
    with pytest.raises(ValueError, match="unknown keys"):
        create_prompt_alignment_scorer(model=judge, include_conversation_history={"limit": 2})
