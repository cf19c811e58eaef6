"""LLM judges for the judge scorers: litellm calls with structured output, pacing and a cache.

Only ``JudgeConfig`` is imported eagerly: config validation needs it, and it must not drag in
the client stack (SQLAlchemy, the scorers). litellm itself is imported only when a judge makes
its first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracescore.judge.config import JudgeConfig
from tracescore.lazy_names import lazy_names

if TYPE_CHECKING:
    from tracescore.judge.cache import VerdictCache
    from tracescore.judge.client import LiteLLMJudge
    from tracescore.judge.judges import get_judge, use_verdict_store
    from tracescore.judge.protocol import JudgeError

__all__ = [
    "JudgeConfig",
    "JudgeError",
    "LiteLLMJudge",
    "VerdictCache",
    "get_judge",
    "use_verdict_store",
]

_LAZY = {
    "VerdictCache": "tracescore.judge.cache",
    "JudgeError": "tracescore.judge.protocol",
    "LiteLLMJudge": "tracescore.judge.client",
    "get_judge": "tracescore.judge.judges",
    "use_verdict_store": "tracescore.judge.judges",
}


__getattr__ = lazy_names(globals(), _LAZY)
