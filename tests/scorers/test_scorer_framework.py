"""The scorer framework: builder, step pipeline, judge steps, errors, sync/async and run shapes."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from tracescore.extract.model import (
    AgentRun,
    ContextDocument,
    Message,
    MessageContent,
    MessagePart,
    RunInput,
    ToolDefinition,
)
from tracescore.scorers import (
    Judge,
    JudgeRequest,
    JudgeResponse,
    PromptStep,
    ScorerRun,
    StepContext,
    create_scorer,
    measure,
    not_scorable,
    resolve_judge,
    scorer,
)
from tracescore.scorers.utils import make_agent_run, make_test_message


class ScriptedJudge:
    """A judge answering from a script: the framework's side of the judge protocol under test."""

    def __init__(self, *answers: object, model: str = "scripted/judge") -> None:
        self.model = model
        self.answers = list(answers)
        self.requests: list[JudgeRequest] = []

    async def complete(self, request: JudgeRequest) -> JudgeResponse:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if request.schema is not None and isinstance(answer, dict):
            output: object = request.schema.model_validate(answer)
            text = json.dumps(answer)
        else:
            output = text = str(answer)
        return JudgeResponse(
            output=output,
            text=text,
            model=self.model,
            input_tokens=len(request.prompt),
            output_tokens=len(text),
            cost_usd=0.001,
            attempts=1,
            duration_ms=1.5,
            cached=False,
        )


def qa_run(question: str = "What is 2+2?", answer: str = "It is 4.") -> dict:
    return make_agent_run(
        input_messages=[make_test_message(question, "user", id="u1")],
        output=[make_test_message(answer, "assistant", id="a1")],
        run_id="run-1",
    )


def test_steps_run_in_pipeline_order_and_see_earlier_results() -> None:
    seen: dict[str, dict] = {}

    def step(name: str, value: object):
        def run(ctx: StepContext) -> object:
            seen[name] = dict(ctx.results)
            return value

        return run

    # Added out of order on purpose: the pipeline order is fixed.
    built = (
        create_scorer(id="ordered", description="d", version="7")
        .generate_reason(lambda ctx: f"score was {ctx.score}")
        .generate_score(step("generate_score", 0.5))
        .analyze(step("analyze", {"a": 1}))
        .preprocess(step("preprocess", {"p": 1}))
    )
    result = built.run_sync(qa_run())
    assert [s.name for s in result.steps] == [
        "preprocess",
        "analyze",
        "generate_score",
        "generate_reason",
    ]
    assert seen["preprocess"] == {}
    assert seen["analyze"] == {"preprocess_step_result": {"p": 1}}
    assert seen["generate_score"] == {
        "preprocess_step_result": {"p": 1},
        "analyze_step_result": {"a": 1},
    }
    assert (result.status, result.score, result.reason) == ("ok", 0.5, "score was 0.5")
    assert (result.scorer_id, result.scorer_version) == ("ordered", "7")
    assert result.preprocess_step_result == {"p": 1} and result.analyze_step_result == {"a": 1}
    assert result.generate_score_step_result == 0.5
    assert all(s.duration_ms >= 0 for s in result.steps) and result.duration_ms >= 0


def test_builder_is_immutable() -> None:
    base = create_scorer(id="base")
    with_score = base.generate_score(lambda ctx: 1)
    assert base.steps == () and [name for name, _ in with_score.steps] == ["generate_score"]
    assert base.name == "base"
    with pytest.raises(TypeError):
        base.analyze("not a step")  # type: ignore[arg-type]


async def test_async_steps_and_async_run() -> None:
    async def analyze(ctx: StepContext) -> int:
        await asyncio.sleep(0)
        return len(ctx.run.output)

    built = (
        create_scorer(id="async")
        .analyze(analyze)
        .generate_score(lambda ctx: ctx.results["analyze_step_result"] / 2)
    )
    assert not built.is_synchronous
    result = await built.run(qa_run())
    assert result.score == 0.5
    # run_sync from inside a running loop still works (private thread).
    assert built.run_sync(qa_run()).score == 0.5


