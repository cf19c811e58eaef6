"""One judge object per distinct judge config, and the database their verdicts go to."""

from __future__ import annotations

from typing import Any

from tracescore.judge.cache import VerdictCache
from tracescore.judge.client import LiteLLMJudge
from tracescore.judge.config import JudgeConfig
from tracescore.judge.protocol import Judge
from tracescore.store import Database

_judges: dict[str, LiteLLMJudge] = {}
_cache: VerdictCache | None = None


def use_verdict_store(store: Database | str | None) -> None:
    """Keep verdicts of judges made from now on in this database (None: in-process only).

    The service calls it once with its own store, so every scorer's judge shares one table.
    """
    global _cache
    _cache = VerdictCache(store) if store is not None else None
    _judges.clear()


def get_judge(spec: str | JudgeConfig | dict[str, Any] | Judge) -> Judge:
    """The judge for a model string, a ``JudgeConfig`` (or its dict), or a ready ``Judge``.

    Equal configs give the same judge object, so scorers sharing a model share its concurrency
    limit, rate budget and in-process cache.
    """
    if not isinstance(spec, (str, dict, JudgeConfig)):
        return spec
    config = JudgeConfig.of(spec)
    key = config.model_dump_json()
    judge = _judges.get(key)
    if judge is None:
        global _cache
        if _cache is None:
            _cache = VerdictCache()
        judge = _judges[key] = LiteLLMJudge(config, cache=_cache if config.cache else None)
    return judge
