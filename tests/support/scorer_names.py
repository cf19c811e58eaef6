"""The registered scorers checks run over: read from the registry's public entries."""

from __future__ import annotations

from tracescore.scorers import registry


def judge_scorer_names(*, conversation: bool = False) -> list[str]:
    """The LLM scorers' names: those judging runs, or with ``conversation`` those judging whole
    conversations (the two take different inputs, so checks over "every judge scorer" pick one)."""
    return [
        entry.name
        for entry in registry.entries()
        if entry.uses_judge and entry.conversation == conversation
    ]
