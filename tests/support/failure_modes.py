"""A synthetic stream of failed agent runs with three planted failure modes among noise.

The modes of issue 38: the weather tool times out for one city (Lisbon), answers come in the
wrong language (Spanish to English questions), and the agent refuses ordinary requests after
a prompt change. The noise is failures of every other kind, written from the same vocabulary
of requests (other cities' weather included), so a grouping has to find what a mode shares
rather than what a topic does. Each run can be written to a real store as a GenAI-semconv
trace (an agent span and a tool span) with the failing score a binding would have stored.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson

from tracescore.insights.runs import FailedRun
from tracescore.spans import Resource, Scope, Span
from tracescore.store import SpanStore
from tracescore.store.scores import StoredScore, score_id, upsert_scores

MODES = ("lisbon_timeout", "wrong_language", "refusal")
NOISE = "noise"

CITIES = ["Paris", "Berlin", "Madrid", "Rome", "Oslo", "Vienna", "Prague", "Dublin", "Warsaw"]
TOPICS = [
    "book a table for two at an italian restaurant tonight",
    "summarise the quarterly sales report for the board",
    "convert 250 euros to japanese yen",
    "find a train from Munich to Zurich on Friday morning",
    "explain how to reset my router password",
    "draft a polite reminder email about the unpaid invoice",
    "recommend a science fiction novel similar to Dune",
    "what are the opening hours of the city museum",
    "list three stretching exercises for lower back pain",
    "translate the meeting agenda into German",
    "calculate the mortgage payment for 300000 over 25 years",
    "suggest a vegetarian recipe with chickpeas and spinach",
]
SYLLABLES = "ka lo mi ne ru ta vo zi pe shu gra den fil mon tor bex".split()
NOISE_WORDS = [
    a + b + c + d for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES for d in SYLLABLES
]
"""65,536 made-up words: a noise failure says five of them, so no few noise runs share much."""
SPANISH = [
    "Claro, aquí tiene la respuesta que necesita sobre su consulta de hoy.",
    "Lo siento por la espera, la información que busca es la siguiente.",
    "Según los datos disponibles, la mejor opción para usted es esta.",
    "Por supuesto, con mucho gusto le ayudo con esta pregunta.",
]
REFUSALS = [
    "I'm sorry, but I can't help with that request.",
    "I cannot assist with this. Please contact a human representative.",
    "Unfortunately I am not able to help with that under my current guidelines.",
]
AGENTS = ["travel-assistant", "office-assistant"]
MODELS = ["gpt-4o-mini", "gpt-4.1"]


@dataclass(frozen=True, slots=True)
class PlantedRun:
    trace_id: str
    span_id: str
    mode: str
    request: str
    answer: str
    tool: str
    tool_error: str | None
    reason: str
    agent: str
    model: str
    failed_at: float


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(digits * 4):0{digits}x}"


def _mode_run(rng: random.Random, mode: str) -> tuple[str, str, str, str | None, str]:
    """(request, answer, tool, tool error, judge reason) of one run of ``mode``."""
    if mode == "lisbon_timeout":
        when = rng.choice(["tomorrow", "this weekend", "on Monday", "tonight"])
        return (
            f"What is the weather in Lisbon {when}?",
            "I could not get the forecast right now, please try again later.",
            "get_weather",
            f"TimeoutError: weather service did not answer within {rng.choice([10, 30])} s (city=Lisbon)",
            "the agent did not provide the forecast the user asked for",
        )
    if mode == "wrong_language":
        return (
            rng.choice(TOPICS).capitalize() + ", please.",
            rng.choice(SPANISH),
            "search",
            None,
            "the answer is written in Spanish although the user wrote in English",
        )
    if mode == "refusal":
        return (
            rng.choice(TOPICS).capitalize() + ".",
            rng.choice(REFUSALS),
            "search",
            None,
            "the agent refused a harmless request it should have answered",
        )
    reason = " ".join(rng.sample(NOISE_WORDS, 6))
    city = rng.choice(CITIES)
    request = rng.choice([f"What is the weather in {city} tomorrow?", rng.choice(TOPICS)])
    return (
        request.capitalize(),
        "Here you are: " + " ".join(rng.sample(NOISE_WORDS, 8)) + ".",
        rng.choice(["get_weather", "search", "calculator", "calendar"]),
        None,
        reason,  # noise fails each its own way
    )


def planted_stream(
    per_mode: int, noise: int, seed: int = 7, start: float = 1_800_000_000.0, span: float = 3600.0
) -> list[PlantedRun]:
    """``per_mode`` runs of each mode and ``noise`` others, shuffled, spread over ``span``
    seconds from ``start``."""
    rng = random.Random(seed)
    modes = [mode for mode in MODES for _ in range(per_mode)] + [NOISE] * noise
    rng.shuffle(modes)
    return [
        planted_run(rng, mode, start + span * i / max(1, len(modes)))
        for i, mode in enumerate(modes)
    ]


def planted_run(rng: random.Random, mode: str, failed_at: float) -> PlantedRun:
    request, answer, tool, error, reason = _mode_run(rng, mode)
    return PlantedRun(
        trace_id=_hex(rng, 32),
        span_id=_hex(rng, 16),
        mode=mode,
        request=request,
        answer=answer,
        tool=tool,
        tool_error=error,
        reason=reason,
        agent=rng.choice(AGENTS),
        model=rng.choice(MODELS),
        failed_at=failed_at,
    )


def as_failed_run(run: PlantedRun) -> FailedRun:
    """The run as a pass reads it once its trace is rebuilt (for passes without a store)."""
    failed = FailedRun(run.trace_id, run.span_id, run.failed_at, agent=run.agent, model=run.model)
    failed.flagged_by.add("answer-relevancy")
    failed.reasons.append(run.reason)
    failed.request, failed.answer = run.request, run.answer
    failed.tools.append(f"{run.tool} failed: {run.tool_error}" if run.tool_error else run.tool)
    return failed


def _attr_json(value: object) -> str:
    return orjson.dumps(value).decode()


def agent_turn(
    trace_id: str,
    span_id: str,
    *,
    service: str,
    agent: str,
    model: str,
    request: str,
    answer: str,
    start_ns: int,
    end_ns: int,
    system: str | None = None,
) -> Span:
    """A GenAI-semconv ``invoke_agent`` span: the user's request, the answer and, when given,
    the system instructions."""
    attributes: dict[str, object] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.request.model": model,
        "gen_ai.input.messages": _attr_json(
            [{"role": "user", "parts": [{"type": "text", "content": request}]}]
        ),
        "gen_ai.output.messages": _attr_json(
            [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
        ),
    }
    if system is not None:
        attributes["gen_ai.system_instructions"] = _attr_json([{"type": "text", "content": system}])
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=None,
        name=f"invoke_agent {agent}",
        kind=1,
        start_time_ns=start_ns,
        end_time_ns=end_ns,
        attributes=attributes,
        resource=Resource({"service.name": service}),
        scope=Scope(service, "1", {}),
    )


def tool_call(
    trace_id: str,
    span_id: str,
    parent: str,
    *,
    service: str,
    name: str,
    arguments: object,
    result: str | None,
    error: str | None,
    start_ns: int,
    end_ns: int,
) -> Span:
    """A GenAI-semconv ``execute_tool`` span: its result, or its error as the span's status."""
    attributes: dict[str, object] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": f"call_{span_id[-4:]}",
        "gen_ai.tool.call.arguments": _attr_json(arguments),
    }
    if error is None:
        attributes["gen_ai.tool.call.result"] = result or "{}"
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=f"execute_tool {name}",
        kind=1,
        start_time_ns=start_ns,
        end_time_ns=end_ns,
        attributes=attributes,
        resource=Resource({"service.name": service}),
        scope=Scope(service, "1", {}),
        status_code=2 if error else 0,
        status_message=error or "",
    )


