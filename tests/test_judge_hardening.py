"""Issue 32: the judge fed and read robustly — cache keys, tolerant JSON, failed calls' spend,
verdict-count repairs — against the scripted judge server over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from tests.judge_server import JudgeServer, json_reply
from tracescore.judge import JudgeConfig, LiteLLMJudge, VerdictCache
from tracescore.judge.protocol import JudgeRequest


class Claims(BaseModel):
    claims: list[str]


def request(prompt: str = "Extract the claims.") -> JudgeRequest:
    return JudgeRequest(prompt=prompt, instructions="You extract claims.", schema=Claims,
                        scorer_id="test-scorer", scorer_version="1", step="preprocess")


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


@pytest.mark.parametrize("change", [
    {"temperature": 0.7},
    {"extra": {"top_p": 0.5}},
    {"extra": {"seed": 7}},
    {"max_tokens": 50},
    {"response_format": "json_object"},
    {"api_base": "other"},
])
async def test_every_setting_that_changes_the_answer_changes_the_cache_key(
    server: JudgeServer, change: dict[str, object]
) -> None:
    """Issue 32 (6): temperature, api_base and extra were not in the key, so changing them kept
    serving the old verdicts."""
    server.script("Claims", json_reply({"claims": ["a"]}))
    cache = VerdictCache()
    base = JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, timeout=5)
    await LiteLLMJudge(base, cache=cache).complete(request())
    if change.get("api_base") == "other":  # the same scripted judge under another address
        change = {"api_base": server.base_url.replace("127.0.0.1", "localhost")}
    changed = LiteLLMJudge(base.model_copy(update=change), cache=cache)
    answer = await changed.complete(request())
    assert not answer.cached and server.count == 2
    # Settings that cannot change the answer keep serving it.
    paced = LiteLLMJudge(base.model_copy(update={"timeout": 9.0, "max_retries": 1}), cache=cache)
    assert (await paced.complete(request())).cached and server.count == 2
