"""Prebuilt scorers by their kebab-case names, as config files and the CLI name them.

Entries point at their factories by import path and import them only when used, so validating a
config or listing scorers does not load every scorer's dependencies.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracescore.scorers.base import Scorer


@dataclass(frozen=True)
class OptionInfo:
    name: str
    default: Any
    annotation: str


@dataclass(frozen=True)
class ScorerEntry:
    name: str
    factory_path: str
    """``module:function`` of the factory; its keyword arguments are the scorer's options."""
    description: str
    uses_judge: bool = False
    higher_is_better: bool = True
    """False for scorers where a high score is bad (bias, toxicity, hallucination)."""

    @property
    def factory(self) -> Callable[..., Scorer]:
        module, _, name = self.factory_path.partition(":")
        return getattr(importlib.import_module(module), name)

    def options(self) -> list[OptionInfo]:
        """The factory's keyword options (``model`` excluded: bindings name a judge instead)."""
        found = []
        for parameter in inspect.signature(self.factory).parameters.values():
            if parameter.name == "model" or parameter.kind in (
                parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD
            ):
                continue
            default = None if parameter.default is parameter.empty else parameter.default
            annotation = parameter.annotation
            text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
            found.append(OptionInfo(parameter.name, default, str(text)))
        return found


_CODE = "tracescore.scorers.code"
_LLM = "tracescore.scorers.llm"

_ENTRIES: dict[str, ScorerEntry] = {
    entry.name: entry
    for entry in (
        ScorerEntry("completeness", f"{_CODE}.completeness:create_completeness_scorer",
                    "Share of the input's key elements (nouns, verbs, topics) the output covers"),
        ScorerEntry("content-similarity",
                    f"{_CODE}.content_similarity:create_content_similarity_scorer",
                    "Dice similarity of character bigrams between input and output"),
        ScorerEntry("keyword-coverage", f"{_CODE}.keyword_coverage:create_keyword_coverage_scorer",
                    "Share of the input's keywords found in the output"),
        ScorerEntry("textual-difference",
                    f"{_CODE}.textual_difference:create_textual_difference_scorer",
                    "Similarity ratio (longest common subsequence) of input and output"),
        ScorerEntry("tone", f"{_CODE}.tone:create_tone_scorer",
                    "Sentiment consistency with a reference tone, or stability across sentences"),
        ScorerEntry("tool-call-accuracy-code",
                    f"{_CODE}.tool_call_accuracy:create_tool_call_accuracy_scorer_code",
                    "Whether the expected tool (or tool order) was called"),
    )
}


def register(entry: ScorerEntry) -> None:
    """Add a scorer under its name (later registrations of a name replace earlier ones)."""
    _ENTRIES[entry.name] = entry


def names() -> list[str]:
    return list(_ENTRIES)


def entries() -> list[ScorerEntry]:
    return list(_ENTRIES.values())


def get(name: str) -> ScorerEntry:
    try:
        return _ENTRIES[name]
    except KeyError:
        raise KeyError(f"unknown scorer {name!r}; known: {', '.join(_ENTRIES)}") from None
