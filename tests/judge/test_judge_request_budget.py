"""Issue 32 (2): every request of every judge scorer fits its judge's input budget, whatever is long.

A 700,000-character answer, user message, system prompt, tool result, ground truth or
conversation message is cut to fit (fair shares, each cut marked with where and how much), and
material that fits is sent whole (no fixed 4,000- or 2,000-character cut). Against the scripted
judge server over real HTTP through litellm, with ``openai/gpt-4o-mini``'s tokenizer and a small
``max_input_tokens`` so the runs stay fast.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.conversations import conversation
from tests.support.judge_budget import filler, request_tokens
from tests.support.judge_server import JudgeServer, json_reply
from tests.support.scorer_names import judge_scorer_names
from tracescore.judge import JudgeConfig, LiteLLMJudge
from tracescore.judge.protocol import Budget
from tracescore.scorers.llm.run_text import indented
from tracescore.scorers.llm.shown_prompts import example_scorer
from tracescore.scorers.material import Material, Value, fair_share, fit_prompt, joined
from tracescore.scorers.utils import make_agent_run, make_test_message, make_tool_invocation

BUDGET = 8_000
LONG = 700_000
MARKER = re.compile(r"… \[([\d,]+) more characters cut: ([\d,]+)-700,000 of 700,000\]")

USER = "When did order 88417 ship?"
ANSWER = "Order 88417 left the Lisbon warehouse on 3 March by rail."
SYSTEM = "You are AuditBot. Answer from the audit log only."
RESULT = {"order": 88417, "shipped": "3 March", "by": "rail"}
TRUTH = "Order 88417 shipped on 3 March."

DIMENSIONS = (
    "content_accuracy",
    "completeness",
    "relevance",
    "consistency",
    "hallucination_resistance",
)
ALIGNMENT = {
    "intentAlignment": {"score": 1, "isAddressed": True},
    "requirementsFulfillment": {"requirements": [], "overallScore": 1},
    "completeness": {"score": 1},
    "responseAppropriateness": {"score": 1},
}
REPLIES: dict[str, dict[str, Any]] = {
    "AnswerStatements": {"statements": ["s"]},
    "RelevancyResults": {"results": [{"result": "yes", "reason": "r"}]},
    "SemanticUnits": {"outputUnits": ["a"], "groundTruthUnits": ["b"]},
    "SimilarityAnalysis": {
        "matches": [{"groundTruthUnit": "b", "outputUnit": "a", "matchType": "exact"}]
    },
    "BiasOpinions": {"opinions": ["o"]},
    "BiasResults": {"results": [{"result": "no", "reason": "r"}]},
    "PrecisionVerdicts": {"verdicts": [{"context_index": 0, "verdict": "yes"}]},
    "RelevanceEvaluations": {
        "evaluations": [{"context_index": 0, "relevanceLevel": "high", "wasUsed": True}]
    },
    "FaithfulnessClaims": {"claims": ["c"]},
    "FaithfulnessVerdicts": {"verdicts": [{"verdict": "yes"}]},
    "HallucinationClaims": {"claims": ["c"]},
    "HallucinationVerdicts": {"verdicts": [{"statement": "c", "verdict": "no"}]},
    "NoiseAnalysis": {
        "dimensions": [{"dimension": d, "impactLevel": "none"} for d in DIMENSIONS],
        "robustnessScore": 1.0,
    },
    "BothAlignmentAnalysis": {"userAlignment": ALIGNMENT, "systemAlignment": ALIGNMENT},
    "ToolEvaluations": {"evaluations": [{"toolCalled": "fetch_audit_log", "wasAppropriate": True}]},
    "ToxicityVerdicts": {"verdicts": [{"verdict": "no"}]},
    "UserIntentions": {"intentions": ["i"]},
    "IntentionVerdicts": {"verdicts": [{"verdict": "yes"}]},
    "UserFacts": {"facts": [{"turn": 1, "fact": "f"}]},
    "RetentionVerdicts": {"verdicts": [{"turn": n, "verdict": "no"} for n in (1, 2, 3)]},
    "TurnRelevancyVerdicts": {"verdicts": [{"turn": n, "verdict": "yes"} for n in (1, 2, 3)]},
    "OutOfCharacterTurns": {"verdicts": []},
}
"""A valid answer for every step of every judge scorer, by its schema's name."""

