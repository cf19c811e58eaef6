"""The dry-run cost estimate's pieces: the scorers' sketched answers, the generic fallback, and
output tokens learnt per step from the store.

Everything runs offline: the pricing judge counts tokens with litellm's tokenizer and calls no
judge; the store is a real SQLite file.
"""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from sqlalchemy import insert

from tests.support.score_rows import ScoreView
from tests.support.scorer_names import judge_scorer_names
from tracescore.judge.cache import verdict_key
from tracescore.judge.config import JudgeConfig
from tracescore.judge.protocol import JudgeRequest
from tracescore.offline.estimate import (
    DEFAULT_TEXT_SENTENCES,
    TYPICAL_ITEMS,
    PastAnswers,
    PricedCall,
    PricingJudge,
    estimate_cost,
    with_pricing_judge,
)
from tracescore.scorers import (
    create_context_precision_scorer,
    create_faithfulness_scorer,
    create_prompt_alignment_scorer,
    registry,
)
from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.llm.faithfulness import INSTRUCTIONS, VERSION, FaithfulnessClaims
from tracescore.scorers.llm.typical_answers import SENTENCE_WORDS, sentences
from tracescore.scorers.results import ScoreResult
from tracescore.scorers.steps import PromptStep
from tracescore.scorers.utils import make_agent_run, make_test_message, make_tool_invocation
from tracescore.store import open_store
from tracescore.store.judge_cache import JudgeVerdict
from tracescore.store.scores import upsert_scores

MODEL = "openai/gpt-4o-mini"
USER = "What's the weather in Paris today? Keep it short."
SYSTEM = "You are a concise weather assistant. Always answer in English."
ANSWER = (
    "It is sunny in Paris today. The temperature is 21 degrees!\n"
    "Would you like the forecast for tomorrow?"
)
CLAIMS = [
    "It is sunny in Paris today.",
    "The temperature is 21 degrees!",
    "Would you like the forecast for tomorrow?",
]


def weather_run(*, system: bool = True) -> dict[str, Any]:
    """A run with a system prompt, a tool result (the context), an answer and a ground truth."""
    call = make_tool_invocation(
        tool_call_id="t1",
        tool_name="weather",
        args={"city": "Paris"},
        result={"forecast": "sunny", "temperature_c": 21},
    )
    output = make_test_message(ANSWER, "assistant", id="a1", tool_invocations=[call])
    return make_agent_run(
        input_messages=[make_test_message(USER, "user", id="u1")],
        system_messages=[{"role": "system", "content": SYSTEM}] if system else [],
        output=[output],
        ground_truth="It is sunny and 21 degrees in Paris.",
    )


def priced(
    scorer: Scorer, run: dict[str, Any], judge: PricingJudge | None = None
) -> tuple[ScoreResult, list[PricedCall]]:
    judge = judge or PricingJudge(MODEL)
    result = with_pricing_judge(scorer, judge).run_sync(run)
    return result, list(judge.calls)


def words(text: str) -> int:
    return len(text.split())


def tokens(text: str) -> int:
    # Imported here: at module level every pytest process imported litellm (~2 s of CPU) while
    # collecting, though one process runs these tests.
    import litellm

    return litellm.token_counter(model=MODEL, text=text)


# ----------------------------------------------------------------------------- sketches


