"""Typical judge answers: what the prebuilt scorers' prompt steps are priced with before any judge runs.

``rescore --dry-run`` answers each prompt step with its :attr:`PromptStep.sketch`, counts the
sketch's tokens as the step's output and renders the later steps' prompts with it. A sketch
follows what its prompt asks for, at a typical size: an extraction lists one item per sentence of
the text it splits (restating the sentence), a verdict step gives one verdict per item with a
one-sentence reason, a reason step writes the sentences its prompt asks for ("two or three" counts
2.5). Only the size matters, so verdicts are the favourable ones and the judge's own prose is a
size model: sentences of :data:`SENTENCE_WORDS` words of plain English (judges write prose in the
prompts' language, whatever the run's answer holds: quoting a JSON tool result in a reason would
cost several times the tokens per word).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import BaseModel

from tracescore.scorers.llm.run_text import response_text
from tracescore.scorers.steps import StepContext

SENTENCE_WORDS = 20
"""Words in a typical sentence a judge writes (a reason, an assessment): ordinary prose length."""

_PROSE = [
    "The",
    "context",
    "states",
    "this",
    "directly,",
    "so",
    "the",
    "point",
    "is",
    "supported",
    "by",
    "the",
    "information",
    "the",
    "agent",
    "had",
    "when",
    "it",
    "answered",
    "the",
    "user",
]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: split after ``.``, ``!`` or ``?`` before a space, and at line ends."""
    return [
        sentence.strip()
        for line in text.splitlines()
        for sentence in _SENTENCE_END.split(line)
        if sentence.strip()
    ]


def typical_text(count: float = 1) -> str:
    """``count`` sentences of typical length (a fraction makes the last one shorter)."""
    total = max(1, round(count * SENTENCE_WORDS))
    words = [_PROSE[i % len(_PROSE)] for i in range(total)]
    return " ".join(
        " ".join(words[start : start + SENTENCE_WORDS]) + "."
        for start in range(0, total, SENTENCE_WORDS)
    )


def answer_items(schema: type[M]) -> Callable[[StepContext], M]:
    """The sketch of a step splitting the final answer (claims, statements, opinions): the
    schema's one field lists the answer's sentences."""
    (name,) = schema.model_fields
    return lambda ctx: schema.model_validate({name: sentences(response_text(ctx.run))})


def explanation(count: float | Callable[[StepContext], float]) -> Callable[[StepContext], str]:
    """The sketch of a reason step asking for ``count`` sentences (a number, or one per run)."""

    def sketch(ctx: StepContext) -> str:
        return typical_text(count(ctx) if callable(count) else count)

    return sketch


def judged(items: Sequence[str], verdict: Callable[[str, str], T]) -> list[T]:
    """One verdict per item: ``verdict(item, reason)`` with a typical one-sentence reason."""
    return [verdict(item, typical_text()) for item in items]
