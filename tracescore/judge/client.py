"""The litellm-backed judge: one ``complete()`` per scorer step, paced, retried, cached, costed.

The retry loop is ours, not litellm's (``num_retries``) nor the OpenAI SDK's (``max_retries``,
both set to 0). litellm 1.106 does honour ``Retry-After`` (a 0.2 s and a 6 s header were waited
out exactly against the scripted judge), but its loop sits inside one ``acompletion`` call: a
retry waiting out a 429 would keep holding a concurrency slot, the per-call hard timeout would
cut retries short (or have to be as long as all of them), and the attempts would be invisible.
Here every HTTP attempt takes its own slot and timeout and is counted; a ``Retry-After`` (or
``retry-after-ms``) header sets the wait when present, and otherwise the wait is exponential with
full jitter so many scorers hitting one 429 do not retry in lockstep.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import threading
import time
from dataclasses import dataclass
from functools import cache, cached_property
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ValidationError

from tracescore.judge.cache import AnswerSettings, VerdictCache, verdict_key
from tracescore.judge.config import JudgeConfig
from tracescore.judge.limiter import Limiter
from tracescore.judge.loop import on_judge_loop
from tracescore.judge.protocol import (
    DEFAULT_INPUT_TOKENS,
    Budget,
    JudgeError,
    JudgeRequest,
    JudgeResponse,
)
from tracescore.judge.structured import (
    Mode,
    parse_output,
    request_messages,
    response_format,
)

_RESERVED_OUTPUT_TOKENS = 256
_ANSWER_ROOM = 4096
"""Tokens of the window kept for the answer when ``max_tokens`` is not set."""
_COUNTED_SLICE = 20_000
"""Characters tokenized at a time: litellm's counter is linear on slices of this size, while a
700,000-character text in one call took 0.4-5.4 s depending on its content."""
_COLD_START_GRACE = 30.0
"""Extra seconds for the process's first request: litellm imports ~450 more modules then (2-4 s
on an idle machine), which must not pass for a hung judge. The HTTP read timeout, which litellm
applies on its own, still catches a server that hangs on that first request."""
_warm = threading.Event()


@cache
def litellm() -> ModuleType:
    """Import litellm on first use: it costs seconds and ~170 MB, and must not phone home."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm as module

    module.suppress_debug_info = True
    module.telemetry = False
    return module


@dataclass
class _Spend:
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    repairs: int = 0