def test_faithfulness_sketch_splits_the_answer_and_judges_each_claim() -> None:
    result, calls = priced(create_faithfulness_scorer(model=MODEL), weather_run())
    assert result.status == "ok"
    assert [(c.step, c.source, c.cached) for c in calls] == [
        ("preprocess", "sketch", False),
        ("analyze", "sketch", False),
        ("generate_reason", "sketch", False),
    ]
    # One claim per sentence of the final answer, restating it.
    assert result.preprocess_step_result.claims == CLAIMS
    # One verdict per claim, each with a one-sentence reason of typical length.
    verdicts = result.analyze_step_result.verdicts
    assert len(verdicts) == len(CLAIMS)
    assert all(
        words(v.reason) == SENTENCE_WORDS and len(sentences(v.reason)) == 1 for v in verdicts
    )
    # Later prompts render with the sketched claims and verdicts, so they are priced full size.
    analyze_prompt, reason_prompt = result.steps[1].prompt, result.steps[3].prompt
    assert all(f"[{i}] {claim}" in analyze_prompt for i, claim in enumerate(CLAIMS))
    assert reason_prompt.count(": The context states this directly") == len(CLAIMS)
    # The reason: "two or three sentences" is priced at two and a half.
    assert len(sentences(result.reason)) == 3 and words(result.reason) == 2.5 * SENTENCE_WORDS
    # Output tokens are counted on the JSON the judge would send back.
    sent = json.dumps({"claims": CLAIMS})
    assert calls[0].output_tokens == tokens(sent)
    assert calls[2].output_tokens == tokens(result.reason)
    assert calls[1].input_tokens > calls[0].input_tokens  # the context and claims are in it


def test_context_precision_sketch_judges_every_context_piece() -> None:
    pieces = ["Paris is sunny today.", "Tomorrow brings rain.", "Lyon is cloudy."]
    scorer = create_context_precision_scorer(model=MODEL, context=pieces)
    result, calls = priced(scorer, weather_run())
    assert result.status == "ok" and result.score == 1.0
    verdicts = result.analyze_step_result.verdicts
    assert [v.context_index for v in verdicts] == [0, 1, 2]
    assert all(words(v.reason) == SENTENCE_WORDS for v in verdicts)
    assert [c.source for c in calls] == ["sketch", "sketch"]
    assert len(sentences(result.reason)) == 3


def test_prompt_alignment_sketch_checks_each_requested_sentence() -> None:
    scorer = create_prompt_alignment_scorer(model=MODEL)
    result, _ = priced(scorer, weather_run())
    analysis = result.analyze_step_result
    user_checks = analysis.user_alignment.requirements_fulfillment.requirements
    assert [r.requirement for r in user_checks] == sentences(USER)
    system_checks = analysis.system_alignment.requirements_fulfillment.requirements
    assert [r.requirement for r in system_checks] == sentences(SYSTEM)
    # Without a system prompt the judge is told to leave that evaluation out.
    result, _ = priced(scorer, weather_run(system=False))
    assert result.analyze_step_result.system_alignment is None
    # The instruction-list form: one verdict per instruction.
    rules = ["Answer in English.", "Mention the temperature.", "Use bullet points."]
    result, _ = priced(
        create_prompt_alignment_scorer(model=MODEL, instructions=rules), weather_run()
    )
    assert [v.instruction for v in result.analyze_step_result.verdicts] == rules


@pytest.mark.parametrize("name", judge_scorer_names())
def test_every_prebuilt_judge_step_is_sketched(name: str) -> None:
    """Each prebuilt LLM scorer runs to the end on its own sketches, with no generic answer."""
    options = {"noise-sensitivity": {"baselineResponse": "Sunny, 21 °C.", "noisyQuery": USER}}
    scorer = registry.get(name).factory(model=MODEL, **options.get(name, {}))
    result, calls = priced(scorer, weather_run())
    assert result.status == "ok", result.error
    prompt_steps = [n for n, step in scorer.steps if isinstance(step, PromptStep)]
    assert [c.step for c in calls] == prompt_steps
    assert {c.source for c in calls} == {"sketch"}
    assert all(c.output_tokens > 0 for c in calls)


# ----------------------------------------------------------------------------- generic fallback


class Finding(BaseModel):
    label: Literal["good", "bad"]
    note: str
    weight: float


class Findings(BaseModel):
    findings: list[Finding]
    summary: str | None = None
    count: int


