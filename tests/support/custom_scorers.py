"""Custom scorers that tests bind with ``module:attr``, as a user would bind their own."""

from __future__ import annotations

from tracescore.scorers.base import Scorer, create_scorer, scorer
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.scorers.steps import StepContext
from tracescore.scorers.utils import get_assistant_message

CALLS: list[str] = []


@scorer(id="answer-present", description="1 when the run has a final answer, else 0")
def answer_present(run: ScorerRun) -> tuple[float, str]:
    CALLS.append(run.span_id or "")
    text = get_assistant_message(run.output) or ""
    return (1.0 if text.strip() else 0.0), f"answer of {len(text)} characters"


def length_at_least(minimum: int = 10, model: object = None):
    """A factory taking options, the way prebuilt scorers are configured."""

    def score(ctx) -> float:
        text = get_assistant_message(ctx.run.output) or ""
        return 1.0 if len(text) >= minimum else 0.0

    return create_scorer(id="length-at-least", description="answer length gate").generate_score(
        score
    )


def _explode(ctx) -> float:
    raise RuntimeError("scorer exploded on purpose")


exploding = create_scorer(id="exploding", description="always fails").generate_score(_explode)


async def _slow_for_weatherbot(ctx) -> float:
    import asyncio

    if ctx.run.agent_run is not None and ctx.run.agent_run.agent_name == "WeatherBot":
        await asyncio.sleep(3.0)
    return 1.0


slow_for_weatherbot = create_scorer(
    id="slow-for-weatherbot", description="takes 3 s on WeatherBot runs, no time on others"
).generate_score(_slow_for_weatherbot)


def spinning_for_weatherbot(seconds: float = 60.0):
    """Busy for ``seconds`` on WeatherBot runs (CPU-bound pure Python, as a quadratic scorer
    is), no time on others."""
    import time

    def spin(ctx) -> float:
        if ctx.run.agent_run is not None and ctx.run.agent_run.agent_name == "WeatherBot":
            until = time.monotonic() + seconds
            while time.monotonic() < until:
                pass
        return 1.0

    return create_scorer(
        id="spinning-for-weatherbot", description="busy on WeatherBot runs"
    ).generate_score(spin)


def answer_length(version: str = "1", per_char: float = 0.01, model: object = None) -> Scorer:
    """A code scorer whose formula changes with ``per_char``: a new version of it."""

    def score(ctx: StepContext) -> float:
        return min(1.0, len(get_assistant_message(ctx.run.output) or "") * per_char)

    return create_scorer(id="answer-length", version=version).generate_score(score)