SHOWN: dict[str, set[str]] = {
    "answer": set(judge_scorer_names()),
    "user": set(judge_scorer_names()),
    "system": {"answer-relevancy", "prompt-alignment", "tool-call-accuracy-llm"},
    # As context, a tool result is judged in parts (tests/judge/test_judge_budget.py); the reason
    # steps of faithfulness and hallucination show it cut.
    "tool result": {"prompt-alignment", "tool-call-accuracy-llm", "faithfulness", "hallucination"},
    "ground truth": {"answer-similarity"},
}
"""Which scorers show each part of a run to their judge (the others must fit all the same)."""


@pytest.fixture(scope="module")
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        for schema, reply in REPLIES.items():
            running.script(schema, json_reply(reply))
        yield running


def judge_on(server: JudgeServer, **settings: Any) -> LiteLLMJudge:
    return LiteLLMJudge(
        JudgeConfig(
            model="openai/gpt-4o-mini",
            api_base=server.base_url,
            timeout=60,
            cache=False,
            **settings,
        )
    )


def run_with(**long: str) -> dict[str, Any]:
    return make_agent_run(
        system_messages=[{"role": "system", "content": long.get("system", SYSTEM)}],
        input_messages=[make_test_message(long.get("user", USER), "user", id="u1")],
        output=[
            make_test_message(
                long.get("answer", ANSWER),
                "assistant",
                id="a1",
                tool_invocations=[
                    make_tool_invocation(
                        tool_call_id="c1",
                        tool_name="fetch_audit_log",
                        args={"order": 88417},
                        result=long.get("tool result", RESULT),
                    )
                ],
            )
        ],
        ground_truth=long.get("ground truth", TRUTH),
    )


def assert_cut_with_marker(prompts: list[str], value: str) -> None:
    """Some request shows ``value`` cut: its first characters exactly (as the prompt shows
    them, indented or not), then the marker stating how many characters were cut and which."""
    found = []
    for prompt in prompts:
        for marker in MARKER.finditer(prompt):
            cut, first = (int(group.replace(",", "")) for group in marker.groups())
            assert cut == LONG - first + 1
            shown = value[: first - 1]
            head = prompt[: marker.start()]
            if head.endswith(shown[-500:]) or head.endswith(indented(shown[-500:])):
                assert shown[:500] in prompt or indented(shown[:500]) in prompt
                found.append(first - 1)
    assert found, "no request shows the value cut with its marker"
    assert all(kept > 1_000 for kept in found)  # each cut keeps a fair share, not a stub


@pytest.mark.parametrize("part", list(SHOWN))
@pytest.mark.parametrize("name", judge_scorer_names())
async def test_every_request_fits_the_budget_whatever_part_of_the_run_is_long(
    server: JudgeServer, name: str, part: str
) -> None:
    """Before: the 700,000 characters went whole into every request showing them (some 130,000
    tokens, past the 8,000 allowed), and a trajectory's tool result was cut at 4,000 characters."""
    value = filler(LONG, list(SHOWN).index(part))
    first = len(server.requests)
    scored = await example_scorer(name, model=judge_on(server, max_input_tokens=BUDGET)).run(
        run_with(**{part: value})
    )
    assert scored.status == "ok", scored.error
    sent = server.requests[first:]
    assert sent and all(request_tokens(body) <= BUDGET for body in sent)
    if name in SHOWN[part]:
        assert_cut_with_marker([body["messages"][-1]["content"] for body in sent], value)


@pytest.mark.parametrize("side", ["user", "answer"])
@pytest.mark.parametrize("name", judge_scorer_names(conversation=True))
async def test_every_conversation_request_fits_the_budget_with_a_long_message(
    server: JudgeServer, name: str, side: str
) -> None:
    value = filler(LONG, 11)
    exchanges = [
        ("Hi, I'm Ada.", "Hello Ada!"),
        ("Where is the museum?", "On the river bank."),
        ("What is my name?", "Ada."),
    ]
    exchanges[1] = (value, exchanges[1][1]) if side == "user" else (exchanges[1][0], value)
    first = len(server.requests)
    scorer = example_scorer(name, model=judge_on(server, max_input_tokens=BUDGET))
    scored = await scorer.run(conversation(*exchanges))
    assert scored.status == "ok", scored.error
    sent = server.requests[first:]
    assert sent and all(request_tokens(body) <= BUDGET for body in sent)
    transcripts = [
        body["messages"][-1]["content"]
        for body in sent
        if "Turn 2" in body["messages"][-1]["content"]
    ]
    assert transcripts
    assert_cut_with_marker(transcripts, value)
    for prompt in transcripts:  # the short messages around it are whole
        assert "Turn 1\nuser: Hi, I'm Ada.\nassistant: Hello Ada!" in prompt
        assert "Turn 3\nuser: What is my name?\nassistant: Ada." in prompt