def custom_scorer() -> Scorer:
    """A custom scorer whose prompt steps have no sketch."""
    return (
        create_scorer(id="custom-findings", judge=MODEL)
        .analyze(PromptStep("Find things", lambda ctx: "List the findings.", Findings))
        .generate_score(lambda ctx: len(ctx.results["analyze_step_result"].findings) / 10)
        .generate_reason(PromptStep("Explain", lambda ctx: f"Explain the score {ctx.score}."))
    )


def test_steps_without_a_sketch_get_a_generic_typical_answer() -> None:
    result, calls = priced(custom_scorer(), weather_run())
    assert result.status == "ok" and result.score == TYPICAL_ITEMS / 10
    findings = result.analyze_step_result
    assert len(findings.findings) == TYPICAL_ITEMS
    assert {(f.label, words(f.note), f.weight) for f in findings.findings} == {
        ("good", SENTENCE_WORDS, 0.5)
    }
    assert words(findings.summary) == SENTENCE_WORDS and findings.count == 1
    assert words(result.reason) == DEFAULT_TEXT_SENTENCES * SENTENCE_WORDS
    assert [c.source for c in calls] == ["generic", "generic"]
    estimate = estimate_cost(
        SimpleNamespace(name="b", scorer=custom_scorer()), [weather_run()], 1, None
    )
    assert estimate.method.endswith("of the 2 paid calls sampled: 2 generic (no sketch)")


# ----------------------------------------------------------------------------- history in the store


def store_verdict(
    engine: Any,
    step: str,
    output_tokens: int,
    *,
    scorer_id: str = "faithfulness-scorer",
    key: str | None = None,
    model: str = MODEL,
    text: str = "{}",
) -> None:
    row = JudgeVerdict(
        key=key or uuid.uuid4().hex,
        scorer_id=scorer_id,
        scorer_version=VERSION,
        step=step,
        model=model,
        text=text,
        output_tokens=output_tokens,
    )
    with engine.begin() as connection:
        connection.execute(insert(JudgeVerdict.__table__), [row.model_dump()])


def store_score(engine: Any, calls: list[tuple[str, int, bool]]) -> None:
    """A score row whose judge calls were ``(step, output tokens, cached)``."""
    steps = [
        {"name": step, "judge_calls": [{"step": step, "output_tokens": out, "cached": cached}]}
        for step, out, cached in calls
    ]
    row = ScoreView(
        id=uuid.uuid4().hex,
        trace_id="7" * 32,
        span_id="5" * 16,
        binding="faithfulness",
        scorer_id="faithfulness-scorer",
        scorer_version="1",
        status="ok",
        steps={"steps": steps},
        output_tokens=sum(out for _, out, cached in calls if not cached),
    )
    with engine.begin() as connection:
        upsert_scores(connection, [row.model_dump()])  # type: ignore[list-item]


@pytest.fixture
def engine(sqlite_url: str) -> Any:
    store = open_store(sqlite_url)
    yield store.engine
    store.close()


def faithfulness_estimate(engine: Any) -> Any:
    binding = SimpleNamespace(name="faithfulness", scorer=create_faithfulness_scorer(model=MODEL))
    return estimate_cost(binding, [weather_run()], 10, engine)


def test_output_tokens_are_learnt_per_step(engine: Any) -> None:
    sketched = faithfulness_estimate(engine)
    assert sketched.calls_per_run == 3
    assert sketched.method.endswith("of the 3 paid calls sampled: 3 sketched")
    _, calls = priced(create_faithfulness_scorer(model=MODEL), weather_run())
    reason_tokens = calls[2].output_tokens
    # Past paid calls of two steps (none of these prompts): their means replace the sketch there;
    # another scorer's calls and calls without token counts are not this scorer's history.
    for step, out in [
        ("preprocess", 30),
        ("preprocess", 50),
        ("analyze", 90),
        ("generate_reason", 0),
    ]:
        store_verdict(engine, step, out)
    store_verdict(engine, "preprocess", 999, scorer_id="toxicity-scorer")
    learnt = faithfulness_estimate(engine)
    assert learnt.calls_per_run == 3
    assert learnt.output_tokens_per_call == pytest.approx((40 + 90 + reason_tokens) / 3)
    assert "2 from their step's past calls, 1 sketched" in learnt.method
    assert learnt.input_tokens_per_run == sketched.input_tokens_per_run
    # A judge without a verdict table (cache: false) leaves its calls in the score rows: they
    # serve for the steps the table has nothing on, cached calls left out.
    store_score(
        engine,
        [
            ("preprocess", 1000, False),
            ("generate_reason", 70, False),
            ("generate_reason", 500, True),
        ],
    )
    rows = faithfulness_estimate(engine)
    assert rows.output_tokens_per_call == pytest.approx((40 + 90 + 70) / 3)
    assert rows.method.endswith("of the 3 paid calls sampled: 3 from their step's past calls")
    assert rows.cost_usd > learnt.cost_usd > 0


