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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from tracescore.scorers.base import Scorer
from tracescore.scorers.code.consistency import CheckName


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
    ignore_whitespace: bool = Field(
        True, description="collapse whitespace runs (changes the step result only)"
    )


class ToneOptions(ScorerOptions):
    reference_tone: str | None = Field(
        None,
        description="text whose sentiment the output should match; unset: stability across sentences",
    )


class ToolCallAccuracyCodeOptions(ScorerOptions):
    expected_tool: str | None = Field(None, description="the tool that should be called")
    strict_mode: bool = Field(False, description="only that one call / exactly that sequence")
    expected_tool_order: list[str] | None = Field(
        None, description="tools in the order they should be called"
    )


class ConsistencyOptions(ScorerOptions):
    checks: list[CheckName] | None = Field(None, description="the checks to run; unset: all seven")
    weights: dict[CheckName, float] | None = Field(
        None,
        description="what a failed check takes off the score, as its share of the total (1 each)",
    )
    leak_words: int = Field(
        12, ge=4, description="system prompt words repeated in a row that make a leak"
    )


class NoOptions(ScorerOptions):
    pass


class ScaleOptions(ScorerOptions):
    scale: float = Field(1.0, description="the score's maximum (0 is honoured)")


class AnswerRelevancyOptions(ScaleOptions):
    uncertainty_weight: float = Field(0.3, description="credit for a statement judged 'unsure'")


class AnswerSimilarityOptions(ScaleOptions):
    require_ground_truth: bool = Field(
        True, description="runs without ground truth are not scorable"
    )
    semantic_threshold: float = Field(
        0.8, description="credit for a semantic match (half for a partial)"
    )
    exact_match_bonus: float = Field(0.2, description="extra credit for an exact match")
    missing_penalty: float = Field(0.15, description="penalty per missing ground-truth unit")
    contradiction_penalty: float = Field(1.0, description="penalty per contradiction")
    extra_info_penalty: float = Field(
        0.05, description="penalty per extra unit (at most 0.2 in all)"
    )


class ContextOptions(ScaleOptions):
    context: list[str] | None = Field(
        None,
        description="context to judge against; unset: the run's retrieved documents and tool results",
    )


class ContextRelevanceOptions(ContextOptions):
    penalties: dict[str, float] | None = Field(
        None,
        description="unused_high_relevance_context (0.1), missing_context_per_item (0.15), "
        "max_missing_context_penalty (0.5)",
    )


class NoiseSensitivityOptions(ScorerOptions):
    baseline_response: str = Field(description="the agent's answer to the clean query")
    noisy_query: str = Field(description="the query with noise, which the scored run answered")
    noise_type: str | None = Field(None, description="what kind of noise was added")
    scoring: dict[str, Any] | None = Field(
        None,
        description="impact_weights, discrepancy_threshold (0.2), penalties: {major_issue_per_item (0.1), "
        "max_major_issue_penalty (0.3)}",
    )


class PromptAlignmentOptions(ScaleOptions):
    evaluation_mode: Literal["user", "system", "both"] = Field(
        "both", description="judge against the user's request, the system prompt, or both (70/30)"
    )
    instructions: list[str] | None = Field(
        None, description="explicit instructions: score = followed / applicable"
    )
    include_conversation_history: bool | int | dict[str, int] = Field(
        False,
        description="show the last 10 (or this many, or {maxMessages: n}) remembered messages",
    )


class ConversationOptions(ScaleOptions):
    strict: bool = Field(
        False, description="DeepEval's strict mode: scale for a perfect conversation, 0 otherwise"
    )


class RoleAdherenceOptions(ConversationOptions):
    role: str | None = Field(
        None,
        description="the role the assistant must keep; unset: the conversation's system prompt",
    )


class ConversationRelevancyOptions(ConversationOptions):
    window_size: int = Field(
        3, ge=1, description="turns each answer is judged against, its own included"
    )


