"""Issue 32 (2): what a judge is sent fits its model's window, and nothing is cut unseen.

Against the scripted judge server over real HTTP through litellm, with the model
``openai/gpt-4o-mini`` (litellm's map: a 128,000-token input window).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.judge_budget import filler, request_tokens
from tests.support.judge_server import JudgeServer, json_reply
from tracescore.judge import JudgeConfig, LiteLLMJudge
from tracescore.scorers import (
    create_context_precision_scorer,
    create_context_relevance_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
)
from tracescore.scorers.llm.run_text import indented
from tracescore.scorers.utils import make_agent_run, make_test_message, make_tool_invocation

WINDOW = 128_000
SENTENCE = "Audit note: the Lisbon warehouse shipped order 88417 on 3 March by rail freight."
CLAIM = "Order 88417 left the Lisbon warehouse on 3 March by rail."


def long_tool_result() -> str:
    """700,000 characters with :data:`SENTENCE` starting at character 550,000."""
    text = filler(550_000, 1) + SENTENCE
    return text + filler(700_000 - len(text), 2)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


def judge_on(server: JudgeServer, **settings: object) -> LiteLLMJudge:
    return LiteLLMJudge(
        JudgeConfig(
            model="openai/gpt-4o-mini",
            api_base=server.base_url,
            timeout=30,
            cache=False,
            **settings,
        )
    )


def run_with(result: str) -> dict[str, object]:
    return make_agent_run(
        input_messages=[make_test_message("When did order 88417 ship?", "user", id="u1")],
        output=[
            make_test_message(
                CLAIM,
                "assistant",
                id="a1",
                tool_invocations=[
                    make_tool_invocation(
                        tool_call_id="c1",
                        tool_name="fetch_audit_log",
                        args={"order": 88417},
                        result=result,
                    )
                ],
            )
        ],
    )


async def test_a_700k_tool_result_is_judged_in_parts_that_fit_one_holding_the_sentence(
    server: JudgeServer,
) -> None:
    """Faithfulness sent one 602,005-character request, past gpt-4o-mini's window (a real judge
    refuses it and the score errors)."""
    result = long_tool_result()
    assert len(result) == 700_000 and result.index(SENTENCE) == 550_000
    server.script("FaithfulnessClaims", json_reply({"claims": [CLAIM]}))
    server.script(
        "FaithfulnessVerdicts",
        json_reply(
            {
                "verdicts": [
                    {"verdict": "unsure", "reason": "this part does not mention order 88417"}
                ]
            }
        ),
    )
    server.script(
        SENTENCE, json_reply({"verdicts": [{"verdict": "yes", "reason": "the audit note"}]})
    )
    scored = await create_faithfulness_scorer(model=judge_on(server)).run(run_with(result))
    assert scored.status == "ok" and scored.score == 1.0, scored.error
    parts = [r for r in server.requests if "FaithfulnessVerdicts" in str(r.get("response_format"))]
    assert len(parts) >= 2
    assert max(request_tokens(r) for r in server.requests) <= WINDOW
    holding = [r for r in parts if SENTENCE in r["messages"][-1]["content"]]
    assert len(holding) == 1
    assert any("part 1 of" in r["messages"][-1]["content"] for r in parts)
    # Every character of the tool result was shown in some part.
    shown = "".join(r["messages"][-1]["content"] for r in parts)
    assert indented(result[:2000]) in shown and indented(result[-2000:]) in shown
    assert "(context part" in scored.analyze_step_result.verdicts[0].reason
    # The reason step, which shows the context too, was cut to fit and says so.
    reason = server.requests[-1]["messages"][-1]["content"]
    assert "more characters cut: " in reason and request_tokens(server.requests[-1]) <= WINDOW


async def test_a_contradiction_in_any_part_decides(server: JudgeServer) -> None:
    server.script("FaithfulnessClaims", json_reply({"claims": [CLAIM]}))
    server.script(
        "FaithfulnessVerdicts", json_reply({"verdicts": [{"verdict": "yes", "reason": "r"}]})
    )
    server.script(SENTENCE, json_reply({"verdicts": [{"verdict": "no", "reason": "by road"}]}))
    scored = await create_faithfulness_scorer(model=judge_on(server, max_input_tokens=20_000)).run(
        run_with(long_tool_result()[400_000:600_000])
    )
    assert scored.status == "ok" and scored.score == 0.0
    assert scored.analyze_step_result.verdicts[0].verdict == "no"


async def test_hallucination_combines_parts_per_claim(server: JudgeServer) -> None:
    """Supported in one part: not a hallucination; mentioned in no part: a hallucination."""
    server.script("HallucinationClaims", json_reply({"claims": [CLAIM, "The order weighed 4 kg."]}))
    server.script(
        "HallucinationVerdicts",
        json_reply(
            {
                "verdicts": [
                    {"statement": CLAIM, "verdict": "unsure"},
                    {"statement": "w", "verdict": "unsure"},
                ]
            }
        ),
    )
    server.script(
        SENTENCE,
        json_reply(
            {
                "verdicts": [
                    {"statement": CLAIM, "verdict": "no"},
                    {"statement": "w", "verdict": "unsure"},
                ]
            }
        ),
    )
    scored = await create_hallucination_scorer(model=judge_on(server, max_input_tokens=20_000)).run(
        run_with(long_tool_result()[500_000:600_000])
    )
    assert scored.status == "ok" and scored.score == 0.5
    assert [v.verdict for v in scored.analyze_step_result.verdicts] == ["no", "yes"]
    parts = [r for r in server.requests if "HallucinationVerdicts" in str(r.get("response_format"))]
    assert len(parts) >= 2 and all(request_tokens(r) <= 20_000 for r in parts)


def test_the_budget_comes_from_litellms_model_window() -> None:
    assert LiteLLMJudge(JudgeConfig(model="openai/gpt-4o-mini")).budget.tokens == WINDOW - 4096
    assert (
        LiteLLMJudge(JudgeConfig(model="openai/gpt-4o-mini", max_tokens=1000)).budget.tokens
        == WINDOW - 1000
    )
    assert LiteLLMJudge(JudgeConfig(model="openai/a-local-model")).budget.tokens == 32_000
    assert (
        LiteLLMJudge(JudgeConfig(model="openai/gpt-4o-mini", max_input_tokens=9000)).budget.tokens
        == 9000
    )


async def test_context_precision_judges_pieces_that_do_not_fit_together_in_parts(
    server: JudgeServer,
) -> None:
    pieces = [
        filler(30_000, 3) + " MARK-A",
        filler(15_000, 4) + SENTENCE + filler(15_000, 5),
        filler(30_000, 6) + " MARK-C",
    ]
    server.script("MARK-A", json_reply({"verdicts": [{"context_index": 0, "verdict": "no"}]}))
    server.script(SENTENCE, json_reply({"verdicts": [{"context_index": 1, "verdict": "yes"}]}))
    server.script("MARK-C", json_reply({"verdicts": [{"context_index": 2, "verdict": "no"}]}))
    scorer = create_context_precision_scorer(
        model=judge_on(server, max_input_tokens=12_000), context=pieces
    )
    scored = await scorer.run(run_with("{}"))
    assert scored.status == "ok" and scored.score == 0.5, scored.error  # useful piece second
    parts = [r for r in server.requests if "PrecisionVerdicts" in str(r.get("response_format"))]
    assert len(parts) == 3 and all(request_tokens(r) <= 12_000 for r in parts)
    assert any("part 2\nof 3" in r["messages"][-1]["content"] for r in parts)


async def test_context_relevance_combines_the_parts_of_a_split_piece(server: JudgeServer) -> None:
    """A piece too long for one request is judged part by part: its most relevant part decides."""
    piece = filler(40_000, 7) + SENTENCE + filler(40_000, 8)
    server.script(
        "RelevanceEvaluations",
        json_reply(
            {"evaluations": [{"context_index": 0, "relevanceLevel": "none", "wasUsed": False}]}
        ),
    )
    server.script(
        SENTENCE,
        json_reply(
            {"evaluations": [{"context_index": 0, "relevanceLevel": "high", "wasUsed": True}]}
        ),
    )
    server.script(
        "Lyon is rainy",
        json_reply(
            {"evaluations": [{"context_index": 1, "relevanceLevel": "low", "wasUsed": False}]}
        ),
    )
    scorer = create_context_relevance_scorer(
        model=judge_on(server, max_input_tokens=12_000), context=[piece, "Lyon is rainy."]
    )
    scored = await scorer.run(run_with("{}"))
    assert scored.status == "ok" and scored.score == 0.65, scored.error
    parts = [r for r in server.requests if "RelevanceEvaluations" in str(r.get("response_format"))]
    assert len(parts) >= 3 and all(request_tokens(r) <= 12_000 for r in parts)
    assert any("[0] (part 1 of" in r["messages"][-1]["content"] for r in parts)


def test_a_dry_run_prices_a_long_context_in_the_parts_the_judge_would_be_sent() -> None:
    from tracescore.offline.estimate import PricingJudge, with_pricing_judge

    run = run_with(long_tool_result()[:300_000])  # ~55,000 tokens: one request for gpt-4o-mini
    analyses = {}
    for label, settings in (
        ("gpt-4o-mini", JudgeConfig(model="openai/gpt-4o-mini")),
        ("unknown", None),
    ):
        judge = PricingJudge("openai/gpt-4o-mini", settings=settings)
        priced = with_pricing_judge(create_faithfulness_scorer(model="openai/gpt-4o-mini"), judge)
        assert priced.run_sync(run).status == "ok"
        analyses[label] = [call for call in judge.calls if call.step == "analyze"]
    assert len(analyses["gpt-4o-mini"]) == 1  # its 123,904-token budget holds the whole context
    assert len(analyses["unknown"]) >= 2  # the 32,000-token default splits it
    assert all(call.input_tokens <= 32_000 for call in analyses["unknown"])