class LiteLLMJudge:
    """A ``Judge`` for any model litellm reaches (see ``JudgeConfig``)."""

    def __init__(self, config: JudgeConfig, *, cache: VerdictCache | None = None) -> None:
        self.config = config
        self.model = config.model
        self.cache = cache if cache is not None else (VerdictCache() if config.cache else None)
        self.limiter = Limiter(
            config.concurrency, config.requests_per_minute, config.tokens_per_minute
        )
        self._mode: Mode | None = (
            None if config.response_format == "auto" else config.response_format
        )
        self._pending: dict[str, asyncio.Future[None]] = {}
        self._settings = AnswerSettings.of(config)

    @cached_property
    def budget(self) -> Budget:
        """The input budget of one request: ``max_input_tokens``, else the model's window less
        the answer's room; text is counted with litellm's tokenizer for the model."""
        tokens = self.config.max_input_tokens
        if tokens is None:
            window = _input_window(self.model)
            answer = self.config.max_tokens or _ANSWER_ROOM
            tokens = (
                window - answer
                if window is not None and window > 2 * answer
                else DEFAULT_INPUT_TOKENS
            )
        return Budget(tokens=tokens, count=self.count_tokens)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this judge's model (litellm's ``token_counter``, by slices: the
        sum is at least the whole text's count, so a fit is never overstated)."""
        counter = litellm().token_counter
        return sum(
            counter(model=self.model, text=text[start : start + _COUNTED_SLICE])
            for start in range(0, len(text), _COUNTED_SLICE)
        )

    @property
    def mode(self) -> Mode:
        """How JSON is requested (``auto`` resolved; json_object after a json_schema 400)."""
        if self._mode is None:
            supported = self.config.api_base is not None or _supports_schema(self.model)
            self._mode = "json_schema" if supported else "json_object"
        return self._mode

    async def complete(self, request: JudgeRequest) -> JudgeResponse:
        """The judge's answer: from the in-process cache on the caller's loop when it has it,
        otherwise from the database cache or the model, on the judge loop."""
        key = None
        if self.cache is not None:
            key = verdict_key(request, self._settings)
            if (hit := self.cache.get_local(key)) is not None:
                return hit
        return await on_judge_loop(self._complete_once(request, key))

    async def _complete_once(self, request: JudgeRequest, key: str | None) -> JudgeResponse:
        """Serve a cached verdict, or ask the model once however many ask at the same time."""
        if self.cache is None or key is None:
            return await self._complete(request)
        hit = await self.cache.get(request, key)
        if hit is not None:
            return hit
        pending = self._pending.get(key)
        if pending is not None:  # the same work is in flight: wait for it, then read its verdict
            await asyncio.wait([pending])
            return await self.cache.get(request, key) or await self._complete(request)
        self._pending[key] = finished = asyncio.get_running_loop().create_future()
        try:
            response = await self._complete(request)
            await self.cache.put(request, key, response)
            return response
        finally:
            del self._pending[key]
            finished.set_result(None)

    async def _complete(self, request: JudgeRequest) -> JudgeResponse:
        started = time.perf_counter()
        spend = _Spend()
        text = ""
        try:
            messages = request_messages(request.prompt, request.instructions, request.schema)
            text = await self._call(messages, request.schema, spend)
            output, problem = _read(text, request)
            if problem is not None:
                spend.repairs += 1
                messages += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": _repair_prompt(problem.detail)},
                ]
                text = await self._call(messages, request.schema, spend)
                output, problem = _read(text, request)
                if problem is not None:
                    raise JudgeError(
                        f"judge {self.model} answered the {request.step} step with {problem.what}, "
                        f"also after one repair attempt: {problem.detail}; last answer: {text[:300]!r}"
                    )
        except JudgeError as failed:
            failed.spent = self._response(None, text, spend, started)
            raise
        return self._response(output, text, spend, started)

    def _response(self, output: Any, text: str, spend: _Spend, started: float) -> JudgeResponse:
        return JudgeResponse(
            output=output,
            text=text,
            model=self.model,
            input_tokens=spend.input_tokens,
            output_tokens=spend.output_tokens,
            cost_usd=spend.cost_usd,
            attempts=spend.attempts,
            duration_ms=(time.perf_counter() - started) * 1000,
            cached=False,
            repairs=spend.repairs,
        )

    async def _call(
        self, messages: list[dict[str, str]], schema: type[BaseModel] | None, spend: _Spend
    ) -> str:
        """One answer from the judge, retrying transient failures; returns the message text."""
        config = self.config
        estimate = sum(len(m["content"]) for m in messages) // 4 + _RESERVED_OUTPUT_TOKENS
        failures = 0
        acompletion = litellm().acompletion  # imported before any timeout starts ticking
        while True:
            kwargs = self._arguments(messages, schema)
            spend.attempts += 1
            try:
                async with self.limiter.lease(estimate) as lease:
                    grace = 0.0 if _warm.is_set() else _COLD_START_GRACE
                    try:
                        async with asyncio.timeout(config.timeout + grace):
                            response = await acompletion(**kwargs)
                    finally:
                        _warm.set()
                    usage = getattr(response, "usage", None)
                    lease.tokens = getattr(usage, "total_tokens", None)
            except Exception as exc:
                if self._rejects_json_schema(exc, kwargs):
                    self._mode = "json_object"
                    continue
                if not _transient(exc) or failures >= config.max_retries:
                    raise JudgeError(
                        f"judge {self.model} failed after {spend.attempts} attempt(s): {_describe(exc, config)}"
                    ) from exc
                failures += 1
                await asyncio.sleep(self._backoff(failures, exc))
                continue
            self._record(response, spend)
            return response.choices[0].message.content or ""

    def _arguments(
        self, messages: list[dict[str, str]], schema: type[BaseModel] | None
    ) -> dict[str, Any]:
        config = self.config
        kwargs: dict[str, Any] = {
            "model": config.model,
            "messages": messages,
            "temperature": config.temperature,
            "timeout": config.timeout,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
            **config.extra,
        }
        if config.max_tokens is not None:
            kwargs["max_tokens"] = config.max_tokens
        if config.api_base is not None:
            kwargs["api_base"] = config.api_base
        api_key = self._api_key()
        if api_key is not None:
            kwargs["api_key"] = api_key
        if schema is not None:
            fmt = response_format(schema, self.mode, self_hosted=config.api_base is not None)
            if fmt is not None:
                kwargs["response_format"] = fmt
        return kwargs

    def _api_key(self) -> str | None:
        return api_key(self.config)

    def _rejects_json_schema(self, exc: Exception, kwargs: dict[str, Any]) -> bool:
        """A 400 about ``json_schema`` from a server that only does JSON mode (llama.cpp)."""
        sent = (kwargs.get("response_format") or {}).get("type")
        return (
            sent == "json_schema"
            and self.config.response_format == "auto"
            and getattr(exc, "status_code", None) == 400
            and "json_schema" in str(exc)
        )

    def _backoff(self, failures: int, exc: Exception) -> float:
        ceiling = self.config.backoff_max
        retry_after = _retry_after(exc)
        if retry_after is not None:
            return min(retry_after, ceiling)
        return random.uniform(0, min(ceiling, self.config.backoff_base * 2 ** (failures - 1)))

    def _record(self, response: Any, spend: _Spend) -> None:
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", 0) or 0
        completion_tokens = getattr(usage, "completion_tokens", 0) or 0
        spend.input_tokens += prompt_tokens
        spend.output_tokens += completion_tokens
        # litellm prices every response from its bundled map (offline); models it has no price
        # for (self-hosted ones) cost 0.
        cost = getattr(response, "_hidden_params", {}).get("response_cost")
        spend.cost_usd += float(cost) if isinstance(cost, (int, float)) else 0.0


