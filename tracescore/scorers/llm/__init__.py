"""The judge scorers: Mastra's LLM scorers, judged over the whole run (see :mod:`.run_text`)."""

from tracescore.scorers.llm.answer_relevancy import create_answer_relevancy_scorer
from tracescore.scorers.llm.answer_similarity import create_answer_similarity_scorer
from tracescore.scorers.llm.bias import create_bias_scorer
from tracescore.scorers.llm.context_precision import create_context_precision_scorer
from tracescore.scorers.llm.context_relevance import (
    ContextRelevancePenalties,
    create_context_relevance_scorer,
)
from tracescore.scorers.llm.faithfulness import create_faithfulness_scorer
from tracescore.scorers.llm.hallucination import create_hallucination_scorer
from tracescore.scorers.llm.noise_sensitivity import (
    NoiseScoring,
    create_noise_sensitivity_scorer,
)
from tracescore.scorers.llm.prompt_alignment import create_prompt_alignment_scorer
from tracescore.scorers.llm.tool_call_accuracy import (
    create_tool_call_accuracy_scorer_llm,
)
from tracescore.scorers.llm.toxicity import create_toxicity_scorer

__all__ = [
    "ContextRelevancePenalties",
    "NoiseScoring",
    "create_answer_relevancy_scorer",
    "create_answer_similarity_scorer",
    "create_bias_scorer",
    "create_context_precision_scorer",
    "create_context_relevance_scorer",
    "create_faithfulness_scorer",
    "create_hallucination_scorer",
    "create_noise_sensitivity_scorer",
    "create_prompt_alignment_scorer",
    "create_tool_call_accuracy_scorer_llm",
    "create_toxicity_scorer",
]
