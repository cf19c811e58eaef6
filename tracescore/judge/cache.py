"""The verdict cache: an in-process LRU in front of the ``judge_verdicts`` table.

The LRU makes a repeat hit cost microseconds; the table makes verdicts outlive the process and
serves every instance on the same database. A served verdict reports zero tokens and zero cost
(nothing was paid for it) and ``cached=True``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from tracescore.judge.config import JudgeConfig
from tracescore.judge.protocol import JudgeRequest, JudgeResponse
from tracescore.judge.structured import parse_output, schema_json
from tracescore.store import Database
from tracescore.store.judge_cache import JudgeVerdict, load_verdict, save_verdict, verdict_database

ANSWER_SETTINGS = frozenset(
    ("model", "api_base", "temperature", "max_tokens", "response_format", "extra")
)
"""The judge settings that can change what it answers: the model and the server it is reached
at, sampling, the answer's length limit, how JSON is asked for, and the extra litellm arguments
(``top_p``, ``seed``, a reasoning effort...). Timeouts, retries, pacing and the key's variable
only decide whether an answer comes, not which."""


@dataclass(frozen=True)
class AnswerSettings:
    """A judge's :data:`ANSWER_SETTINGS` as stable text, worked out once per judge (a cache hit
    computes the key, and dumping the config each time doubled its ~12 µs)."""

    text: str

    @classmethod
    def of(cls, judge: JudgeConfig | str) -> AnswerSettings:
        settings = JudgeConfig.of(judge).model_dump(mode="json", include=set(ANSWER_SETTINGS))
        return cls(json.dumps(settings, sort_keys=True, ensure_ascii=False, default=str))


def verdict_key(request: JudgeRequest, judge: JudgeConfig | str | AnswerSettings) -> str:
    """Digest of everything that decides a judge's answer: the request and the judge's answer
    settings (a model string stands for that model with default settings)."""
    settings = judge if isinstance(judge, AnswerSettings) else AnswerSettings.of(judge)
    schema = schema_json(request.schema) if request.schema is not None else None
    parts = [
        request.scorer_id,
        request.scorer_version,
        request.instructions,
        request.prompt,
        schema,
        settings.text,
    ]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


class VerdictCache:
    def __init__(self, store: Database | str | None = None, *, lru_size: int = 4096) -> None:
        """``store``: a store's database (its schema is the store's business), or the URL of a
        database of the cache's own, whose schema is brought up to date here; None: in-process."""
        self.lru_size = lru_size
        self._lru: OrderedDict[str, JudgeResponse] = OrderedDict()
        self._lock = threading.Lock()
        self.engine = verdict_database(store) if isinstance(store, str) else store

    def get_local(self, key: str) -> JudgeResponse | None:
        """The in-process hit, if any (no I/O)."""
        started = time.perf_counter()
        with self._lock:
            hit = self._lru.get(key)
            if hit is not None:
                self._lru.move_to_end(key)
        return None if hit is None else _served(hit, started)

    async def get(self, request: JudgeRequest, key: str) -> JudgeResponse | None:
        hit = self.get_local(key)
        engine = self.engine
        if hit is not None or engine is None:
            return hit
        started = time.perf_counter()
        row = await asyncio.to_thread(load_verdict, engine, key)
        if row is None:
            return None
        try:
            output = parse_output(row.text, request.schema)
        except ValueError:  # the step's schema changed shape without a version bump
            return None
        stored = JudgeResponse(
            output=output,
            text=row.text,
            model=row.model,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            cost_usd=row.cost_usd,
            attempts=0,
            duration_ms=0.0,
            cached=False,
        )
        self._remember(key, stored)
        return _served(stored, started)

    async def put(self, request: JudgeRequest, key: str, response: JudgeResponse) -> None:
        self._remember(key, response)
        if (engine := self.engine) is not None:
            row = JudgeVerdict(
                key=key,
                scorer_id=request.scorer_id,
                scorer_version=request.scorer_version,
                step=request.step,
                model=response.model,
                text=response.text,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
                cost_usd=response.cost_usd,
            )
            await asyncio.to_thread(save_verdict, engine, row)

    def _remember(self, key: str, response: JudgeResponse) -> None:
        with self._lock:
            self._lru[key] = response
            self._lru.move_to_end(key)
            while len(self._lru) > self.lru_size:
                self._lru.popitem(last=False)


def _served(response: JudgeResponse, started: float) -> JudgeResponse:
    return dataclasses.replace(
        response,
        cached=True,
        input_tokens=0,
        output_tokens=0,
        cost_usd=0.0,
        attempts=0,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