def api_key(config: JudgeConfig) -> str | None:
    """The key litellm is called with for ``config`` (a judge's, or an embedding model's): read
    from ``api_key_env`` at call time, never stored; JudgeError when that variable is unset."""
    name = config.api_key_env
    if name:
        key = os.environ.get(name)
        if not key:
            raise JudgeError(f"judge {config.model}: environment variable {name} is not set")
        return key
    if (
        config.api_base is not None
        and config.model.startswith("openai/")
        and not os.environ.get("OPENAI_API_KEY")
    ):
        return "unused"  # a keyless OpenAI-compatible server: the OpenAI SDK insists on a key
    return None


def _input_window(model: str) -> int | None:
    """The model's input window in tokens, when litellm's bundled model map has it."""
    try:
        info = litellm().get_model_info(model=model)
    except Exception:  # noqa: BLE001 - litellm raises for models it has never heard of
        return None
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if isinstance(window, int) and window > 0 else None


def _supports_schema(model: str) -> bool:
    try:
        return bool(litellm().supports_response_schema(model=model))
    except Exception:  # noqa: BLE001 - litellm raises for models it has never heard of
        return False


def _transient(exc: BaseException) -> bool:
    """429, 408, 5xx, timeouts and dropped connections are worth another attempt."""
    if isinstance(exc, TimeoutError):
        return True
    if isinstance(exc, litellm().APIConnectionError):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in (408, 429) or status >= 500)


def _retry_after(exc: Exception) -> float | None:
    """Seconds from ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date), if sent."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


def _describe(exc: Exception, config: JudgeConfig) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within the {config.timeout:g} s timeout"
    return str(exc) or type(exc).__name__


def _brief(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors()[:5]
    )


@dataclass(frozen=True)
class _Problem:
    what: str
    detail: str


def _read(text: str, request: JudgeRequest) -> tuple[Any, _Problem | None]:
    """The validated answer and None, or None and what is wrong with it."""
    try:
        output = parse_output(text, request.schema)
    except ValidationError as exc:
        return None, _Problem(f"JSON that does not match {exc.title}", _brief(exc))
    problem = request.check(output) if request.check is not None else None
    if problem is not None:
        return None, _Problem("an answer that does not fit the task", problem)
    return output, None


def _repair_prompt(problem: str) -> str:
    return (
        f"That answer is not valid: {problem}. Reply again with the corrected JSON object "
        "only, following the schema and the task given above."
    )
