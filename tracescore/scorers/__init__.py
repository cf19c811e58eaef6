"""Scorers: Mastra's scorer framework, its scorer utils and the prebuilt scorers, in Python."""

from tracescore.scorers.base import (
    Judge,
    JudgeCall,
    JudgeRequest,
    JudgeResponse,
    NotScorable,
    PromptStep,
    ScoreResult,
    Scorer,
    ScorerRun,
    StepContext,
    StepTrace,
    create_scorer,
    measure,
    not_scorable,
    resolve_judge,
    scorer,
)

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
    "create_scorer",
    "measure",
    "not_scorable",
    "resolve_judge",
    "scorer",
]