@pytest.mark.parametrize("name", ["prompt-alignment", "tool-call-accuracy-llm"])
async def test_a_tool_result_that_fits_is_shown_whole_in_the_trajectory(
    server: JudgeServer, name: str
) -> None:
    """Before: cut at 4,000 characters whatever the judge's window."""
    result = filler(10_000, 12)
    first = len(server.requests)
    scored = await example_scorer(name, model=judge_on(server)).run(
        run_with(**{"tool result": result})
    )
    assert scored.status == "ok", scored.error
    steps = [
        body["messages"][-1]["content"]
        for body in server.requests[first:]
        if "<agent_steps>" in body["messages"][-1]["content"]
    ]
    assert steps and all(
        indented(result) in prompt and "characters cut" not in prompt for prompt in steps
    )


@pytest.mark.parametrize("name", judge_scorer_names(conversation=True))
async def test_a_long_message_that_fits_is_shown_whole(server: JudgeServer, name: str) -> None:
    """Before: every message was cut at 2,000 characters."""
    message = filler(6_000, 13)
    chat = conversation(
        ("Hi, I'm Ada.", "Hello Ada!"), (message, "Noted."), ("What is my name?", "Ada.")
    )
    first = len(server.requests)
    scored = await example_scorer(name, model=judge_on(server)).run(chat)
    assert scored.status == "ok", scored.error
    transcripts = [
        body["messages"][-1]["content"]
        for body in server.requests[first:]
        if "Turn 2" in body["messages"][-1]["content"]
    ]
    assert transcripts and all(
        indented(message) in p and "characters cut" not in p for p in transcripts
    )


def test_the_room_is_shared_fairly_and_small_values_are_never_cut() -> None:
    """Counted in UTF-8 bytes (the default budget's measure): a 300-byte value stays whole
    beside two long ones, which get equal shares."""
    assert fair_share([300, 50_000, 90_000], 10_300) == 5_000 - 32
    assert fair_share([300, 400], 10_000) == 400  # everything fits
    small, long_a, long_b = "s" * 300, "a " * 25_000, "b " * 45_000
    prompt = joined(
        "\n",
        [
            Material("<x>", Value(small), "</x>"),
            Material("<y>", Value(long_a), "</y>"),
            Material("<z>", Value(long_b), "</z>"),
        ],
    )
    shown = fit_prompt(prompt, 10_000, Budget())
    assert len(shown.encode()) <= 10_000
    assert f"<x>{small}</x>" in shown
    kept = [int(m.group(1).replace(",", "")) for m in re.finditer(r"cut: ([\d,]+)-", shown)]
    assert len(kept) == 2 and abs(kept[0] - kept[1]) < 200
    assert (
        fit_prompt(joined("\n", [Material(Value(small)), "task"]), 10_000, Budget())
        == f"{small}\ntask"
    )


async def test_a_list_the_judge_answers_item_by_item_is_never_cut() -> None:
    """Beside a 700,000-character answer in a 5,000-token budget, the 40 statements to judge are
    all shown (cutting them would leave the judge unable to give one result per statement)."""
    statements = [
        f"Statement {n}: the parcel was weighed, labelled, photographed, sealed and scanned at depot {n} before noon on Tuesday by the second shift."
        for n in range(40)
    ]
    with JudgeServer() as running:
        running.script("AnswerStatements", json_reply({"statements": statements}))
        running.script("RelevancyResults", json_reply({"results": [{"result": "yes"}] * 40}))
        scorer = example_scorer("answer-relevancy", model=judge_on(running, max_input_tokens=5_000))
        scored = await scorer.run(run_with(answer=filler(LONG, 14)))
        assert scored.status == "ok" and scored.score == 1.0, scored.error
        (results,) = [
            body
            for body in running.requests
            if "RelevancyResults" in str(body.get("response_format"))
        ]
    prompt = results["messages"][-1]["content"]
    assert request_tokens(results) <= 5_000 and MARKER.search(prompt)
    assert all(f"[{n}] {statement}\n" in prompt for n, statement in enumerate(statements))