def test_run_sync_without_loop_for_async_scorer() -> None:
    async def score(ctx: StepContext) -> float:
        await asyncio.sleep(0)
        return 1.0

    assert create_scorer(id="a").generate_score(score).run_sync(qa_run()).score == 1.0


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (lambda ctx: 1 / 0, "division by zero"),
        (lambda ctx: {}["missing"], "'missing'"),
    ],
)
def test_step_errors_become_error_results(step, message: str) -> None:
    result = create_scorer(id="boom").analyze(step).generate_score(lambda ctx: 1).run_sync(qa_run())
    assert result.status == "error"
    assert result.error == message
    assert result.failed_step == "analyze"
    assert result.score is None
    assert result.steps[-1].error == message


@pytest.mark.parametrize("value", ["0.5", None, True, float("nan")])
def test_generate_score_must_return_a_number(value: object) -> None:
    result = create_scorer(id="bad").generate_score(lambda ctx: value).run_sync(qa_run())
    assert result.status == "error" and result.failed_step == "generate_score"


def test_missing_generate_score_is_an_error_result() -> None:
    result = create_scorer(id="incomplete").preprocess(lambda ctx: 1).run_sync(qa_run())
    assert result.status == "error" and "generate_score" in result.error


def test_not_scorable_stops_the_run() -> None:
    later: list[str] = []
    result = (
        create_scorer(id="picky")
        .preprocess(lambda ctx: not_scorable("no tool calls to judge"))
        .generate_score(lambda ctx: later.append("ran") or 1)
        .run_sync(qa_run())
    )
    assert (result.status, result.reason, result.score, result.failed_step) == (
        "not_scorable",
        "no tool calls to judge",
        None,
        "preprocess",
    )
    assert later == []


class Claims(BaseModel):
    claims: list[str]


def test_prompt_steps_call_the_judge_with_schema_and_instructions() -> None:
    judge = ScriptedJudge({"claims": ["a", "b"]}, {"score": 0.75}, "Because.")
    built = (
        create_scorer(id="judged", version="2", judge=judge, instructions="You are strict.")
        .preprocess(
            PromptStep(
                "extract claims",
                lambda ctx: f"Claims in: {ctx.run.output[0]['content']['content']}",
                output_schema=Claims,
            )
        )
        .generate_score(
            PromptStep(
                "score",
                lambda ctx: f"Score {len(ctx.results['preprocess_step_result'].claims)} claims",
            )
        )
        .generate_reason(
            PromptStep("reason", lambda ctx: f"Explain {ctx.score}", instructions="Be brief.")
        )
    )
    assert built.uses_judge and not built.is_synchronous
    result = built.run_sync(qa_run(answer="It is 4."))
    assert result.status == "ok", result.error
    assert result.preprocess_step_result == Claims(claims=["a", "b"])
    assert (result.score, result.reason) == (0.75, "Because.")
    first, second, third = judge.requests
    assert (
        first.schema,
        first.instructions,
        first.step,
        first.scorer_id,
        first.scorer_version,
    ) == (
        Claims,
        "You are strict.",
        "preprocess",
        "judged",
        "2",
    )
    assert first.prompt == "Claims in: It is 4."
    assert second.schema is not None and set(second.schema.model_fields) == {"score"}
    assert (third.schema, third.instructions, third.prompt) == (None, "Be brief.", "Explain 0.75")
    assert [c.step for c in result.judge_calls] == [
        "preprocess",
        "generate_score",
        "generate_reason",
    ]
    assert result.steps[0].prompt == "Claims in: It is 4." and len(result.steps[0].judge_calls) == 1
    assert result.input_tokens == sum(len(r.prompt) for r in judge.requests)
    assert result.cost_usd == pytest.approx(0.003)
    # Results serialise to JSON, judge outputs included.
    dumped = json.loads(result.model_dump_json())
    assert dumped["preprocess_step_result"] == {"claims": ["a", "b"]}


class UnvalidatedJudge(ScriptedJudge):
    """Hands back the raw answer: the framework must validate it against the step's schema."""

    async def complete(self, request: JudgeRequest) -> JudgeResponse:
        self.requests.append(request)
        return JudgeResponse(output=self.answers.pop(0), text="{}", model=self.model)


