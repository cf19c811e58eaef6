"""Scorers: Mastra's scorer framework, its scorer utils and the prebuilt scorers, in Python.

The names below load on first use (:func:`__getattr__`), not when the package is imported:
every import of a submodule (``tracescore.scorers.registry``, which config validation and the
service need) runs this file first, and importing each prebuilt scorer here made every process
load them all (numpy and VADER for ``tone``, the LLM scorers' prompts), used or not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracescore.lazy_names import lazy_names

if TYPE_CHECKING:
    from tracescore.judge.protocol import Judge, JudgeRequest, JudgeResponse
    from tracescore.scorers.base import Scorer, create_scorer, measure, scorer
    from tracescore.scorers.code.completeness import create_completeness_scorer
    from tracescore.scorers.code.content_similarity import create_content_similarity_scorer
    from tracescore.scorers.code.keyword_coverage import create_keyword_coverage_scorer
    from tracescore.scorers.code.textual_difference import create_textual_difference_scorer
    from tracescore.scorers.code.tone import create_tone_scorer
    from tracescore.scorers.code.tool_call_accuracy import create_tool_call_accuracy_scorer_code
    from tracescore.scorers.conversation import (
        create_conversation_completeness_scorer,
        create_conversation_relevancy_scorer,
        create_knowledge_retention_scorer,
        create_role_adherence_scorer,
    )
    from tracescore.scorers.judging import resolve_judge
    from tracescore.scorers.llm import (
        create_answer_relevancy_scorer,
        create_answer_similarity_scorer,
        create_bias_scorer,
        create_context_precision_scorer,
        create_context_relevance_scorer,
        create_faithfulness_scorer,
        create_hallucination_scorer,
        create_noise_sensitivity_scorer,
        create_prompt_alignment_scorer,
        create_tool_call_accuracy_scorer_llm,
        create_toxicity_scorer,
    )
    from tracescore.scorers.results import JudgeCall, ScoreResult, StepTrace
    from tracescore.scorers.scorer_run import ScorerRun
    from tracescore.scorers.steps import PromptStep, StepContext
    from tracescore.scorers.unscorable import NotScorable, not_scorable

_WHERE = {
    "Judge": "tracescore.judge.protocol",
    "JudgeCall": "tracescore.scorers.results",
    "JudgeRequest": "tracescore.judge.protocol",
    "JudgeResponse": "tracescore.judge.protocol",
    "NotScorable": "tracescore.scorers.unscorable",
    "PromptStep": "tracescore.scorers.steps",
    "ScoreResult": "tracescore.scorers.results",
    "Scorer": "tracescore.scorers.base",
    "ScorerRun": "tracescore.scorers.scorer_run",
    "StepContext": "tracescore.scorers.steps",
    "StepTrace": "tracescore.scorers.results",
    "create_answer_relevancy_scorer": "tracescore.scorers.llm",
    "create_answer_similarity_scorer": "tracescore.scorers.llm",
    "create_bias_scorer": "tracescore.scorers.llm",
    "create_completeness_scorer": "tracescore.scorers.code.completeness",
    "create_content_similarity_scorer": "tracescore.scorers.code.content_similarity",
    "create_context_precision_scorer": "tracescore.scorers.llm",
    "create_context_relevance_scorer": "tracescore.scorers.llm",
    "create_conversation_completeness_scorer": "tracescore.scorers.conversation",
    "create_conversation_relevancy_scorer": "tracescore.scorers.conversation",
    "create_faithfulness_scorer": "tracescore.scorers.llm",
    "create_hallucination_scorer": "tracescore.scorers.llm",
    "create_keyword_coverage_scorer": "tracescore.scorers.code.keyword_coverage",
    "create_knowledge_retention_scorer": "tracescore.scorers.conversation",
    "create_noise_sensitivity_scorer": "tracescore.scorers.llm",
    "create_prompt_alignment_scorer": "tracescore.scorers.llm",
    "create_role_adherence_scorer": "tracescore.scorers.conversation",
    "create_scorer": "tracescore.scorers.base",
    "create_textual_difference_scorer": "tracescore.scorers.code.textual_difference",
    "create_tone_scorer": "tracescore.scorers.code.tone",
    "create_tool_call_accuracy_scorer_code": "tracescore.scorers.code.tool_call_accuracy",
    "create_tool_call_accuracy_scorer_llm": "tracescore.scorers.llm",
    "create_toxicity_scorer": "tracescore.scorers.llm",
    "measure": "tracescore.scorers.base",
    "not_scorable": "tracescore.scorers.unscorable",
    "resolve_judge": "tracescore.scorers.judging",
    "scorer": "tracescore.scorers.base",
}
"""The module each public name comes from."""


__getattr__ = lazy_names(globals(), _WHERE)

__all__ = [
    "Judge",
    "JudgeCall",
    "JudgeRequest",
    "JudgeResponse",
    "NotScorable",
    "PromptStep",
    "ScoreResult",
    "Scorer",
    "ScorerRun",
    "StepContext",
    "StepTrace",
    "create_answer_relevancy_scorer",
    "create_answer_similarity_scorer",
    "create_bias_scorer",
    "create_completeness_scorer",
    "create_content_similarity_scorer",
    "create_context_precision_scorer",
    "create_context_relevance_scorer",
    "create_conversation_completeness_scorer",
    "create_conversation_relevancy_scorer",
    "create_faithfulness_scorer",
    "create_hallucination_scorer",
    "create_keyword_coverage_scorer",
    "create_knowledge_retention_scorer",
    "create_noise_sensitivity_scorer",
    "create_prompt_alignment_scorer",
    "create_role_adherence_scorer",
    "create_scorer",
    "create_textual_difference_scorer",
    "create_tone_scorer",
    "create_tool_call_accuracy_scorer_code",
    "create_tool_call_accuracy_scorer_llm",
    "create_toxicity_scorer",
    "measure",
    "not_scorable",
    "resolve_judge",
    "scorer",
]
