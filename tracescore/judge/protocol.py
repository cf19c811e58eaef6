"""What a judge is to the scorers: a request, a response, and the protocol between them.

Kept apart from the LLM client so scorers (and custom judges in tests or user code) depend on
this small contract only; ``tracescore.judge.client`` implements it with litellm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel


@dataclass
class JudgeRequest:
    prompt: str
    instructions: str | None
    schema: type[BaseModel] | None
    scorer_id: str
    scorer_version: str
    step: str
    check: Callable[[Any], str | None] | None = None
    """What the validated answer must also satisfy beyond its schema (one verdict per claim...):
    the problem in words, or None when the answer is right. A judge sends one repair request
    naming the problem, then fails. Derived from the prompt, so it is no part of a cache key."""


@dataclass
class JudgeResponse:
    output: Any  # validated schema instance, or the text when the request had no schema
    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    attempts: int = 1
    duration_ms: float = 0.0
    cached: bool = False
    repairs: int = 0
    """Repair requests sent because an answer was invalid or failed the request's check."""


class JudgeError(RuntimeError):
    """A judge call that failed for good; the message says which judge and why.

    ``spent`` is what the failed call cost before it failed (tokens, cost, attempts, the last
    answer), so spend caps and metrics count failed calls too.
    """

    def __init__(self, message: str, spent: JudgeResponse | None = None) -> None:
        super().__init__(message)
        self.spent = spent


DEFAULT_INPUT_TOKENS = 32_000
"""A request's input budget when the judge's model window is not known (a custom judge, a
self-hosted model litellm has no entry for): set ``max_input_tokens`` on the judge to change it."""


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8: never fewer than its tokens under a byte-level BPE tokenizer
    (GPT's, Llama 3's, Claude's), so a free upper bound on what it costs."""
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class Budget:
    """How much one request to a judge may hold, and how its text is measured.

    ``tokens`` is the input window left for a request (instructions, prompt and schema);
    ``count`` measures a text in tokens (by default its UTF-8 size, an upper bound). Scorers
    measure only material that could overflow (longer in bytes than the room left), so a
    request of ordinary size costs no counting at all.
    """

    tokens: int = DEFAULT_INPUT_TOKENS
    count: Callable[[str], int] = utf8_size

    def fits(self, text: str, room: int) -> bool:
        return utf8_size(text) <= room or self.count(text) <= room


@runtime_checkable
class Judge(Protocol):
    """Anything that answers judge requests; ``tracescore.judge`` provides the LLM-backed one."""

    model: str

    async def complete(self, request: JudgeRequest) -> JudgeResponse: ...