def test_step_judge_overrides_scorer_judge_and_bad_answers_are_errors() -> None:
    scorer_judge, step_judge = ScriptedJudge(), UnvalidatedJudge({"claims": "not a list"})
    built = (
        create_scorer(id="override", judge=scorer_judge)
        .analyze(PromptStep("claims", lambda ctx: "p", output_schema=Claims, judge=step_judge))
        .generate_score(lambda ctx: 1)
    )
    result = built.run_sync(qa_run())
    assert scorer_judge.requests == [] and len(step_judge.requests) == 1
    assert result.status == "error" and "does not match Claims" in result.error
    assert len(result.judge_calls) == 1  # the failed call still counts (it cost tokens)
    valid = UnvalidatedJudge({"claims": ["x"]})
    fine = (
        create_scorer(id="ok", judge=valid)
        .analyze(PromptStep("claims", lambda ctx: "p", output_schema=Claims))
        .generate_score(lambda ctx: 1)
    )
    assert fine.run_sync(qa_run()).analyze_step_result == Claims(claims=["x"])


def test_prompt_step_without_judge_is_an_error_result() -> None:
    result = (
        create_scorer(id="nojudge")
        .generate_score(PromptStep("s", lambda ctx: "p"))
        .run_sync(qa_run())
    )
    assert result.status == "error" and "judge" in result.error


def test_resolve_judge_passes_judges_through_and_builds_from_model_strings() -> None:
    judge = ScriptedJudge()
    assert resolve_judge(judge) is judge
    built = resolve_judge("openai/gpt-4o-mini")
    assert isinstance(built, Judge) and "gpt-4o-mini" in built.model
    with pytest.raises(ValueError):
        resolve_judge(None)


def test_scorer_run_from_agent_run_dict_and_snake_case() -> None:
    agent_run = AgentRun(
        trace_id="t" * 32,
        span_id="s" * 16,
        input=RunInput(
            input_messages=[
                Message(
                    id="u1",
                    role="user",
                    content=MessageContent(
                        parts=[MessagePart(type="text", text="hi")], content="hi"
                    ),
                )
            ]
        ),
        output=[
            Message(
                id="a1",
                role="assistant",
                created_at=datetime(2025, 1, 1, tzinfo=UTC),
                content=MessageContent(parts=[MessagePart(type="text", text="hello")]),
            )
        ],
        context=[ContextDocument(content="doc one")],
        tools=[ToolDefinition(name="search")],
        ground_truth="hello",
    )
    run = ScorerRun.of(agent_run)
    assert run.agent_run is agent_run
    assert run.input["inputMessages"][0]["content"]["content"] == "hi"
    assert run.output[0]["content"]["parts"] == [{"type": "text", "text": "hello"}]
    assert (run.context, [t.name for t in run.tools], run.ground_truth) == (
        ["doc one"],
        ["search"],
        "hello",
    )
    assert (run.trace_id, run.span_id) == ("t" * 32, "s" * 16)

    camel = ScorerRun.of(
        {
            "input": "q",
            "output": "a",
            "groundTruth": 1,
            "runId": "r",
            "traceId": "t",
            "tools": [{"name": "x"}],
            "context": ["c"],
        }
    )
    snake = ScorerRun.of(
        {
            "input": "q",
            "output": "a",
            "ground_truth": 1,
            "run_id": "r",
            "trace_id": "t",
            "tools": [{"name": "x"}],
            "context": ["c"],
        }
    )
    assert camel == snake and camel.tools[0].name == "x"
    assert ScorerRun.of(camel) is camel
    with pytest.raises(TypeError):
        ScorerRun.of(42)  # type: ignore[arg-type]


def test_an_agent_run_scores_like_its_mastra_dict() -> None:
    agent_run = AgentRun(
        trace_id="t" * 32,
        span_id="s" * 16,
        input=RunInput(
            input_messages=[
                Message(id="u1", role="user", content=MessageContent(content="cats dogs"))
            ]
        ),
        output=[Message(id="a1", role="assistant", content=MessageContent(content="dogs only"))],
    )
    from tracescore.scorers import create_keyword_coverage_scorer

    coverage = create_keyword_coverage_scorer()
    assert coverage.run_sync(agent_run).score == 0.5
    assert (
        coverage.run_sync(
            {"input": agent_run.mastra_input(), "output": agent_run.mastra_output()}
        ).score
        == 0.5
    )


