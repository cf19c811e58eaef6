"""The litellm judge against the scripted judge server: real HTTP through litellm's request path."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from tests.support.judge_server import (
    JudgeServer,
    error_reply,
    hang_reply,
    json_reply,
    text_reply,
)
from tracescore.judge import (
    JudgeConfig,
    JudgeError,
    LiteLLMJudge,
    VerdictCache,
    get_judge,
)
from tracescore.judge.limiter import Limiter
from tracescore.judge.protocol import JudgeRequest


class Claims(BaseModel):
    claims: list[str]


def request(
    prompt: str = "Extract the claims.", schema: type[BaseModel] | None = Claims
) -> JudgeRequest:
    return JudgeRequest(
        prompt=prompt,
        instructions="You extract claims.",
        schema=schema,
        scorer_id="test-scorer",
        scorer_version="1",
        step="preprocess",
    )


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


def judge_for(server: JudgeServer, **settings: object) -> LiteLLMJudge:
    settings = {"backoff_base": 0.01, "timeout": 5.0, **settings}
    return LiteLLMJudge(
        JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, **settings)
    )


async def test_structured_answer_is_validated_and_costed(server: JudgeServer) -> None:
    reply = json_reply({"claims": ["The sky is blue."]})
    reply.usage = (1000, 100)
    server.script("Claims", reply)
    response = await judge_for(server).complete(request())
    assert response.output == Claims(claims=["The sky is blue."])
    assert (response.input_tokens, response.output_tokens) == (1000, 100)
    # gpt-4o-mini in litellm's bundled price map: $0.15 / M input, $0.60 / M output tokens.
    assert response.cost_usd == pytest.approx(1000 * 0.15e-6 + 100 * 0.6e-6)
    assert response.attempts == 1 and not response.cached
    sent = server.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["title"] == "Claims"
    assert sent["messages"][0] == {"role": "system", "content": "You extract claims."}
    assert "JSON Schema" in sent["messages"][1]["content"]


async def test_plain_text_step_sends_no_response_format(server: JudgeServer) -> None:
    server.script("Explain", text_reply("  Because the claims hold.  "))
    response = await judge_for(server).complete(request("Explain the score.", schema=None))
    assert response.output == "Because the claims hold."
    assert "response_format" not in server.requests[0]


async def test_429_is_retried_after_the_retry_after_delay(server: JudgeServer) -> None:
    server.script("Claims", error_reply(429, retry_after=0.4), json_reply({"claims": []}))
    started = time.perf_counter()
    response = await judge_for(server).complete(request())
    assert time.perf_counter() - started >= 0.4
    assert response.output == Claims(claims=[]) and response.attempts == 2
    assert server.count == 2


async def test_5xx_are_retried_with_backoff(server: JudgeServer) -> None:
    server.script("Claims", error_reply(503), error_reply(500), json_reply({"claims": ["x"]}))
    response = await judge_for(server).complete(request())
    assert response.output.claims == ["x"] and response.attempts == 3


async def test_retries_give_up_with_a_clear_error(server: JudgeServer) -> None:
    server.script("Claims", error_reply(503, message="overloaded"))
    with pytest.raises(JudgeError, match=r"failed after 3 attempt\(s\).*overloaded"):
        await judge_for(server, max_retries=2).complete(request())
    assert server.count == 3


async def test_client_errors_are_not_retried(server: JudgeServer) -> None:
    server.script("Claims", error_reply(401, message="bad key"))
    with pytest.raises(JudgeError, match="bad key"):
        await judge_for(server).complete(request())
    assert server.count == 1


async def test_hung_judge_times_out(server: JudgeServer) -> None:
    judge = judge_for(server, timeout=0.3, max_retries=1)
    await judge.complete(request("Warm up litellm's lazy imports.", schema=None))
    server.script("Claims", hang_reply())
    started = time.perf_counter()
    with pytest.raises(JudgeError, match=r"timeout|Timeout|timed out"):
        await asyncio.wait_for(judge.complete(request()), 60)  # a judge that hangs for good fails
    assert time.perf_counter() - started >= 0.6  # each of three attempts waited its 0.3 s
    assert server.count == 3


async def test_broken_json_is_repaired_once(server: JudgeServer) -> None:
    server.script("Claims", text_reply('{"claims": ["a",'), json_reply({"claims": ["a"]}))
    response = await judge_for(server).complete(request())
    assert response.output == Claims(claims=["a"]) and response.attempts == 2
    repair = server.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"claims": ["a",'}
    assert "not valid" in repair[-1]["content"]


async def test_fenced_json_is_accepted(server: JudgeServer) -> None:
    server.script("Claims", text_reply('Here you go:\n```json\n{"claims": ["b"]}\n```'))
    assert (await judge_for(server).complete(request())).output == Claims(claims=["b"])


async def test_json_that_stays_wrong_is_a_clear_error(server: JudgeServer) -> None:
    server.script("Claims", json_reply({"claim": "wrong key"}))
    with pytest.raises(
        JudgeError, match=r"does not match Claims, also after one repair attempt.*claims"
    ):
        await judge_for(server).complete(request())
    assert server.count == 2


async def test_json_schema_rejection_falls_back_to_json_mode_for_good() -> None:
    with JudgeServer(reject_json_schema=True) as server:
        server.script("Claims", json_reply({"claims": ["c"]}))
        judge = judge_for(server, cache=False)
        assert (await judge.complete(request())).output == Claims(claims=["c"])
        assert (await judge.complete(request("Other prompt."))).output == Claims(claims=["c"])
    kinds = [r["response_format"]["type"] for r in server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert server.requests[1]["response_format"]["schema"]["title"] == "Claims"
    assert judge.mode == "json_object"


async def test_models_without_schema_support_use_json_mode() -> None:
    judge = LiteLLMJudge(JudgeConfig(model="ollama/some-local-model"))
    assert judge.mode == "json_object"


async def test_missing_api_key_variable_is_named(server: JudgeServer) -> None:
    judge = judge_for(server, api_key_env="TRACESCORE_TEST_UNSET_KEY")
    with pytest.raises(JudgeError, match="TRACESCORE_TEST_UNSET_KEY is not set"):
        await judge.complete(request())
    assert server.count == 0


async def test_concurrency_limit_holds(server: JudgeServer) -> None:
    server.delay = 0.15
    server.script("Claims", json_reply({"claims": []}))
    judge = judge_for(server, concurrency=3, cache=False)
    started = time.perf_counter()
    await asyncio.gather(*(judge.complete(request(f"prompt {i}")) for i in range(9)))
    assert server.max_in_flight == 3
    assert time.perf_counter() - started >= 3 * 0.15


async def test_cache_serves_repeats_without_http(server: JudgeServer) -> None:
    server.script("Claims", json_reply({"claims": ["d"]}))
    judge = judge_for(server)
    first = await judge.complete(request())
    second = await judge.complete(request())
    assert server.count == 1
    assert second.cached and second.output == first.output
    assert (second.input_tokens, second.cost_usd, second.attempts) == (0, 0.0, 0)
    await judge.complete(request("A different prompt."))
    assert server.count == 2


async def test_identical_concurrent_requests_pay_once(server: JudgeServer) -> None:
    server.delay = 0.2
    server.script("Claims", json_reply({"claims": ["e"]}))
    judge = judge_for(server)
    answers = await asyncio.gather(*(judge.complete(request()) for _ in range(5)))
    assert server.count == 1
    assert all(a.output == Claims(claims=["e"]) for a in answers)


async def test_verdicts_survive_a_restart(server: JudgeServer, db_url: str) -> None:
    server.script("Claims", json_reply({"claims": ["f"]}))
    config = JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url)
    await LiteLLMJudge(config, cache=VerdictCache(db_url)).complete(request())
    assert server.count == 1
    restarted = LiteLLMJudge(config, cache=VerdictCache(db_url))
    served = await restarted.complete(request())
    assert server.count == 1
    assert served.cached and served.output == Claims(claims=["f"])
    other_model = LiteLLMJudge(
        config.model_copy(update={"model": "openai/gpt-4o"}), cache=VerdictCache(db_url)
    )
    await other_model.complete(request())
    assert server.count == 2


def test_get_judge_shares_one_judge_per_config(server: JudgeServer) -> None:
    spec = {"model": "openai/gpt-4o-mini", "api_base": server.base_url}
    assert get_judge(spec) is get_judge(JudgeConfig(**spec))
    assert get_judge(spec) is not get_judge({**spec, "concurrency": 2})
    judge = get_judge(spec)
    assert get_judge(judge) is judge


class SimulatedTime:
    """A monotonic clock that moves only when the limiter sleeps on it: pacing checked exactly."""

    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


async def test_token_budget_delays_calls_and_settles_real_usage() -> None:
    time_ = SimulatedTime()
    # Refills 1000 tokens / s.
    limiter = Limiter(concurrency=4, tokens_per_minute=60_000, clock=time_.clock, sleep=time_.sleep)
    async with limiter.lease(60_000):
        pass
    started = time_.now
    async with limiter.lease(300) as lease:
        lease.tokens = 600  # the call used more than reserved: 300 tokens of debt
    assert time_.now - started == pytest.approx(0.3)  # waited for its 300 tokens
    started = time_.now
    async with limiter.lease(300):
        pass
    assert time_.now - started == pytest.approx(0.6)  # the 300 tokens of debt, then its own 300


async def test_request_budget_paces_calls() -> None:
    time_ = SimulatedTime()
    # 10 requests / s once the burst of 600 is spent.
    limiter = Limiter(
        concurrency=100, requests_per_minute=600, clock=time_.clock, sleep=time_.sleep
    )
    for _ in range(600):
        async with limiter.lease(0):
            pass
    assert time_.now == 1000.0  # the burst waits for nothing
    for _ in range(3):
        async with limiter.lease(0):
            pass
    assert time_.now - 1000.0 == pytest.approx(0.3)


def test_limiter_is_shared_across_event_loops() -> None:
    limiter = Limiter(concurrency=2)
    peak, lock = [0], threading.Lock()

    async def hold() -> None:
        async with limiter.lease(0):
            with lock:
                peak[0] = max(peak[0], limiter.in_flight)
            await asyncio.sleep(0.05)

    async def three() -> None:
        await asyncio.gather(*(hold() for _ in range(3)))

    def run() -> None:
        asyncio.run(asyncio.wait_for(three(), 10))

    threads = [threading.Thread(target=run) for _ in range(3)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak[0] == 2 and limiter.in_flight == 0
    assert time.perf_counter() - started >= 9 * 0.05 / 2
    assert limiter.slot_seconds >= 9 * 0.05  # nine 50 ms holds


FIRST_CALL_IN_A_FRESH_PROCESS = """
import asyncio, faulthandler, json, socket, sys, time
faulthandler.dump_traceback_later(90, exit=True)  # a hang: every thread's stack, then exit 1
import tracescore.config, tracescore.judge, tracescore.scorers
imported_early = "litellm" in sys.modules
attempts = []
connect, getaddrinfo = socket.socket.connect, socket.getaddrinfo
def loopback_only(address):
    if address not in ("127.0.0.1", "::1"):
        attempts.append(address)
        raise OSError("network disabled in this test")