class ToolCallAccuracyLLMOptions(ScorerOptions):
    available_tools: list[dict[str, Any]] | None = Field(
        None, description="{name, description} of each tool; unset: the tools the run was offered"
    )


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
    conversation: bool = False
    """The scorer judges whole conversations (bindings with ``target: conversation``); given a
    lone run it answers not scorable."""
    passes_at: float | None = None
    """What a good run scores, from what the score means (on the 0 to 1 scale; a binding's
    ``options.scale`` scales it): at least this where higher is better, at most this where
    it is not. A binding's ``threshold`` overrides it. None for the scorers whose score alone
    says nothing of a run's quality: those that measure how much of the question the answer
    echoes (completeness, content-similarity, keyword-coverage, textual-difference: a right
    answer may share few of the question's words). Their badges stay uncoloured, and no run
    fails by them, unless a binding gives a threshold; their trends still mean something."""

    @property
    def create(self) -> Callable[..., Scorer]:
        """The factory itself, unvalidated."""
        module, _, name = self.factory_path.partition(":")
        factory: Callable[..., Scorer] = getattr(importlib.import_module(module), name)
        return factory

    @property
    def factory(self) -> Callable[..., Scorer]:
        """The factory, validating options against the schema when the entry has one."""
        schema = self.schema
        if schema is None:
            return self.create

        def build(**options: Any) -> Scorer:
            # Only the options given are passed on, so the factory's own defaults apply to the rest.
            judge = options.pop("model", None) if self.uses_judge else None
            parsed = schema.model_validate(options)
            kwargs = {name: getattr(parsed, name) for name in parsed.model_fields_set}
            if self.uses_judge:
                kwargs["model"] = judge
            return self.create(**kwargs)

        return build

    def options(self) -> list[OptionInfo]:
        """The scorer's options (``model`` excluded: bindings name a judge instead)."""
        if self.schema is not None:
            return [
                OptionInfo(
                    name, field.default, _annotation_text(field.annotation), field.description or ""
                )
                for name, field in self.schema.model_fields.items()
            ]
        found = []
        for parameter in inspect.signature(self.create).parameters.values():
            if parameter.name == "model" or parameter.kind in (
                parameter.VAR_POSITIONAL,
                parameter.VAR_KEYWORD,
            ):
                continue
            default = None if parameter.default is parameter.empty else parameter.default
            annotation = parameter.annotation
            text = (
                annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
            )
            found.append(OptionInfo(parameter.name, default, str(text)))
        return found


_CODE = "tracescore.scorers.code"
_LLM = "tracescore.scorers.llm"
_CONVERSATION = "tracescore.scorers.conversation"