def test_unusable_run_is_an_error_result() -> None:
    result = create_scorer(id="x").generate_score(lambda ctx: 1).run_sync(42)  # type: ignore[arg-type]
    assert result.status == "error" and "int" in result.error


@scorer(id="answer-length", description="Long enough answers")
def answer_length(run: ScorerRun) -> tuple[float, str]:
    text = run.output[-1]["content"]["content"]
    return min(1.0, len(text) / 10), f"{len(text)} characters"


def test_scorer_decorator_returns_score_and_reason() -> None:
    result = answer_length.run_sync(qa_run(answer="It is 4."))
    assert (result.status, result.score, result.reason) == ("ok", 0.8, "8 characters")
    assert (
        answer_length.id == "answer-length" and answer_length.description == "Long enough answers"
    )


async def test_scorer_decorator_accepts_async_functions() -> None:
    @scorer(id="async-one")
    async def one(run: ScorerRun) -> float:
        await asyncio.sleep(0)
        return 1.0

    assert (await one.run(qa_run())).score == 1.0


@measure(id="word-inclusion", description="Share of the input's words present in the output")
def word_inclusion(input: str, output: str) -> float:
    """Mastra's custom-metric example: unique lowercase words of the input found in the output."""
    words = set(re.findall(r"\w+", input.lower()))
    found = set(re.findall(r"\w+", output.lower()))
    return len(words & found) / len(words) if words else 0.0


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        ("apple, banana, orange", "My favorite fruits are: apple, banana, and orange.", 1.0),
        ("cats, dogs, rabbits", "I like dogs and rabbits", 0.667),
        ("Colombia, Brazil, Panama", "Let's go to Mexico", 0.0),
        ("", "anything", 0.0),
    ],
)
def test_word_inclusion_metric(question: str, answer: str, expected: float) -> None:
    result = word_inclusion.run_sync(qa_run(question, answer))
    assert result.score == pytest.approx(expected, abs=0.001)
    assert word_inclusion.run_sync({"input": question, "output": answer}).score == pytest.approx(
        expected, abs=0.001
    )


def test_results_are_the_instances_model_construct_builds() -> None:
    """The framework builds ``ScoreResult``/``StepTrace`` without ``model_construct`` (see
    ``results.constructed``): each must be the instance ``model_construct`` gives for its fields."""

    judge = ScriptedJudge({"claims": ["a"]}, "Because.")
    built = (
        create_scorer(id="built", judge=judge)
        .preprocess(PromptStep("claims", lambda ctx: "p", output_schema=Claims))
        .analyze(lambda ctx: {"n": 1})
        .generate_score(lambda ctx: 0.5)
        .generate_reason(PromptStep("reason", lambda ctx: "why"))
    )
    failed = create_scorer(id="failed").analyze(lambda ctx: 1 / 0).generate_score(lambda ctx: 1)
    results = [built.run_sync(qa_run()), failed.run_sync(qa_run())]
    models = [*results, *(trace for result in results for trace in result.steps)]
    assert len(models) == 2 + 4 + 1
    for model in models:
        cls = type(model)
        assert (
            "__new__" not in vars(cls)
            and not cls.__pydantic_post_init__
            and not cls.__private_attributes__
        )
        assert not any(f.alias or f.validation_alias for f in cls.model_fields.values())
        expected = cls.model_construct(**model.__dict__)
        assert list(model.__dict__.items()) == list(expected.__dict__.items())
        assert (
            model.__pydantic_fields_set__
            == expected.__pydantic_fields_set__
            == set(cls.model_fields)
        )
        assert (model.__pydantic_extra__, model.__pydantic_private__) == (None, None)
        assert model == expected and model.model_dump_json() == expected.model_dump_json()


def test_synchronous_scorers_are_recognised_once_per_scorer() -> None:
    async def later(ctx: StepContext) -> float:
        return 1.0

    sync = create_scorer(id="s").generate_score(lambda ctx: 1.0)
    assert sync.is_synchronous and sync.is_synchronous
    made_async = sync.analyze(later)  # a new scorer: its own answer
    assert not made_async.is_synchronous and sync.is_synchronous
    assert create_scorer(id="n").preprocess(lambda ctx: 1).run_sync(qa_run()).status == "error"
