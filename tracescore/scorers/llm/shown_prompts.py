"""What a judge scorer tells its judge, rendered on an example run (``tracescore scorers --show-prompts``).

Users should be able to review the rules a judge is given before trusting its scores, and a
prompt is only readable with a run filled in. Each prompt step is rendered on :data:`EXAMPLE_RUN`
exactly as the judge client sends it (instructions as the system message; the prompt plus the
JSON schema it must answer as the user message); later steps render with the earlier steps'
sketches (:mod:`.typical_answers`) standing in for the judge's answers, as ``rescore --dry-run`` does.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from tracescore.extract.conversation import Conversation, Turn
from tracescore.extract.model import AgentRun, RunInput, SystemMessage
from tracescore.scorers.base import Scorer
from tracescore.scorers.judging import ScoreOutput, fitted_prompts
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.utils import make_agent_run, make_test_message, make_tool_invocation

_FORECAST = {"city": "Paris", "forecast": "sunny", "temperature_c": 21}
_ANSWER = "It is sunny in Paris today, about 21 °C. A light jacket is enough."

EXAMPLE_RUN: dict[str, Any] = {
    **make_agent_run(
        input_messages=[make_test_message("What's the weather in Paris today?", "user", id="u1")],
        system_messages=[{"role": "system", "content": "You are a concise weather assistant."}],
        output=[
            make_test_message(
                _ANSWER,
                "assistant",
                id="a1",
                tool_invocations=[
                    make_tool_invocation(
                        tool_call_id="c1",
                        tool_name="get_weather",
                        args={"city": "Paris"},
                        result=_FORECAST,
                    )
                ],
            )
        ],
        ground_truth="Sunny and 21 °C in Paris.",
    ),
    "tools": [{"name": "get_weather", "description": "Current weather for a city"}],
}
"""A weather agent's run: system prompt, question, one tool call with its result, the answer."""

_CONCIERGE = AgentRun(
    trace_id="0" * 32,
    span_id="0" * 16,
    input=RunInput(
        system_messages=[SystemMessage(content="You are Concierge, a helpful city guide.")]
    ),
)
EXAMPLE_CONVERSATION = Conversation(
    id="example",
    agent_name="concierge",
    turns=[
        Turn(trace_id=f"{n:032x}", span_id=f"{n:016x}", user=user, answer=answer, run=_CONCIERGE)
        for n, (user, answer) in enumerate(
            [
                (
                    "Hi, my name is Ada and I live in Lyon.",
                    "Nice to meet you, Ada! How can I help you today?",
                ),
                (
                    "Can you recommend a museum in my city?",
                    "In Lyon, the Musee des Confluences is a great choice.",
                ),
                ("What is my name?", "Your name is Ada, and you live in Lyon."),
            ],
            1,
        )
    ],
)
"""A city guide's three-turn chat, what the conversation scorers' prompts are shown on."""

EXAMPLE_OPTIONS: dict[str, dict[str, Any]] = {
    "noise-sensitivity": {
        "baselineResponse": "It is sunny in Paris today, about 21 °C.",
        "noisyQuery": "What's the weather in Paris today? My friend says it is snowing.",
    },
}
"""Options a scorer cannot be built without."""


@dataclass(frozen=True)
class ShownPrompt:
    """One judge request as sent: the step, the answer schema's name and the chat messages."""

    step: str
    schema: str | None
    messages: list[dict[str, str]]


async def _awaited(value: Awaitable[object]) -> object:
    """``asyncio.run`` takes a coroutine; an async step may return any awaitable."""
    return await value


def shown_prompts(scorer: Scorer, run: Any = None) -> list[ShownPrompt]:
    """Every prompt step of ``scorer`` rendered on ``run`` (default :data:`EXAMPLE_RUN`)."""
    from tracescore.judge.structured import request_messages  # light, but judge-side

    results: dict[str, Any] = {}
    score: float | None = None
    scorer_run = ScorerRun.of(EXAMPLE_RUN if run is None else run)
    shown = []
    for name, step in scorer.steps:
        ctx = StepContext(scorer_run, dict(results), score if name == "generate_reason" else None)
        if isinstance(step, PromptStep):
            schema = step.output_schema or (ScoreOutput if name == "generate_score" else None)
            instructions = (
                step.instructions if step.instructions is not None else scorer.instructions
            )
            asked = fitted_prompts(step, ctx, scorer.instructions)
            for prompt in [asked] if isinstance(asked, str) else asked:  # a long context: parts
                messages = request_messages(prompt, instructions, schema)
                shown.append(ShownPrompt(name, schema.__name__ if schema else None, messages))
            value: object = step.sketch(ctx) if step.sketch is not None else None
            if isinstance(value, ScoreOutput):  # a bare score step's result is the number
                value = value.score
        else:
            value = step(ctx)
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
        if name == "generate_score":
            score = float(value) if isinstance(value, int | float) else None
        results[f"{name}_step_result"] = value
    return shown


def example_scorer(name: str, model: Any = "openai/gpt-4o-mini") -> Scorer:
    """The registered scorer ``name`` with its default options (and the ones it requires)."""
    from tracescore.scorers import registry  # registry imports the scorers lazily

    return registry.get(name).factory(model=model, **EXAMPLE_OPTIONS.get(name, {}))


def render(name: str) -> str:
    """The text ``tracescore scorers --show-prompts NAME`` prints."""
    from tracescore.scorers import registry

    scorer = example_scorer(name)
    conversation = registry.get(name).conversation
    example = "a city guide's three-turn conversation" if conversation else "a weather agent"
    blocks = [
        f"# {name} ({scorer.id}, version {scorer.version}): what the judge is told, shown on an "
        f"example {'conversation' if conversation else 'run'} ({example}); later steps use typical "
        "answers of the earlier ones"
    ]
    for prompt in shown_prompts(scorer, EXAMPLE_CONVERSATION if conversation else None):
        answer = f", answered as {prompt.schema}" if prompt.schema else ", answered in plain text"
        blocks.append(f"## step {prompt.step}{answer}")
        blocks.extend(f"### {m['role']}\n{m['content']}" for m in prompt.messages)
    return "\n\n".join(blocks) + "\n"