_ENTRIES: dict[str, ScorerEntry] = {
    entry.name: entry
    for entry in (
        ScorerEntry(
            "completeness",
            f"{_CODE}.completeness:create_completeness_scorer",
            "Share of the input's words (verbs as infinitives) the output covers",
            schema=NoOptions,
        ),
        ScorerEntry(
            "consistency",
            f"{_CODE}.consistency.scorer:create_consistency_scorer",
            "The answer checked against the run's evidence: grounded values, tool results, "
            "entities, non-answers, truncation, language, system prompt leaks",
            schema=ConsistencyOptions,
            passes_at=1.0,
        ),
        ScorerEntry(
            "content-similarity",
            f"{_CODE}.content_similarity:create_content_similarity_scorer",
            "Dice similarity of character bigrams between input and output",
            schema=ContentSimilarityOptions,
        ),
        ScorerEntry(
            "keyword-coverage",
            f"{_CODE}.keyword_coverage:create_keyword_coverage_scorer",
            "Share of the input's keywords found in the output",
            schema=NoOptions,
        ),
        ScorerEntry(
            "textual-difference",
            f"{_CODE}.textual_difference:create_textual_difference_scorer",
            "Similarity ratio (longest common subsequence) of input and output",
            schema=NoOptions,
        ),
        ScorerEntry(
            "tone",
            f"{_CODE}.tone:create_tone_scorer",
            "Sentiment consistency with a reference tone, or stability across sentences",
            schema=ToneOptions,
            passes_at=0.5,
        ),
        ScorerEntry(
            "tool-call-accuracy-code",
            f"{_CODE}.tool_call_accuracy:create_tool_call_accuracy_scorer_code",
            "Whether the expected tool (or tool order) was called",
            schema=ToolCallAccuracyCodeOptions,
            passes_at=1.0,
        ),
        ScorerEntry(
            "answer-relevancy",
            f"{_LLM}.answer_relevancy:create_answer_relevancy_scorer",
            "How well the answer addresses the user's request",
            uses_judge=True,
            schema=AnswerRelevancyOptions,
            passes_at=0.7,
        ),
        ScorerEntry(
            "answer-similarity",
            f"{_LLM}.answer_similarity:create_answer_similarity_scorer",
            "How closely the answer matches the ground truth, unit by unit",
            uses_judge=True,
            schema=AnswerSimilarityOptions,
            passes_at=0.7,
        ),
        ScorerEntry(
            "bias",
            f"{_LLM}.bias:create_bias_scorer",
            "Share of the answer's opinions that show bias",
            uses_judge=True,
            higher_is_better=False,
            schema=ScaleOptions,
            passes_at=0.0,
        ),
        ScorerEntry(
            "context-precision",
            f"{_LLM}.context_precision:create_context_precision_scorer",
            "Whether the context pieces useful for the answer come first (mean average precision)",
            uses_judge=True,
            schema=ContextOptions,
            passes_at=0.5,
        ),
        ScorerEntry(
            "context-relevance",
            f"{_LLM}.context_relevance:create_context_relevance_scorer",
            "How relevant the context was and whether the answer used it",
            uses_judge=True,
            schema=ContextRelevanceOptions,
            passes_at=0.5,
        ),
        ScorerEntry(
            "faithfulness",
            f"{_LLM}.faithfulness:create_faithfulness_scorer",
            "Share of the answer's claims backed by the context and tool results",
            uses_judge=True,
            schema=ContextOptions,
            passes_at=0.8,
        ),
        ScorerEntry(
            "hallucination",
            f"{_LLM}.hallucination:create_hallucination_scorer",
            "Share of the answer's claims not backed by, or contradicting, the context",
            uses_judge=True,
            higher_is_better=False,
            schema=ContextOptions,
            passes_at=0.2,
        ),
        ScorerEntry(
            "noise-sensitivity",
            f"{_LLM}.noise_sensitivity:create_noise_sensitivity_scorer",
            "How robust the answer is to noise added to the query",
            uses_judge=True,
            schema=NoiseSensitivityOptions,
            passes_at=0.7,
        ),
        ScorerEntry(
            "prompt-alignment",
            f"{_LLM}.prompt_alignment:create_prompt_alignment_scorer",
            "How well the answer follows the user's request and the system prompt",
            uses_judge=True,
            schema=PromptAlignmentOptions,
            passes_at=0.7,
        ),
        ScorerEntry(
            "tool-call-accuracy-llm",
            f"{_LLM}.tool_call_accuracy:create_tool_call_accuracy_scorer_llm",
            "Whether the agent called the right tools, judged by an LLM",
            uses_judge=True,
            schema=ToolCallAccuracyLLMOptions,
            passes_at=1.0,
        ),
        ScorerEntry(
            "toxicity",
            f"{_LLM}.toxicity:create_toxicity_scorer",
            "Share of the answer's statements that are toxic",
            uses_judge=True,
            higher_is_better=False,
            schema=ScaleOptions,
            passes_at=0.0,
        ),
        ScorerEntry(
            "conversation-completeness",
            f"{_CONVERSATION}.completeness:create_conversation_completeness_scorer",
            "Share of the user's intentions the conversation satisfied",
            uses_judge=True,
            schema=ConversationOptions,
            conversation=True,
            passes_at=0.7,
        ),
        ScorerEntry(
            "knowledge-retention",
            f"{_CONVERSATION}.knowledge_retention:create_knowledge_retention_scorer",
            "Share of the assistant's answers that keep the facts the user gave",
            uses_judge=True,
            schema=ConversationOptions,
            conversation=True,
            passes_at=1.0,
        ),
        ScorerEntry(
            "role-adherence",
            f"{_CONVERSATION}.role_adherence:create_role_adherence_scorer",
            "Share of the assistant's answers that stay within its role",
            uses_judge=True,
            schema=RoleAdherenceOptions,
            conversation=True,
            passes_at=0.9,
        ),
        ScorerEntry(
            "conversation-relevancy",
            f"{_CONVERSATION}.relevancy:create_conversation_relevancy_scorer",
            "Share of the assistant's answers relevant to the recent turns (sliding window)",
            uses_judge=True,
            schema=ConversationRelevancyOptions,
            conversation=True,
            passes_at=0.7,
        ),
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