def test_a_stored_answer_to_the_same_prompt_is_the_typical_answer(engine: Any) -> None:
    scorer = create_faithfulness_scorer(model=MODEL)
    result, _ = priced(scorer, weather_run())
    request = JudgeRequest(
        prompt=result.steps[0].prompt,
        instructions=INSTRUCTIONS,
        schema=FaithfulnessClaims,
        scorer_id=scorer.id,
        scorer_version=scorer.version,
        step="preprocess",
    )
    claims = json.dumps({"claims": ["Paris is sunny.", "It is 21 degrees.", "No rain.", "Calm."]})
    # Answered before by another model: what this judge is priced with, at its output tokens.
    other = "openai/gpt-4o"
    store_verdict(
        engine, "preprocess", 33, key=verdict_key(request, other), model=other, text=claims
    )
    judge = PricingJudge(MODEL, PastAnswers.of(engine, scorer.id, MODEL).find)
    result, calls = priced(scorer, weather_run(), judge)
    assert (calls[0].source, calls[0].output_tokens, calls[0].cached) == ("same request", 33, False)
    assert len(result.analyze_step_result.verdicts) == 4  # rendered with the stored claims
    assert "as answered before to the same prompt" in faithfulness_estimate(engine).method
    # Answered before by this very judge: the verdict cache serves it, the call is free.
    store_verdict(engine, "preprocess", 33, key=verdict_key(request, MODEL), text=claims)
    judge = PricingJudge(MODEL, PastAnswers.of(engine, scorer.id, MODEL).find)
    result, calls = priced(scorer, weather_run(), judge)
    assert calls[0].cached and len(result.analyze_step_result.verdicts) == 4
    assert faithfulness_estimate(engine).calls_per_run == 2


# ----------------------------------------------------------------------------- copies of a run


def test_a_caching_judge_pays_for_a_runs_copies_once_and_one_without_a_cache_each_time() -> None:
    def estimate(judge: Any, **sampled: Any) -> Any:
        binding = SimpleNamespace(name="b", scorer=create_faithfulness_scorer(model=judge))
        return estimate_cost(binding, [weather_run()], 10, None, **sampled)

    uncached = JudgeConfig(model=MODEL, cache=False)
    ten_distinct = estimate(MODEL)
    # The 10 runs to score are copies of the one sampled: the verdict cache serves nine of them.
    one_paid = estimate(MODEL, copies=[10], distinct=1)
    assert one_paid.runs == 10 and one_paid.calls_per_run == pytest.approx(0.3)
    assert one_paid.cost_usd == pytest.approx(ten_distinct.cost_usd / 10)
    assert "1 distinct of the 10 runs; copies of a run are cache hits" in one_paid.method
    # Without a cache every copy is paid, as are ten distinct runs.
    every_copy = estimate(uncached, copies=[10], distinct=1)
    assert every_copy.calls_per_run == 3
    assert every_copy.cost_usd == pytest.approx(estimate(uncached).cost_usd)
    assert every_copy.cost_usd == pytest.approx(ten_distinct.cost_usd)
    assert "copies of a run are paid again" in every_copy.method
