"""Prebuilt scorers by their kebab-case names, as config files and the CLI name them.

Entries point at their factories by import path and import them only when used, so validating a
config or listing scorers does not load every scorer's dependencies. An entry may carry a
pydantic schema of its options: building through the entry then rejects unknown options and
wrong types with a message naming the option, and accepts Mastra's camelCase spelling too.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from tracescore.scorers.base import Scorer


@dataclass(frozen=True)
class OptionInfo:
    name: str
    default: Any
    annotation: str
    description: str = ""


class ScorerOptions(BaseModel):
    """Base of option schemas: snake_case or camelCase keys, unknown options rejected."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ContentSimilarityOptions(ScorerOptions):
    ignore_case: bool = Field(True, description="compare lowercased texts")
    ignore_whitespace: bool = Field(True, description="collapse whitespace runs (changes the step result only)")


class ToneOptions(ScorerOptions):
    reference_tone: str | None = Field(
        None, description="text whose sentiment the output should match; unset: stability across sentences"
    )


class ToolCallAccuracyCodeOptions(ScorerOptions):
    expected_tool: str | None = Field(None, description="the tool that should be called")
    strict_mode: bool = Field(False, description="only that one call / exactly that sequence")
    expected_tool_order: list[str] | None = Field(None, description="tools in the order they should be called")


class NoOptions(ScorerOptions):
    pass


@dataclass(frozen=True)
class ScorerEntry:
    name: str
    factory_path: str
    """``module:function`` of the factory; its keyword arguments are the scorer's options."""
    description: str
    uses_judge: bool = False
    higher_is_better: bool = True
    """False for scorers where a high score is bad (bias, toxicity, hallucination)."""
    schema: type[ScorerOptions] | None = None
    """The options' schema; without one the factory's signature is all there is."""

    @property
    def create(self) -> Callable[..., Scorer]:
        """The factory itself, unvalidated."""
        module, _, name = self.factory_path.partition(":")
        return getattr(importlib.import_module(module), name)

    @property
    def factory(self) -> Callable[..., Scorer]:
        """The factory, validating options against the schema when the entry has one."""
        if self.schema is None:
            return self.create
        return self._build

    def _build(self, **options: Any) -> Scorer:
        # Only the options given are passed on, so the factory's own defaults apply to the rest.
        judge = options.pop("model", None) if self.uses_judge else None
        parsed = self.schema.model_validate(options)
        kwargs = {name: getattr(parsed, name) for name in parsed.model_fields_set}
        if self.uses_judge:
            kwargs["model"] = judge
        return self.create(**kwargs)

    def options(self) -> list[OptionInfo]:
        """The scorer's options (``model`` excluded: bindings name a judge instead)."""
        if self.schema is not None:
            return [
                OptionInfo(name, field.default, _annotation_text(field.annotation), field.description or "")
                for name, field in self.schema.model_fields.items()
            ]
        found = []
        for parameter in inspect.signature(self.create).parameters.values():
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
                    "Share of the input's words (verbs as infinitives) the output covers", schema=NoOptions),
        ScorerEntry("content-similarity",
                    f"{_CODE}.content_similarity:create_content_similarity_scorer",
                    "Dice similarity of character bigrams between input and output",
                    schema=ContentSimilarityOptions),
        ScorerEntry("keyword-coverage", f"{_CODE}.keyword_coverage:create_keyword_coverage_scorer",
                    "Share of the input's keywords found in the output", schema=NoOptions),
        ScorerEntry("textual-difference",
                    f"{_CODE}.textual_difference:create_textual_difference_scorer",
                    "Similarity ratio (longest common subsequence) of input and output", schema=NoOptions),
        ScorerEntry("tone", f"{_CODE}.tone:create_tone_scorer",
                    "Sentiment consistency with a reference tone, or stability across sentences",
                    schema=ToneOptions),
        ScorerEntry("tool-call-accuracy-code",
                    f"{_CODE}.tool_call_accuracy:create_tool_call_accuracy_scorer_code",
                    "Whether the expected tool (or tool order) was called",
                    schema=ToolCallAccuracyCodeOptions),
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


def _annotation_text(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
