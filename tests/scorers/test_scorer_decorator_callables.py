"""The ``scorer`` decorator on callables that are not plain functions.

mypy found the decorator calling a function it had not recognised as async and unpacking the
awaitable it returned: a callable object with an ``async __call__`` scored nothing.
"""

import asyncio
from collections.abc import Generator

from tracescore.scorers.base import scorer
from tracescore.scorers.scorer_run import ScorerRun

RUN = {"input": "What is the capital of France?", "output": "Paris."}


class LengthGrader:
    """A scorer kept as an object (configured once), awaited like a coroutine function."""

    def __init__(self, longest: int) -> None:
        self.longest = longest

    async def __call__(self, run: ScorerRun) -> tuple[float, str]:
        await asyncio.sleep(0)  # really suspends, as a call to a service would
        length = len(str(run.output))
        return min(1.0, length / self.longest), f"{length} characters"


class Ready:
    """An awaitable that is not a coroutine: what a plain function might hand back by mistake."""

    def __await__(self) -> Generator[None, None, float]:
        return 1.0
        yield


def test_a_callable_object_with_an_async_call_is_awaited_and_scores() -> None:
    graded = scorer(id="length")(LengthGrader(longest=12))

    result = asyncio.run(graded.run(RUN))

    assert (result.score, result.reason) == (0.5, "6 characters")
    assert graded.is_synchronous is False


def test_a_plain_function_still_scores_synchronously() -> None:
    @scorer(id="answered")
    def answered(run: ScorerRun) -> float:
        return 1.0 if run.output else 0.0

    assert answered.is_synchronous is True
    assert answered.run_sync(RUN).score == 1.0


def test_a_plain_function_returning_an_awaitable_fails_with_a_reason() -> None:
    @scorer(id="hidden-async")
    def hidden(run: ScorerRun) -> Ready:
        return Ready()

    result = hidden.run_sync(RUN)

    assert result.score is None
    assert result.error is not None and "declare it 'async def'" in result.error
