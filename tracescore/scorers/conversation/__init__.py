"""Conversation scorers: judges of a whole multi-turn conversation rather than one run.

DeepEval's conversational metrics define what they measure and how verdicts become a score;
the pipeline around them (steps, judge plumbing, cache, budgets, reasons) is the run scorers'.
"""

from tracescore.scorers.conversation.completeness import create_conversation_completeness_scorer
from tracescore.scorers.conversation.knowledge_retention import create_knowledge_retention_scorer
from tracescore.scorers.conversation.relevancy import create_conversation_relevancy_scorer
from tracescore.scorers.conversation.role_adherence import create_role_adherence_scorer

__all__ = [
    "create_conversation_completeness_scorer",
    "create_conversation_relevancy_scorer",
    "create_knowledge_retention_scorer",
    "create_role_adherence_scorer",
]
