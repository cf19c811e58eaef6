"""How a judge is reached and how hard it may be pushed: one ``JudgeConfig`` per judge model."""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ResponseFormat = Literal["auto", "json_schema", "json_object", "prompt"]


def judges_missing(scorer: str) -> str | None:
    """Why ``scorer``, which asks an LLM judge, cannot run here, or None: litellm, which every
    judge calls through, is an extra (it doubles the default install). Found without importing
    litellm, which takes seconds."""
    if find_spec("litellm") is not None:
        return None
    return (
        f"scorer {scorer!r} asks an LLM judge, and litellm, which judges call through, is "
        "not installed: pip install 'tracescore[judges]'"
    )


class JudgeConfig(BaseModel):
    """A judge: a litellm model string plus connection, sampling and rate settings.

    ``model`` is what litellm routes on: ``openai/gpt-4o-mini``, ``anthropic/claude-3-5-haiku-latest``,
    ``ollama/llama3.1``, ``hosted_vllm/<name>``, or ``openai/<alias>`` with ``api_base`` for any
    OpenAI-compatible server (llama.cpp, LM Studio, a proxy). Keys are never stored here: the
    judge reads the environment variable named by ``api_key_env`` at call time.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    """Environment variable holding the API key (litellm's own defaults apply when unset)."""
    temperature: float = Field(0.0, ge=0)
    max_tokens: int | None = Field(None, gt=0)
    timeout: float = Field(60.0, gt=0)
    """Hard limit, in seconds, on one HTTP call to the judge (a hung judge fails the attempt)."""
    max_retries: int = Field(4, ge=0)
    """Extra attempts after a 429, a 5xx, a timeout or a connection error."""
    backoff_base: float = Field(0.5, gt=0)
    """First retry delay in seconds; doubles each attempt, with full jitter."""
    backoff_max: float = Field(30.0, gt=0)
    concurrency: int = Field(8, gt=0)
    """Calls in flight at once, shared by every scorer using this judge."""
    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    response_format: ResponseFormat = "auto"
    """How JSON is requested: ``json_schema`` (strict schema), ``json_object`` (JSON mode, schema
    in the prompt), ``prompt`` (no ``response_format`` at all), or ``auto``: json_schema where
    litellm knows the model supports it or an ``api_base`` is set, json_object otherwise — and
    json_object for good once a server answers 400 to json_schema."""
    max_input_tokens: int | None = Field(None, gt=0)
    """The most tokens one request may send (system prompt, prompt and answer schema). Unset: the
    model's input window as litellm knows it (``get_model_info``), less the answer's room
    (``max_tokens``, else 4,096); 32,000 for a model litellm does not know. Scorers judging long
    contexts split them into requests that each fit; other long values are cut to fit, each cut
    marked (see docs/judges.md)."""
    cache: bool = True
    """Serve identical judge requests from the verdict cache instead of paying twice."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further keyword arguments passed to ``litellm.acompletion`` as they are."""

    @classmethod
    def of(cls, spec: str | JudgeConfig | dict[str, Any]) -> JudgeConfig:
        if isinstance(spec, JudgeConfig):
            return spec
        if isinstance(spec, str):
            return cls(model=spec)
        return cls.model_validate(spec)
