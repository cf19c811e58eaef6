"""Every registered scorer built with the options it needs, for tests that run them all."""

from __future__ import annotations

from typing import Any

from tracescore.judge import LiteLLMJudge
from tracescore.scorers import registry

QUESTION = "What is the weather in Atlantis?"
CODE_READING_THE_ANSWER = (
    "completeness",
    "content-similarity",
    "keyword-coverage",
    "textual-difference",
    "tone",
)
OPTIONS: dict[str, dict[str, Any]] = {
    "tool-call-accuracy-code": {"expectedTool": "get_weather"},
    "noise-sensitivity": {"baselineResponse": "It is sunny.", "noisyQuery": QUESTION + " pls"},
    "context-precision": {"context": ["Atlantis is a legend."]},
    "context-relevance": {"context": ["Atlantis is a legend."]},
    "faithfulness": {"context": ["Atlantis is a legend."]},
    "hallucination": {"context": ["Atlantis is a legend."]},
}


def build(name: str, judge: LiteLLMJudge | None = None) -> Any:
    entry = registry.get(name)
    options = OPTIONS.get(name, {})
    return entry.factory(model=judge, **options) if entry.uses_judge else entry.factory(**options)
