"""Scorers: Mastra's scorer framework, its scorer utils and the prebuilt scorers, in Python."""

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
