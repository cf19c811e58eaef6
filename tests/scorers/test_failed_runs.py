"""Runs that failed before answering are not scored as answers (issue 20, item 3).

A run whose agent span ended in error with no final answer gets ``not_scorable`` (reason: the
error) from every scorer that reads the answer, code and judge alike, without any judge call; a
run that failed but still answered is scored; tool-call scorers still judge the calls a failed
run made. The runs come out of real extraction of the two cases the issue saw live: a hand-made
OpenInference trace (a LangChain agent whose tool raised and whose agent span ended in error),
and Pydantic AI's captured tool-call trace cut where its tool raised.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from tests.support.extract_support import span, trace
from tests.support.judge_server import JudgeServer, json_reply
from tests.support.paths import CAPTURES
from tests.support.scorer_builds import CODE_READING_THE_ANSWER, QUESTION, build
from tests.support.scorer_names import judge_scorer_names
from tracescore.config import parse_config
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.ingest.files import load_traces
from tracescore.judge import LiteLLMJudge
from tracescore.monitor.rules import evaluate_rule
from tracescore.pipeline.scoring_task import build_worker
from tracescore.scorers.base import create_scorer, measure
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.scorers.unscorable import failed_without_answer
from tracescore.spans import STATUS_ERROR, Trace
from tracescore.store import open_store
from tracescore.store.score_aggregates import aggregate_scores, coverage
from tracescore.store.score_reads import ScoreFilter

ERROR = "ToolException: Unknown city: Atlantis"


def failed_trace(*, answer: str | None = None, tool_called: bool = True) -> Any:
    """A LangChain-style agent trace (OpenInference spans) whose tool raised and whose agent span
    ended in error; with ``answer`` the model still wrote a final answer before the failure."""
    agent = span(
        "AgentExecutor",
        {"openinference.span.kind": "AGENT", "input.value": QUESTION},
        status=STATUS_ERROR,
        status_message=ERROR,
    )
    llm_attributes = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": QUESTION,
        "llm.output_messages.0.message.role": "assistant",
    }
    if tool_called:
        prefix = "llm.output_messages.0.message.tool_calls.0.tool_call"
        llm_attributes |= {
            f"{prefix}.id": "call_1",
            f"{prefix}.function.name": "get_weather",
            f"{prefix}.function.arguments": orjson.dumps({"city": "Atlantis"}).decode(),
        }
    spans = [agent, span("ChatOpenAI", llm_attributes, parent=agent.span_id)]
    if tool_called:
        spans.append(
            span(
                "get_weather",
                {
                    "openinference.span.kind": "TOOL",
                    "tool.name": "get_weather",
                    "input.value": '{"city": "Atlantis"}',
                },
                parent=agent.span_id,
                status=STATUS_ERROR,
                status_message=ERROR,
            )
        )
    if answer is not None:
        spans.append(
            span(
                "ChatOpenAI",
                {
                    "openinference.span.kind": "LLM",
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": QUESTION,
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": answer,
                },
                parent=agent.span_id,
            )
        )
    return trace(*spans)


def failed_run(*, answer: str | None = None, tool_called: bool = True) -> AgentRun:
    """The agent run extracted from :func:`failed_trace`."""
    (run,) = [
        r
        for r in extract_runs(failed_trace(answer=answer, tool_called=tool_called))
        if r.kind == "agent"
    ]
    return run


def pydantic_ai_failed_trace(*, answered: bool = False) -> Trace:
    """Pydantic AI's captured weather run (``captures/pydantic-ai/tool_call``) as it looks when
    ``get_weather`` raises and the run ends in error: the agent and tool spans carry the error,
    the model's second turn never happened, and no final result was recorded. ``answered``
    keeps the answer and only marks the agent span failed (an error raised after answering)."""
    (captured,) = load_traces([CAPTURES / "pydantic-ai" / "tool_call"])
    first_chat = min(
        (s for s in captured.spans if s.name.startswith("chat ")), key=lambda s: s.start_time_ns
    )
    spans = []
    for found in captured.spans:
        attributes = dict(found.attributes)
        if found.name.startswith("invoke_agent"):
            if not answered:
                del attributes["final_result"]
                messages = orjson.loads(attributes["pydantic_ai.all_messages"])
                attributes["pydantic_ai.all_messages"] = orjson.dumps(
                    messages[:2]
                ).decode()  # question, tool call
            found = dataclasses.replace(
                found, attributes=attributes, status_code=STATUS_ERROR, status_message=ERROR
            )
        elif not answered and found.name.startswith("execute_tool"):
            attributes.pop("gen_ai.tool.call.result", None)
            found = dataclasses.replace(
                found, attributes=attributes, status_code=STATUS_ERROR, status_message=ERROR
            )
        elif not answered and found.name.startswith("chat ") and found is not first_chat:
            continue
        spans.append(found)
    return dataclasses.replace(captured, spans=spans)


def pydantic_ai_failed_run(*, answered: bool = False) -> AgentRun:
    """The agent run extracted from :func:`pydantic_ai_failed_trace`."""
    (run,) = [
        r for r in extract_runs(pydantic_ai_failed_trace(answered=answered)) if r.kind == "agent"
    ]
    return run


FAILED_WITHOUT_ANSWER: dict[str, Callable[[], AgentRun]] = {
    "openinference-langchain": failed_run,
    "pydantic-ai": pydantic_ai_failed_run,
}
FAILED_BUT_ANSWERED: dict[str, Callable[[], AgentRun]] = {
    "openinference-langchain": lambda: failed_run(answer="Atlantis is not a real city, sorry."),
    "pydantic-ai": lambda: pydantic_ai_failed_run(answered=True),
}


@pytest.mark.parametrize("convention", FAILED_WITHOUT_ANSWER)
def test_the_extracted_run_carries_the_agent_error_and_no_answer(convention: str) -> None:
    run = FAILED_WITHOUT_ANSWER[convention]()
    assert (run.status, run.error) == ("error", ERROR)
    assert ScorerRun.of(run).error == ERROR and failed_without_answer(ScorerRun.of(run))
    answered = ScorerRun.of(FAILED_BUT_ANSWERED[convention]())
    assert answered.error == ERROR and failed_without_answer(answered) is None


@pytest.mark.parametrize("convention", FAILED_WITHOUT_ANSWER)
@pytest.mark.parametrize("name", CODE_READING_THE_ANSWER)
def test_code_scorers_do_not_score_a_failed_run_without_answer(name: str, convention: str) -> None:
    result = build(name).run_sync(FAILED_WITHOUT_ANSWER[convention]())
    assert result.status == "not_scorable" and result.score is None
    assert result.reason == f"the run ended in error before answering: {ERROR}"


@pytest.mark.parametrize("convention", FAILED_BUT_ANSWERED)
@pytest.mark.parametrize("name", CODE_READING_THE_ANSWER)
def test_code_scorers_score_a_failed_run_that_answered(name: str, convention: str) -> None:
    result = build(name).run_sync(FAILED_BUT_ANSWERED[convention]())
    assert result.status == "ok" and result.score is not None


def test_code_tool_call_accuracy_judges_the_calls_of_a_failed_run() -> None:
    scorer = build("tool-call-accuracy-code")
    called = scorer.run_sync(failed_run())  # the tool was called, then raised: that call counts
    assert called.status == "ok" and called.score == 1.0
    nothing = scorer.run_sync(failed_run(tool_called=False))
    assert nothing.status == "not_scorable" and ERROR in nothing.reason


def judge_scorers() -> list[str]:
    return [n for n in judge_scorer_names() if n != "tool-call-accuracy-llm"]


@pytest.mark.parametrize("convention", FAILED_WITHOUT_ANSWER)
@pytest.mark.parametrize("name", judge_scorers())
async def test_judge_scorers_do_not_ask_the_judge_about_a_failed_run_without_answer(
    name: str, convention: str, server: JudgeServer, judge: LiteLLMJudge
) -> None:
    result = await build(name, judge).run(FAILED_WITHOUT_ANSWER[convention]())
    assert result.status == "not_scorable" and result.score is None
    assert result.reason == f"the run ended in error before answering: {ERROR}"
    assert server.count == 0


async def test_llm_tool_call_accuracy_judges_the_calls_of_a_failed_run(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script(
        "ToolEvaluations",
        json_reply(
            {
                "evaluations": [
                    {"toolCalled": "get_weather", "wasAppropriate": True, "reasoning": "asked"}
                ],
                "missingTools": [],
            }
        ),
    )
    scorer = build("tool-call-accuracy-llm", judge)
    called = await scorer.run(failed_run())
    assert called.status == "ok" and called.score == 1.0
    assert "failed: " in called.judge_calls[0].prompt and ERROR in called.judge_calls[0].prompt
    before = server.count
    nothing = await scorer.run(failed_run(tool_called=False))
    assert nothing.status == "not_scorable" and ERROR in nothing.reason and server.count == before


async def test_a_judge_scorer_scores_a_failed_run_that_answered(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script(
        "ToxicityVerdicts", json_reply({"verdicts": [{"verdict": "no", "reason": "polite"}]})
    )
    result = await build("toxicity", judge).run(failed_run(answer="Atlantis is not a real city."))
    assert result.status == "ok" and result.score == 0.0


def test_custom_scorers_opt_in() -> None:
    """A custom scorer reads what it likes (latency, tokens): it keeps scoring failed runs unless
    it says it needs the answer; a ``measure`` compares texts, so it does."""
    run = failed_run()
    latency = create_scorer(id="steps").generate_score(lambda ctx: 1.0)
    assert latency.run_sync(run).status == "ok"
    answer_based = create_scorer(id="answer", needs_answer=True).generate_score(lambda ctx: 1.0)
    assert answer_based.run_sync(run).status == "not_scorable"

    @measure(id="length")
    def length(input_text: str, output_text: str) -> float:
        return float(len(output_text))

    assert length.run_sync(run).status == "not_scorable"
    # The same run without the failure recorded (a Mastra-shaped dict) is scored.
    assert (
        length.run_sync({"input": run.mastra_input(), "output": run.mastra_output()}).status == "ok"
    )


def test_the_pipeline_stores_them_and_coverage_and_error_rates_count_them(db_url: str) -> None:
    """Stored as ``not_scorable`` rows with the error as reason: the run counts as sampled and
    attempted but not as scored (coverage), and as an error in error rates (the summary API's
    and the error-rate rule's), so a rise in failing runs shows as falling coverage and a rising
    error rate instead of as fake quality scores. A run that failed after answering is scored."""
    store = open_store(db_url)
    for found in (failed_trace(), pydantic_ai_failed_trace(answered=True)):
        store.write(found.spans, found.logs)
    config = parse_config("""
scorers:
  - {name: tone, scorer: tone}
  - {name: complete, scorer: completeness}
alerts:
  rules:
    - {name: failing, type: error_rate, binding: tone, above: 0.4, min_samples: 2}
""")
    worker = build_worker(config.scoring(), store)

    async def score_all() -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for claim in store.queue.claim(worker.owner, 100, 30.0, now=4_000_000_000.0):
            rows.extend(await worker.process(claim))
        return rows

    rows = asyncio.run(score_all())
    assert sorted(
        (r["binding"], r["status"], r["reason"]) for r in rows if r["status"] != "ok"
    ) == [
        (name, "not_scorable", f"the run ended in error before answering: {ERROR}")
        for name in ("complete", "tone")
    ]
    assert sorted(r["binding"] for r in rows if r["status"] == "ok") == [
        "complete",
        "tone",
    ]  # the answered one
    with store.engine.connect() as connection:
        found = {c.binding: c for c in coverage(connection, None, None)}
        stats = {s.group[0]: s for s in aggregate_scores(connection, ScoreFilter(), ["binding"])}
        (verdict,) = evaluate_rule(connection, config.alerts.rules[0], datetime.now(UTC))
    for name in ("tone", "complete"):
        assert (found[name].sampled, found[name].scored, found[name].statuses) == (
            2,
            1,
            {"ok": 1, "not_scorable": 1},
        )
        assert (stats[name].attempted, stats[name].errors, stats[name].failed_runs) == (2, 1, 1)
    assert verdict.firing and verdict.value == 0.5
    assert "1 of them runs that failed before answering" in verdict.summary