def trace_spans(run: PlantedRun) -> list[Span]:
    """The run as GenAI-semconv spans: the agent turn and its tool call (in error when the tool
    failed)."""
    start = int(run.failed_at * 1e9) - 2_000_000_000
    agent = agent_turn(
        run.trace_id,
        run.span_id,
        service="insights-tests",
        agent=run.agent,
        model=run.model,
        request=run.request,
        answer=run.answer,
        start_ns=start,
        end_ns=start + 1_500_000_000,
    )
    tool = tool_call(
        run.trace_id,
        run.span_id[:12] + "0001",
        run.span_id,
        service="insights-tests",
        name=run.tool,
        arguments={"query": run.request},
        result=None,
        error=run.tool_error,
        start_ns=start + 100_000_000,
        end_ns=start + 1_000_000_000,
    )
    return [agent, tool]


def failing_row(
    trace_id: str,
    span_id: str,
    scorer: str,
    *,
    score: float,
    reason: str,
    agent: str,
    model: str,
    at: datetime,
    service: str = "insights-tests",
    steps: dict[str, object] | None = None,
    label: str = "fail",
) -> StoredScore:
    """The score row a binding with a threshold stores for a run it failed: labelled ``fail``
    (or ``label``, a scorer's own name for what failed)."""
    return StoredScore(
        id=score_id(trace_id, span_id, scorer, "1"),
        trace_id=trace_id,
        span_id=span_id,
        binding=scorer,
        scorer_id=scorer,
        scorer_version="1",
        status="ok",
        score=score,
        label=label,
        reason=reason,
        error=None,
        steps=steps,
        judge_model=None,
        input_tokens=0,
        output_tokens=0,
        cost_usd=0.0,
        latency_ms=1.0,
        run_kind="agent",
        service=service,
        agent=agent,
        model=model,
        created_at=at,
        updated_at=at,
    )


def failing_score(run: PlantedRun, binding: str = "answer-relevancy") -> StoredScore:
    """The score a binding with a threshold stores for the run: below it, labelled ``fail``."""
    return failing_row(
        run.trace_id,
        run.span_id,
        binding,
        score=0.1,
        reason=run.reason,
        agent=run.agent,
        model=run.model,
        at=datetime.fromtimestamp(run.failed_at, UTC),
    )


def store_runs(store: SpanStore, runs: Sequence[PlantedRun], batch: int = 500) -> None:
    """Write the runs' traces and failing scores to a real store."""
    for start in range(0, len(runs), batch):
        part = runs[start : start + batch]
        store.write([span for run in part for span in trace_spans(run)])
        with store.write_transaction() as connection:
            upsert_scores(connection, [failing_score(run) for run in part])
