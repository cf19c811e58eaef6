"""What a judge is to the scorers: a request, a response, and the protocol between them.

Kept apart from the LLM client so scorers (and custom judges in tests or user code) depend on
this small contract only; ``tracescore.judge.client`` implements it with litellm.
"""

from __future__ import annotations

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


@runtime_checkable
class Judge(Protocol):
    """Anything that answers judge requests; ``tracescore.judge`` provides the LLM-backed one."""

    model: str

    async def complete(self, request: JudgeRequest) -> JudgeResponse: ...