socket.socket.connect = lambda self, address: loopback_only(address[0]) or connect(self, address)
socket.getaddrinfo = lambda host, *rest, **kw: loopback_only(host) or getaddrinfo(host, *rest, **kw)
from tracescore.judge import JudgeConfig, LiteLLMJudge
from tracescore.judge.protocol import JudgeRequest

async def main():
    judge = LiteLLMJudge(JudgeConfig(model="openai/gpt-4o-mini", api_base=sys.argv[1], cache=False))
    request = JudgeRequest(prompt="hello", instructions=None, schema=None, scorer_id="s",
                           scorer_version="1", step="generate_reason")
    gaps, done = [], asyncio.Event()
    async def tick():
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.01)
            gaps.append(time.perf_counter() - last)
            last = time.perf_counter()
    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)  # the ticker is running before the call starts
    started = time.perf_counter()
    answer = await judge.complete(request)
    done.set()
    await ticker
    print(json.dumps({"imported_early": imported_early, "attempts": attempts, "answer": answer.output,
                      "first_call_s": time.perf_counter() - started, "max_gap_s": max(gaps)}))

asyncio.run(main())
"""


def test_first_judge_call_imports_litellm_off_the_loop_without_network(server: JudgeServer) -> None:
    """In a fresh process: litellm is not imported with the package, its import (seconds) and
    first request run on the judge loop while the caller's loop keeps ticking, and nothing but
    the loopback judge is contacted (the price map is the bundled one)."""
    server.script("hello", text_reply("hi"))
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    out = subprocess.run(
        [sys.executable, "-c", FIRST_CALL_IN_A_FRESH_PROCESS, server.base_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts["imported_early"] is False and facts["attempts"] == [] and facts["answer"] == "hi"
    # On the caller's loop the import would stall it for the whole first call.
    assert facts["max_gap_s"] < facts["first_call_s"] / 4, facts
